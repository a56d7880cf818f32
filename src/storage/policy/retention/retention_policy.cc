#include "storage/policy/retention/retention_policy.h"

#include <algorithm>
#include <sstream>

#include "base/units.h"

namespace memkv::storage::policy {

Status CheckRetentionOptions(const RetentionOptions& o, std::string_view who) {
  if (!(o.pinned_max_fraction > 0.0 && o.pinned_max_fraction <= 1.0)) {
    std::ostringstream text;
    text << who << ": pinned_max_fraction " << o.pinned_max_fraction << " is out of range; allowed: above 0, at most 1";
    return InvalidArgument(text.str());
  }
  if (o.pin_ttl_ms == 0 || o.pin_ttl_max_ms < o.pin_ttl_ms) {
    return InvalidArgument(std::string(who) + ": pin_ttl_ms " + std::to_string(o.pin_ttl_ms) + " and pin_ttl_max_ms " +
                           std::to_string(o.pin_ttl_max_ms) + ": allowed: 0 < pin_ttl_ms <= pin_ttl_max_ms");
  }
  return Status::Ok();
}

RetentionPolicy::RetentionPolicy(const RetentionOptions& options, uint64_t capacity_units, uint64_t unit_bytes,
                                 ExpiryIndex* ttl)
    : options_(options),
      capacity_units_(capacity_units),
      unit_bytes_(unit_bytes),
      cap_units_(static_cast<uint64_t>(options.pinned_max_fraction * static_cast<double>(capacity_units))),
      ttl_(ttl) {}

void RetentionPolicy::OnLink(PolicyEntry& e) {
  if (!e.retention_pinned()) return;
  retained_units_ += e.cost;
  idle_units_ += e.cost;  // a fresh entry has no reader pin
  pinned_bytes_.store(retained_units_ * unit_bytes_, std::memory_order_relaxed);
  pinned_values_.fetch_add(1, std::memory_order_relaxed);
}

void RetentionPolicy::OnUnlink(PolicyEntry& e, Removal) {
  if (!e.retention_pinned()) return;
  retained_units_ -= e.cost;
  if (e.pins == 0) idle_units_ -= e.cost;
  pinned_bytes_.store(retained_units_ * unit_bytes_, std::memory_order_relaxed);
  pinned_values_.fetch_sub(1, std::memory_order_relaxed);
}

void RetentionPolicy::OnTouch(PolicyEntry& e, int64_t now_ms) {
  if (options_.rearm_on_hit) Rearm(e, now_ms);
}

void RetentionPolicy::OnReaders(PolicyEntry& e, bool held) {
  if (!e.retention_pinned()) return;
  if (held) {
    idle_units_ -= e.cost;
  } else {
    idle_units_ += e.cost;
  }
}

uint64_t AppliedTtlMs(const RetentionOptions& options, const PutOptions& put) {
  if (put.retention != Retention::kPinned) return put.ttl_ms;
  return put.ttl_ms == 0 ? options.pin_ttl_ms : std::min(put.ttl_ms, options.pin_ttl_max_ms);
}

void RetentionPolicy::Rearm(PolicyEntry& e, int64_t now_ms) {
  if (e.retention_pinned()) ttl_->SetExpiry(e, ExpiryAfter(now_ms, e.ttl_ms));
}

Status RetentionPolicy::PinRoom(std::string_view what, uint64_t units, uint64_t replaced_units) const {
  const uint64_t others = retained_units_ - replaced_units;
  if (others + units <= cap_units_) return Status::Ok();
  std::ostringstream fraction;
  fraction << options_.pinned_max_fraction;
  return ResourceExhausted(std::string(what) + ": pinning " + FormatSize(units * unit_bytes_) +
                           " would bring the pinned values to " + FormatSize((others + units) * unit_bytes_) +
                           ", past memory.pinned_max_fraction " + fraction.str() + " of the " +
                           FormatSize(capacity_units_ * unit_bytes_) + " pool (cap " +
                           FormatSize(cap_units_ * unit_bytes_) + "; pinned now " + FormatSize(others * unit_bytes_) +
                           "); delete pinned values, let their TTLs run out, or raise memory.pinned_max_fraction");
}

}  // namespace memkv::storage::policy
