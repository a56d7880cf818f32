// QuotaLedger: the bytes of each tenant's quota that puts in flight hold
// (docs/tenants.md, "Quotas"). One ledger per tier (the DRAM pool's, the
// drives'), the same code for both.
//
// A put holds its value's size against its tenant's quota before it reads
// the value's first byte, and gives it back once the value is stored (the
// store then counts it as the tenant's) or dropped: the QuotaHold it gets is
// released when it is destroyed, so every failure path gives it back. A hold
// is refused when the tenant's puts in flight would together pass its quota;
// a store making room for one put counts what the tenant's other puts hold
// (Others), so puts that run at once never store more than the quota.
//
// Tenants are ledger indexes (TenantMap order). Reset (a reload) starts new
// counters; holds taken before it are given back to the counters they came
// from and no longer count.
//
// Thread-safety: every method may be called from any thread.
#ifndef MEMKV_BASE_QUOTA_LEDGER_H_
#define MEMKV_BASE_QUOTA_LEDGER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "memkv/status.h"

namespace memkv {

namespace quota_internal {
struct Account {
  std::atomic<uint64_t> held{0};
  std::atomic<uint64_t> refusals{0};
};
}  // namespace quota_internal

class QuotaHold {
 public:
  QuotaHold() = default;
  QuotaHold(QuotaHold&& other) noexcept : counter_(std::move(other.counter_)), bytes_(other.bytes_) {
    other.bytes_ = 0;
  }
  QuotaHold& operator=(QuotaHold&& other) noexcept {
    if (this != &other) {
      Release();
      counter_ = std::move(other.counter_);
      bytes_ = other.bytes_;
      other.bytes_ = 0;
    }
    return *this;
  }
  QuotaHold(const QuotaHold&) = delete;
  QuotaHold& operator=(const QuotaHold&) = delete;
  ~QuotaHold() { Release(); }

  uint64_t bytes() const { return bytes_; }
  // Gives the bytes back now (the value is stored, or dropped).
  void Release() {
    if (counter_ != nullptr) counter_->held.fetch_sub(bytes_, std::memory_order_acq_rel);
    counter_.reset();
    bytes_ = 0;
  }

 private:
  friend class QuotaLedger;
  std::shared_ptr<quota_internal::Account> counter_;
  uint64_t bytes_ = 0;
};

class QuotaLedger {
 public:
  // `field`: the quota's config field, for messages ("tenants[].drive_quota").
  explicit QuotaLedger(std::string field) : field_(std::move(field)) {}

  // One counter per tenant, all at 0 (see above).
  void Reset(size_t tenants);
  // Holds `bytes` of tenant `t`'s `quota` (0: none, always granted and not
  // counted). ResourceExhausted naming the tenant (`name`) and the field when
  // the tenant's holds and `bytes` would pass the quota.
  Result<QuotaHold> Hold(uint32_t t, const std::string& name, uint64_t quota, uint64_t bytes);
  // What tenant `t`'s puts in flight hold now.
  uint64_t Held(uint32_t t) const;
  // What tenant `t`'s other puts hold: Held(t) less `own_bytes` (what the
  // asking put holds itself, when its holds are under the current Reset).
  uint64_t Others(uint32_t t, uint64_t own_bytes) const;
  // Holds of tenant `t` refused since the last Reset.
  uint64_t Refusals(uint32_t t) const;
  // True when `hold` counts in tenant `t`'s current counter.
  bool Counts(uint32_t t, const QuotaHold& hold) const;

 private:
  std::shared_ptr<quota_internal::Account> CounterOf(uint32_t t) const;

  const std::string field_;
  mutable Mutex mu_;
  // The vector; the counters in it are atomic.
  std::vector<std::shared_ptr<quota_internal::Account>> held_ MEMKV_GUARDED_BY(mu_);
};

}  // namespace memkv

#endif  // MEMKV_BASE_QUOTA_LEDGER_H_
