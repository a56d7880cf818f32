// MemoryStore: puts (BeginPut, CommitPut, PendingPut), deletes, the lookups
// that never pin (Exists, Match, ValueSize, OfferKeys), Stats. See
// memory_store.h for the contract, memory_store_impl.h for the internals.
#include "storage/memory_store.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cstring>
#include <utility>

#include "base/bytes.h"
#include "base/checksum.h"
#include "base/units.h"
#include "storage/memory_store_impl.h"

namespace memkv::storage {

std::string KeyForLog(std::string_view key) {
  constexpr size_t kMaxPrintable = 64;
  constexpr size_t kMaxHexBytes = 32;
  bool printable = true;
  for (char c : key) {
    if (!std::isprint(static_cast<unsigned char>(c))) {
      printable = false;
      break;
    }
  }
  if (printable) {
    std::string out = "'";
    out.append(key.substr(0, kMaxPrintable));
    out.append(key.size() > kMaxPrintable ? "'..." : "'");
    return out;
  }
  size_t n = std::min(key.size(), kMaxHexBytes);
  return "0x" + HexEncode(reinterpret_cast<const uint8_t*>(key.data()), n) +
         (key.size() > n ? "..." : "");
}

// ---------------------------------------------------------------------------
// PendingPut

PendingPut::PendingPut(PendingPut&& other) noexcept
    : drive_hold(std::move(other.drive_hold)),
      store_(std::exchange(other.store_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      dram_hold_(std::move(other.dram_hold_)),
      runs_(std::move(other.runs_)),
      iov_(std::move(other.iov_)) {}  // a moved-from SmallVector is empty

PendingPut& PendingPut::operator=(PendingPut&& other) noexcept {
  if (this != &other) {
    if (store_ != nullptr) store_->ReleaseRuns(runs_);
    store_ = std::exchange(other.store_, nullptr);
    size_ = std::exchange(other.size_, 0);
    dram_hold_ = std::move(other.dram_hold_);
    drive_hold = std::move(other.drive_hold);
    runs_ = std::move(other.runs_);
    iov_ = std::move(other.iov_);
  }
  return *this;
}

PendingPut::~PendingPut() {
  if (store_ != nullptr) store_->ReleaseRuns(runs_);
}

// ---------------------------------------------------------------------------
// MemoryStoreStats

double MemoryStoreStats::fragmentation() const {
  return free_bytes == 0 ? 0.0 : 1.0 - static_cast<double>(largest_free_bytes) / static_cast<double>(free_bytes);
}

double MemoryStoreStats::bytes_per_value_byte() const {
  return value_bytes == 0 ? 0.0 : static_cast<double>(used_bytes) / static_cast<double>(value_bytes);
}


Result<PendingPut> MemoryStore::BeginPut(uint64_t size) { return BeginPut(size, std::string_view(), QuotaUse::kPut); }

Result<PendingPut> MemoryStore::BeginPut(uint64_t size, std::string_view key, QuotaUse use) {
  PendingPut put;
  MEMKV_RETURN_IF_ERROR(BeginPut(size, key, use, &put));
  return put;
}

Status MemoryStore::BeginPut(uint64_t size, std::string_view key, QuotaUse use, PendingPut* out) {
  assert(out->store_ == nullptr && out->runs_.empty());
  Impl& s = *impl_;
  if (size > s.pool_bytes) {
    return TooLarge("BeginPut: value of " + FormatSize(size) + " is larger than the whole memory pool of " +
                    FormatSize(s.pool_bytes));
  }
  const uint64_t units = UnitsFor(size);
  PendingPut& put = *out;
  if (units > 0) {
    Impl::EventScope scope(s);
    // The tenant's own values first: room in its quota before room in the
    // pool, so a tenant at its quota never pushes out another's values.
    // The quota is held first (QuotaLedger): puts that run at once never
    // hold more than it together, and each makes room for the others.
    if (const uint32_t t = s.policies.quota().TenantOf(key); t != TenantMap::kNone) {
      const TenantLimits& limits = s.policies.quota().limits(t);
      Result<QuotaHold> hold = s.dram_holds.Hold(t, limits.name, limits.dram_quota_bytes, size);
      Status room = hold.ok() ? s.TenantRoomLocked(t, key, size, s.ReplacedBytesLocked(t, key),
                                                   s.dram_holds.Others(t, hold->bytes()))
                              : hold.status();
      if (!room.ok()) {
        if (use == QuotaUse::kPut) s.policies.quota().CountRefusal(t);
        return room;
      }
      put.dram_hold_ = std::move(hold).value();
    }
    if (!s.MakeRoomLocked(units)) {
      put.dram_hold_.Release();
      const uint64_t linked_units = s.policies.eviction().linked_cost();
      const uint64_t pinned = s.policies.eviction().reader_held_cost() + s.draining_units;
      const uint64_t pending = s.allocator.unit_count() - s.allocator.free_units() - linked_units - s.draining_units;
      return ResourceExhausted(
          "BeginPut: value of " + FormatSize(size) + " does not fit: free " +
          FormatSize(s.allocator.free_units() * kPoolUnitBytes) + " in " + std::to_string(s.allocator.free_runs()) +
          " pieces (at most " + std::to_string(kMaxPiecesPerValue) + " per value), evictable " +
          FormatSize(s.EvictableUnitsLocked() * kPoolUnitBytes) + ", pinned by readers " +
          FormatSize(pinned * kPoolUnitBytes) + ", pinned values " + FormatSize(s.policies.retention().idle_units() * kPoolUnitBytes) +
          ", reserved by uncommitted puts " + FormatSize(pending * kPoolUnitBytes) + " (pool: " +
          FormatSize(s.pool_bytes) + ")");
    }
    const bool placed = s.allocator.Allocate(units, kMaxPiecesPerValue, &put.runs_);
    assert(placed);
    (void)placed;
    s.PublishFreeLocked();
  }
  put.store_ = this;
  put.size_ = size;
  s.BuildIov(put.runs_, size, &put.iov_);
  return Status::Ok();
}

namespace {

Status ForeignPut(std::string_view key) {
  return InvalidArgument("CommitPut(key " + KeyForLog(key) +
                         "): the PendingPut was not issued by this store "
                         "(default-constructed, moved-from or another store's)");
}

}  // namespace

std::shared_ptr<StoreEntry> MemoryStore::EntryOf(PendingPut& put, std::string_view key, uint64_t checksum,
                                                 const PutOptions& options) const {
  return EntryOf(put, std::string(key), checksum, options);
}

std::shared_ptr<StoreEntry> MemoryStore::EntryOf(PendingPut& put, std::string&& key, uint64_t checksum,
                                                 const PutOptions& options) const {
  auto entry = std::make_shared<StoreEntry>();
  entry->key = std::move(key);
  entry->stored_key = entry->key;
  entry->value_bytes = put.size_;
  entry->checksum = checksum;
  entry->cost = UnitsFor(put.size_);
  entry->runs = std::move(put.runs_);
  entry->iov = std::move(put.iov_);
  put.store_ = nullptr;  // the room now belongs to the entry
  entry->retention = options.retention;
  entry->ttl_ms = AppliedTtlMs(options);
  // A value naming itself would keep itself forever; it has no parent.
  if (options.parent_key != entry->key) entry->parent.assign(options.parent_key);
  entry->parent_key = entry->parent;
  entry->block_hash = options.block_hash;
  entry->parent_hash = options.parent_hash;
  entry->hash_kind = options.hash_kind;
  entry->expires_at_ms = policy::ExpiryAfter(impl_->realtime->NowMillis(), entry->ttl_ms);
  return entry;
}

Status MemoryStore::Impl::CommitLocked(std::shared_ptr<StoreEntry> entry, QuotaHold& dram_hold) {
  const std::string_view key = entry->key;
  const IndexKey hashed = KeyOf(key);
  auto it = index.find(hashed);
  if (entry->retention_pinned()) {
    Status room = PinRoomLocked(key, entry->units());
    if (!room.ok()) {
      pin_refusals.fetch_add(1, std::memory_order_relaxed);
      FreeLocked(entry->runs);
      return room;
    }
  }
  if (const uint32_t t = policies.quota().TenantOf(key); t != TenantMap::kNone) {
    // Evicting other values of the tenant leaves `it` valid (never the key's).
    const uint64_t own = dram_holds.Counts(t, dram_hold) ? dram_hold.bytes() : 0;
    Status room = TenantRoomLocked(t, key, entry->size(), ReplacedBytesLocked(t, key), dram_holds.Others(t, own));
    if (!room.ok()) {
      policies.quota().CountRefusal(t);
      FreeLocked(entry->runs);
      return room;
    }
  }
  if (it != index.end()) {
    ReplaceLocked(it, std::move(entry), ExpiredLocked(*it->second) ? RemovalReason::kExpired : RemovalReason::kReplaced);
  } else {
    LinkLocked(hashed, entry);
  }
  dram_hold.Release();  // the tenant's bytes count it now
  return Status::Ok();
}

Status MemoryStore::CommitPut(PendingPut put, std::string_view key, uint64_t checksum, const PutOptions& options) {
  if (put.store_ != this) return ForeignPut(key);
  Impl& s = *impl_;
  std::shared_ptr<StoreEntry> entry = EntryOf(put, key, checksum, options);
  Impl::EventScope scope(s);
  return s.CommitLocked(std::move(entry), put.dram_hold_);
}

std::vector<Status> MemoryStore::CommitPuts(std::span<const Commit> puts) {
  Impl& s = *impl_;
  std::vector<Status> statuses(puts.size());
  std::vector<std::shared_ptr<StoreEntry>> entries(puts.size());
  for (size_t i = 0; i < puts.size(); ++i) {
    const Commit& c = puts[i];
    if (c.put->store_ != this) {
      statuses[i] = ForeignPut(c.key);
      continue;
    }
    entries[i] = c.key_owner != nullptr ? EntryOf(*c.put, std::move(*c.key_owner), c.checksum, *c.options)
                                        : EntryOf(*c.put, c.key, c.checksum, *c.options);
  }
  {
    Impl::EventScope scope(s);
    for (size_t i = 0; i < puts.size(); ++i) {
      if (entries[i] != nullptr) statuses[i] = s.CommitLocked(std::move(entries[i]), puts[i].put->dram_hold_);
    }
  }
  return statuses;
}

Status MemoryStore::CheckPinRoom(std::string_view key, uint64_t size, const PutOptions& options) const {
  if (options.retention != Retention::kPinned) return Status::Ok();
  MutexLock lock(impl_->mu);
  return impl_->PinRoomLocked(key, UnitsFor(size));
}

bool MemoryStore::Exists(std::string_view key) {
  Impl::EventScope scope(*impl_);
  return impl_->FindLiveLocked(key) != impl_->index.end();
}

bool MemoryStore::Match(std::string_view key) {
  Impl& s = *impl_;
  Impl::EventScope scope(s);
  auto it = s.FindLiveLocked(key);
  if (it == s.index.end()) return false;
  s.policies.retention().Rearm(*it->second, s.realtime->NowMillis());
  return true;
}

size_t MemoryStore::SweepExpired(size_t max_entries) {
  Impl::EventScope scope(*impl_);
  return impl_->SweepExpiredLocked(max_entries, 0);
}

std::optional<uint64_t> MemoryStore::ValueSize(std::string_view key) {
  Impl::EventScope scope(*impl_);
  auto it = impl_->FindLiveLocked(key);
  if (it == impl_->index.end()) return std::nullopt;
  return it->second->size();
}

void MemoryStore::OfferKeys(KeyPage* page) const {
  MutexLock lock(impl_->mu);
  const int64_t now = impl_->realtime->NowMillis();
  for (const auto& [key, entry] : impl_->index) {
    if (!entry->expired(now)) page->Offer(key.view);
  }
}

Status MemoryStore::Delete(std::string_view key) {
  Impl& s = *impl_;
  Impl::EventScope scope(s);
  auto it = s.FindLiveLocked(key);
  if (it == s.index.end()) return NotFound("Delete: key " + KeyForLog(key) + " not present");
  s.UnlinkLocked(it, RemovalReason::kDeleted);
  return Status::Ok();
}

Status MemoryStore::Put(std::string_view key, const void* data, uint64_t size, const PutOptions& options) {
  MEMKV_ASSIGN_OR_RETURN(PendingPut put, BeginPut(size));
  const auto* in = static_cast<const uint8_t*>(data);
  for (const iovec& v : put.iov()) {
    std::memcpy(v.iov_base, in, v.iov_len);
    in += v.iov_len;
  }
  return CommitPut(std::move(put), key, Checksum(data, size), options);
}

MemoryStoreStats MemoryStore::Stats() const {
  const Impl& s = *impl_;
  MemoryStoreStats out;
  out.pool_bytes = s.pool_bytes;
  out.block_size_bytes = s.block_size;
  out.free_bytes = s.free_units.load(std::memory_order_relaxed) * kPoolUnitBytes;
  out.used_bytes = out.pool_bytes - std::min(out.pool_bytes, out.free_bytes);
  out.largest_free_bytes = s.largest_free_units.load(std::memory_order_relaxed) * kPoolUnitBytes;
  out.free_runs = s.free_runs.load(std::memory_order_relaxed);
  out.value_bytes = s.value_bytes.load(std::memory_order_relaxed);
  out.keys = s.keys.load(std::memory_order_relaxed);
  out.hits = s.hits.load(std::memory_order_relaxed);
  out.misses = s.misses.load(std::memory_order_relaxed);
  out.evictions = s.evictions.load(std::memory_order_relaxed);
  out.checksum_failures = s.checksum_failures.load(std::memory_order_relaxed);
  out.later_checks = s.later_checks.load(std::memory_order_relaxed);
  out.later_checks_skipped = s.later_checks_skipped.load(std::memory_order_relaxed);
  out.expired = s.expired.load(std::memory_order_relaxed);
  out.pinned_bytes = s.pin_mirrors->pinned_bytes();
  out.pinned_cap_bytes = s.pin_mirrors->cap_units() * kPoolUnitBytes;
  out.pinned_values = s.pin_mirrors->pinned_values();
  out.pin_refusals = s.pin_refusals.load(std::memory_order_relaxed);
  out.page_kind = s.backing.kind;
  return out;
}

uint64_t MemoryStore::AppliedTtlMs(const PutOptions& options) const {
  return policy::AppliedTtlMs(impl_->retention_options, options);
}

const RealtimeClock& MemoryStore::realtime_clock() const { return *impl_->realtime; }


Status MemoryStore::Impl::PinRoomLocked(std::string_view key, uint64_t units) const {
  // A pin replacing a pin of the same key gives its room back.
  auto it = index.find(key);
  const uint64_t replaced = it != index.end() && it->second->retention_pinned() ? it->second->units() : 0;
  return policies.retention().PinRoom("CommitPut(key " + KeyForLog(key) + ")", units, replaced);
}

}  // namespace memkv::storage
