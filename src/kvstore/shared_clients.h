// SharedClients: the clients a process's kv_store handles share. An engine
// may open a handle per save or restore; without sharing, each handle made
// its own client, which asks every server its identity and opens new
// connections on its first batch: about 1.5 ms of a 6 MiB save on
// loopback, paid again on every open. A handle opened with the same servers
// and settings as one before it takes the client that one used,
// connections and all, and the client stays kept after the last handle on
// it closes, for the next open.
//
// A kept client is handed out only while it sees every server "up" (or
// "draining" or "busy": it is reaching them). One that sees a server down
// or not reached yet is replaced by a new client, so a fresh handle after
// an outage connects at once, as an unshared one would, instead of waiting
// out the kept client's back-off; handles already on the old client keep it.
//
// A client is only ever handed out in the process that made it. A child
// forked after handles closed inherits the kept clients but not their
// threads, and their sockets are the parent's: the child makes its own, and
// leaves the inherited ones alone (never used, never destroyed, as that
// would wait on threads it does not have).
//
// At most `capacity` clients are kept (the least recently handed out of
// those no handle holds gives way to a new one; when every kept client is
// held, the new one is not kept). Thread-safe: one mutex guards the list;
// clients are made outside it.
#ifndef MEMKV_KVSTORE_SHARED_CLIENTS_H_
#define MEMKV_KVSTORE_SHARED_CLIENTS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <sys/types.h>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "memkv/client.h"
#include "memkv/status.h"

namespace memkv::kvstore {

class SharedClients {
 public:
  using Make = std::function<Result<std::unique_ptr<Client>>()>;

  SharedClients() = default;
  ~SharedClients();
  SharedClients(const SharedClients&) = delete;
  SharedClients& operator=(const SharedClients&) = delete;

  // The client kept under `key` when it reaches its servers; otherwise one
  // `make` creates now, kept under `key` as the header says (capacity 0:
  // never kept). `key` names everything the client was made from.
  Result<std::shared_ptr<Client>> Get(const std::string& key, size_t capacity, const Make& make);
  // How many clients this process made are kept now.
  size_t kept() const;

  // The process's list, which every handle opened through the C table uses.
  // Destroyed when the plugin is unloaded or the process exits: the kept
  // clients no handle holds are closed then.
  static SharedClients& OfProcess();

 private:
  struct Kept {
    std::string key;
    std::shared_ptr<Client> client;
    uint64_t last_use = 0;
    pid_t made_in = 0;  // the process that made it
  };

  // Forgets the clients another process made (this one is its fork child).
  void LeaveInheritedLocked() MEMKV_REQUIRES(mu_);

  // Keeps `client` under `key` (replacing what is kept under it), making
  // room as the header says; returns the client it displaced, if any.
  std::shared_ptr<Client> KeepLocked(const std::string& key, const std::shared_ptr<Client>& client, size_t capacity)
      MEMKV_REQUIRES(mu_);

  mutable Mutex mu_;
  std::vector<Kept> kept_ MEMKV_GUARDED_BY(mu_);
  uint64_t uses_ MEMKV_GUARDED_BY(mu_) = 0;
};

// Whether `client` reaches every server it knows (ServerView::state "up",
// "draining" or "busy"); false for a client that knows none.
bool ReachesItsServers(const Client& client);

}  // namespace memkv::kvstore

#endif  // MEMKV_KVSTORE_SHARED_CLIENTS_H_
