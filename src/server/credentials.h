// Credentials: the keys that may sign a Connect, and whose each is
// (docs/tenants.md).
//
// The administrator key (network.auth_key, or the data directory's key file)
// reaches the whole key space, as a server without tenants always did. Each
// tenant has one or two keys (tenants[].key and tenants[].next_key, for
// rotation), all with the same TenantIdentity: the prefix the server puts in
// front of every key the tenant's clients name, whether it may write, and
// whether its connections may use RDMA.
//
// A Credentials is immutable once built and shared by every worker thread;
// a reload builds a new one and swaps it whole into the CredentialStore,
// whose generation number then changes. Each worker notices the change and
// re-checks its connections against the new snapshot
// (Session::RecheckCredential): one whose key is still there (the same key
// bytes, in either slot of the same tenant, or still the administrator key)
// keeps running under the tenant's new flags; one whose key is gone is
// answered AuthFailed and closed.
//
// Key material stays in these objects and in each connection's own copy; it
// is never logged.
#ifndef MEMKV_SERVER_CREDENTIALS_H_
#define MEMKV_SERVER_CREDENTIALS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/hmac.h"
#include "base/mutex.h"
#include "memkv/status.h"
#include "proto/frame.h"
#include "server/tenant_stats.h"

namespace memkv::server {

// Who a tenant's connection is and what it may do.
struct TenantIdentity {
  std::string name;     // tenants[].name
  std::string prefix;   // tenants[].prefix: in front of every key its clients name
  bool read_only = false;
  bool rdma = false;    // may its connections set up RDMA at Connect
  uint32_t max_connections = 0;  // connections open at once with its keys (0: no limit)
  TenantCounters* counters = nullptr;  // its slot in the Daemon's TenantStats; never null once built
};

// One key that may sign a Connect.
struct CredentialKey {
  Key32 key{};
  proto::KeyHint hint{};
  std::shared_ptr<const TenantIdentity> tenant;  // null: the administrator key
};

// A tenant as the config gives it: its identity (counters filled in by
// Credentials::Create) and its one or two 32-byte keys.
struct TenantCredential {
  TenantIdentity identity;
  std::vector<std::vector<uint8_t>> keys;
};

class Credentials {
 public:
  // At most this many keys are tried for a Connect whose nonce carries no
  // hint (an older client): the administrator's and two per tenant.
  static constexpr size_t kMaxTenants = 1024;

  // `admin_key`: 32 bytes. Keys must all differ (the config checks);
  // InvalidArgument otherwise, naming the tenants, never the keys. `stats`
  // gives each tenant its counters (TenantStats::Slot); null: counters are
  // slots of a TenantStats the Credentials owns (tests).
  static Result<std::shared_ptr<const Credentials>> Create(std::span<const uint8_t> admin_key,
                                                           std::vector<TenantCredential> tenants,
                                                           TenantStats* stats);

  // The keys to try for a Connect with this client nonce, best first: those
  // whose hint matches the nonce's first proto::kKeyHintSize bytes, then
  // every other (for a nonce without a hint).
  void Candidates(std::span<const uint8_t> client_nonce, std::vector<const CredentialKey*>* out) const;
  // The entry holding exactly these key bytes, or null.
  const CredentialKey* Find(std::span<const uint8_t> key) const;

  size_t tenant_count() const { return tenant_count_; }
  size_t key_count() const { return keys_.size(); }
  const std::vector<CredentialKey>& keys() const { return keys_; }

 private:
  Credentials() = default;
  static uint64_t HintWord(std::span<const uint8_t> bytes);

  std::vector<CredentialKey> keys_;             // the administrator's first
  std::unordered_multimap<uint64_t, size_t> by_hint_;
  size_t tenant_count_ = 0;
  std::unique_ptr<TenantStats> own_stats_;      // when Create was given none
};

// The current Credentials, swapped whole on a reload. Thread-safe.
class CredentialStore {
 public:
  explicit CredentialStore(std::shared_ptr<const Credentials> initial) : current_(std::move(initial)) {}

  std::shared_ptr<const Credentials> Current() const {
    MutexLock lock(mu_);
    return current_;
  }
  // Changes with every Replace; workers compare it with the one they last
  // checked their connections against.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Returns the new generation.
  uint64_t Replace(std::shared_ptr<const Credentials> next) {
    MutexLock lock(mu_);
    current_ = std::move(next);
    return generation_.fetch_add(1, std::memory_order_acq_rel) + 1;
  }

 private:
  mutable Mutex mu_;
  std::shared_ptr<const Credentials> current_ MEMKV_GUARDED_BY(mu_);
  std::atomic<uint64_t> generation_{1};
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_CREDENTIALS_H_
