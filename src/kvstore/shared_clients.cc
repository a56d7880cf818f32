#include "kvstore/shared_clients.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

namespace memkv::kvstore {

bool ReachesItsServers(const Client& client) {
  const std::vector<ServerView> servers = client.Servers();
  if (servers.empty()) return false;
  return std::none_of(servers.begin(), servers.end(),
                      [](const ServerView& s) { return s.state == "down" || s.state == "pending"; });
}

Result<std::shared_ptr<Client>> SharedClients::Get(const std::string& key, size_t capacity, const Make& make) {
  if (capacity > 0) {
    MutexLock lock(mu_);
    LeaveInheritedLocked();
    for (Kept& k : kept_) {
      if (k.key == key && ReachesItsServers(*k.client)) {
        k.last_use = ++uses_;
        return k.client;
      }
    }
  }
  // Made outside the lock: Create asks the servers their identity, which
  // must not hold up the opens of other settings.
  MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<Client> made, make());
  std::shared_ptr<Client> client(std::move(made));
  // The client the new one displaces is destroyed (when no handle holds
  // it) after the lock is released: a client reports to its servers as it
  // goes.
  std::shared_ptr<Client> displaced;
  if (capacity > 0) {
    MutexLock lock(mu_);
    LeaveInheritedLocked();
    displaced = KeepLocked(key, client, capacity);
  }
  return client;
}

std::shared_ptr<Client> SharedClients::KeepLocked(const std::string& key, const std::shared_ptr<Client>& client,
                                                  size_t capacity) {
  // The one kept under `key` (which did not reach its servers, or another
  // thread's made meanwhile) gives way to the newer.
  auto it = std::find_if(kept_.begin(), kept_.end(), [&](const Kept& k) { return k.key == key; });
  if (it == kept_.end() && kept_.size() >= capacity) {
    // Room: the least recently handed out of those no handle holds.
    it = kept_.end();
    for (auto k = kept_.begin(); k != kept_.end(); ++k) {
      if (k->client.use_count() == 1 && (it == kept_.end() || k->last_use < it->last_use)) it = k;
    }
    if (it == kept_.end()) return nullptr;  // every kept client is held: this one is not kept
  }
  if (it == kept_.end()) it = kept_.emplace(kept_.end());
  std::shared_ptr<Client> displaced = std::exchange(it->client, client);
  it->key = key;
  it->last_use = ++uses_;
  it->made_in = ::getpid();
  return displaced;
}

void SharedClients::LeaveInheritedLocked() {
  const pid_t self = ::getpid();
  auto inherited = std::partition(kept_.begin(), kept_.end(), [&](const Kept& k) { return k.made_in == self; });
  if (inherited == kept_.end()) return;
  // Deliberately never destroyed: their threads are the parent's.
  static auto* const left = new std::vector<std::shared_ptr<Client>>();
  for (auto it = inherited; it != kept_.end(); ++it) left->push_back(std::move(it->client));
  kept_.erase(inherited, kept_.end());
}

SharedClients::~SharedClients() {
  MutexLock lock(mu_);
  LeaveInheritedLocked();
  // The kept clients this process made close here, after the lock is
  // released.
  std::vector<Kept> closing = std::move(kept_);
  lock.Unlock();
}

size_t SharedClients::kept() const {
  const pid_t self = ::getpid();
  MutexLock lock(mu_);
  return static_cast<size_t>(
      std::count_if(kept_.begin(), kept_.end(), [&](const Kept& k) { return k.made_in == self; }));
}

SharedClients& SharedClients::OfProcess() {
  static SharedClients clients;
  return clients;
}

}  // namespace memkv::kvstore
