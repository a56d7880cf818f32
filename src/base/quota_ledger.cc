#include "base/quota_ledger.h"

#include "base/units.h"

namespace memkv {

void QuotaLedger::Reset(size_t tenants) {
  std::vector<std::shared_ptr<quota_internal::Account>> fresh(tenants);
  for (auto& counter : fresh) counter = std::make_shared<quota_internal::Account>();
  MutexLock lock(mu_);
  held_.swap(fresh);
}

std::shared_ptr<quota_internal::Account> QuotaLedger::CounterOf(uint32_t t) const {
  MutexLock lock(mu_);
  return t < held_.size() ? held_[t] : nullptr;
}

Result<QuotaHold> QuotaLedger::Hold(uint32_t t, const std::string& name, uint64_t quota, uint64_t bytes) {
  QuotaHold hold;
  if (quota == 0) return hold;
  std::shared_ptr<quota_internal::Account> counter = CounterOf(t);
  if (counter == nullptr) return hold;
  if (bytes > quota) {
    counter->refusals.fetch_add(1, std::memory_order_relaxed);
    return ResourceExhausted("tenant " + name + ": a value of " + FormatSizeRounded(bytes) +
                             " is larger than its whole quota (" + field_ + " " + FormatSizeRounded(quota) + ")");
  }
  uint64_t held = counter->held.load(std::memory_order_acquire);
  do {
    if (held + bytes > quota) {
      counter->refusals.fetch_add(1, std::memory_order_relaxed);
      return ResourceExhausted("tenant " + name + ": puts in flight hold " + FormatSizeRounded(held) + " of its " +
                               FormatSizeRounded(quota) + " quota (" + field_ + "), and a put of " +
                               FormatSizeRounded(bytes) + " does not fit beside them; retry once they finish");
    }
  } while (!counter->held.compare_exchange_weak(held, held + bytes, std::memory_order_acq_rel));
  hold.counter_ = std::move(counter);
  hold.bytes_ = bytes;
  return hold;
}

uint64_t QuotaLedger::Held(uint32_t t) const {
  std::shared_ptr<quota_internal::Account> counter = CounterOf(t);
  return counter == nullptr ? 0 : counter->held.load(std::memory_order_acquire);
}

uint64_t QuotaLedger::Refusals(uint32_t t) const {
  std::shared_ptr<quota_internal::Account> counter = CounterOf(t);
  return counter == nullptr ? 0 : counter->refusals.load(std::memory_order_relaxed);
}

uint64_t QuotaLedger::Others(uint32_t t, uint64_t own_bytes) const {
  const uint64_t held = Held(t);
  return held > own_bytes ? held - own_bytes : 0;
}

bool QuotaLedger::Counts(uint32_t t, const QuotaHold& hold) const {
  return hold.counter_ != nullptr && hold.counter_ == CounterOf(t);
}

}  // namespace memkv
