// ExtentStore: Delete, EvictColdest, expiry, drive faults, flushing and
// stats (the write and read paths are extent_store_write.cc and
// extent_store_read.cc). See extent_store.h for the contract and
// extent_store_impl.h for the locking rules.
#include "drive/extent_store.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "base/bytes.h"
#include "base/checksum.h"
#include "base/errno_text.h"
#include "base/iov.h"
#include "base/log.h"
#include "drive/extent_store_impl.h"

namespace memkv::drive {
Status CheckKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxDriveKeyBytes) {
    return InvalidArgument("key of " + std::to_string(key.size()) + " bytes; keys are 1.." +
                           std::to_string(kMaxDriveKeyBytes) + " bytes");
  }
  return Status::Ok();
}

namespace {

// Value bytes in an extent of `units` units that starts at byte `offset` of the value.
uint64_t DataBytes(uint64_t value_bytes, uint64_t offset, uint32_t units) {
  return std::min<uint64_t>(uint64_t(units) * kDriveUnitBytes, value_bytes - offset);
}

}  // namespace

std::string DriveName(const Drive& d) {
  return "drive " + std::to_string(d.index) + (d.path.empty() ? "" : " (" + d.path + ")");
}

std::string_view DriveStateName(DriveState s) {
  switch (s) {
    case DriveState::kOnline: return "online";
    case DriveState::kFull: return "full";
    case DriveState::kOffline: return "offline";
  }
  return "?";
}

std::string KeyForLog(std::string_view key) {
  constexpr size_t kMaxPrintable = 64;
  constexpr size_t kMaxHexBytes = 32;
  bool printable = std::all_of(key.begin(), key.end(), [](char c) { return std::isprint(static_cast<unsigned char>(c)); });
  if (printable) {
    return "'" + std::string(key.substr(0, kMaxPrintable)) + (key.size() > kMaxPrintable ? "'..." : "'");
  }
  size_t n = std::min(key.size(), kMaxHexBytes);
  return "0x" + HexEncode(reinterpret_cast<const uint8_t*>(key.data()), n) + (key.size() > n ? "..." : "");
}

// ------------------------------------------------------------ Impl helpers

uint64_t PutRecordBytes(size_t key_bytes, size_t extents) {
  JournalRecord r;
  r.type = RecordType::kPut;
  r.key.resize(key_bytes);
  r.extents.resize(extents);
  return EncodedRecordBytes(r);
}

void ExtentStore::Impl::FreeUnitsLocked(const std::vector<ExtentRef>& extents) {
  for (const ExtentRef& e : extents) {
    if (e.drive < drives.size() && !drives[e.drive].alloc.Free(e.unit, e.units) &&
        drives[e.drive].state != DriveState::kOffline) {
      LOG_ERROR_C("drive") << "extent store: freeing units " << e.unit << ".." << e.unit + e.units - 1 << " of drive "
                           << e.drive << " that are not in use";
    }
  }
}

namespace {

// Adds (sign 1) or takes away (sign -1) what `e` counts in the store's and its drives' figures.
void CountLocked(ExtentStore::Impl& s, const Entry& e, int sign) MEMKV_REQUIRES(s.mu) {
  const uint64_t record = PutRecordBytes(e.key.size(), e.extents.size()) + AttrsTailBytes(e.attrs) +
                          SealsBytes(e.seals.size());
  s.journal_live_bytes = sign > 0 ? s.journal_live_bytes + record : s.journal_live_bytes - record;
  uint64_t offset = 0;
  for (const ExtentRef& x : e.extents) {
    const uint64_t n = DataBytes(e.value_bytes, offset, x.units);
    uint64_t& on_drive = s.drives[x.drive].value_bytes;
    on_drive = sign > 0 ? on_drive + n : on_drive - n;
    offset += n;
  }
}

// What evicting `e` gives back, in whole units (an empty value frees a
// journal record: counted as one byte).
uint64_t FreedBytes(const Entry& e) {
  uint64_t n = 0;
  for (const ExtentRef& x : e.extents) n += x.units;
  return std::max<uint64_t>(n * kDriveUnitBytes, 1);
}

}  // namespace

void ExtentStore::Impl::LinkLocked(std::shared_ptr<Entry> e) {
  // What the policies order and count it by; fixed while it is linked.
  e->stored_key = e->key;
  e->cost = FreedBytes(*e);
  e->retention = e->attrs.retention;
  e->ttl_ms = e->attrs.ttl_ms;
  e->expires_at_ms = e->attrs.expires_at_ms;
  policies.OnLink(*e);
  e->linked = true;
  counters.keys++;
  counters.value_bytes += e->value_bytes;
  CountLocked(*this, *e, 1);
  std::string_view key = e->key;
  index[key] = std::move(e);
}

void ExtentStore::Impl::UnlinkLocked(Entry* e) {
  if (!e->linked) return;
  // Keep the entry alive past the erase: a pinned reader may hold the only
  // other reference, or none.
  std::shared_ptr<Entry> keep;
  auto it = index.find(e->key);
  if (it != index.end() && it->second.get() == e) {
    keep = std::move(it->second);
    index.erase(it);
  }
  policies.OnUnlink(*e, storage::policy::Removal::kOther);  // evictions are counted once deleted
  e->linked = false;
  counters.keys--;
  counters.value_bytes -= e->value_bytes;
  CountLocked(*this, *e, -1);
  if (e->pins == 0 && e->units_owned) {
    FreeUnitsLocked(e->extents);
    e->units_owned = false;
  }
}

bool ExtentStore::Impl::MarkOfflineLocked(uint32_t drive, const std::string& reason) {
  Drive& d = drives[drive];
  if (d.state == DriveState::kOffline) return false;
  d.state = DriveState::kOffline;
  d.reason = reason;
  std::vector<Entry*> victims;
  for (auto& [key, e] : index) {
    if (std::any_of(e->extents.begin(), e->extents.end(), [&](const ExtentRef& x) { return x.drive == drive; })) {
      victims.push_back(e.get());
    }
  }
  for (Entry* e : victims) {
    // Their units on the other drives stay allocated until the offline
    // record is durable: before that, a crash would replay these values'
    // records, and their extents must not have been reused.
    if (e->units_owned) d.orphans.insert(d.orphans.end(), e->extents.begin(), e->extents.end());
    e->units_owned = false;
    UnlinkLocked(e);
  }
  LOG_ERROR_C("drive") << "extent store: " << DriveName(d) << " is offline: " << reason << "; " << victims.size()
            << " values on it are now misses and the store is degraded";
  return true;
}

void ExtentStore::Impl::MarkFullLocked(uint32_t drive, const std::string& reason) {
  Drive& d = drives[drive];
  if (d.state != DriveState::kOnline) return;
  d.state = DriveState::kFull;
  d.reason = reason;
  LOG_WARN_C("drive") << "extent store: " << DriveName(d) << " is full: " << reason << "; it serves reads but takes no new extents";
}

void ExtentStore::Impl::TakeOffline(uint32_t drive, const std::string& reason) {
  bool journal;
  {
    MutexLock lock(mu);
    journal = MarkOfflineLocked(drive, reason);
  }
  if (!journal) return;
  CommitOp op;
  op.kind = CommitOp::Kind::kOffline;
  op.drive = drive;
  CommitOp* ops[] = {&op};
  Commit(ops);
  if (!op.status.ok()) LOG_ERROR_C("drive") << "extent store: journaling that drive " << drive << " is offline: " << op.status.ToString();
}

std::string ExtentStore::Impl::HandleFailures(std::span<const IoOp> ops, const char* what) {
  std::string first;
  std::vector<std::pair<uint32_t, std::string>> offline;
  {
    MutexLock lock(mu);
    for (const IoOp& op : ops) {
      if (op.ok()) continue;
      const Drive& d = drives[op.drive];
      std::string msg = std::string(what) + " on " + DriveName(d) + " at offset " + std::to_string(op.offset) + ": " +
                        (op.result >= 0 ? "short transfer (" + std::to_string(op.result) + " of " +
                                              std::to_string(op.length) + " bytes)"
                                        : ErrnoName(op.error()));
      if (first.empty()) first = msg;
      counters.io_errors++;
      if (op.result == -ENOSPC) {
        MarkFullLocked(op.drive, msg);
      } else {
        offline.emplace_back(op.drive, msg);
      }
    }
  }
  for (auto& [drive, msg] : offline) TakeOffline(drive, msg);
  return first;
}

std::vector<uint32_t> ExtentStore::Impl::SyncDrives(const std::vector<uint32_t>& which) {
  std::vector<IoOp> ops;
  for (uint32_t d : which) ops.push_back(IoOp{.kind = IoKind::kSync, .drive = d});
  const Nanos start = MonotonicNanos();
  std::multiset<Nanos>::iterator running;
  {
    MutexLock lock(flush_clock_mu);
    running = flushes_running.insert(start);
  }
  io->Run(ops);
  {
    MutexLock lock(flush_clock_mu);
    flushes_running.erase(running);
    const Nanos took = MonotonicNanos() - start;
    last_flush.store(took, std::memory_order_relaxed);
    recent_flushes[next_recent_flush] = took;
    next_recent_flush = (next_recent_flush + 1) % recent_flushes.size();
  }
  std::vector<uint32_t> failed;
  for (const IoOp& op : ops) {
    if (!op.ok()) failed.push_back(op.drive);
  }
  return failed;
}

std::string_view SyncModeName(SyncMode mode) {
  return mode == SyncMode::kAlways ? "always" : "interval";
}

Status ExtentStore::Impl::FlushAll() {
  // Cleared first: a write that lands while the flush runs sets it again.
  unflushed.store(false, std::memory_order_release);
  std::vector<uint32_t> online;
  {
    MutexLock lock(mu);
    for (const Drive& d : drives) {
      if (d.state != DriveState::kOffline) online.push_back(d.index);
    }
  }
  const std::vector<uint32_t> failed = SyncDrives(online);
  {
    MutexLock lock(mu);
    counters.flushes++;
    counters.io_errors += failed.size();
  }
  for (uint32_t d : failed) TakeOffline(d, "fdatasync failed (storage.sync: interval flush)");
  if (!failed.empty() && failed.size() == online.size()) {
    return IoError("flushing the drives: fdatasync failed on every online drive");
  }
  return Status::Ok();
}

void ExtentStore::Impl::RunFlusher() {
  MutexLock lock(flusher_mu);
  const auto interval = std::chrono::milliseconds(options.sync_interval_ms);
  while (!lock.WaitFor(flusher_cv, interval, [this]() MEMKV_REQUIRES(flusher_mu) { return flusher_stop; })) {
    if (!unflushed.load(std::memory_order_acquire)) continue;
    lock.Unlock();
    Status s = FlushAll();
    if (!s.ok()) LOG_WARN_EVERY_C("drive", 10) << "extent store: " << s.ToString();
    lock.Lock();
  }
}

void ExtentStore::Impl::StopFlusher() {
  if (flusher.joinable()) {
    {
      MutexLock lock(flusher_mu);
      flusher_stop = true;
    }
    flusher_cv.notify_all();
    flusher.join();
  }
  if (options.sync == SyncMode::kInterval && unflushed.load(std::memory_order_acquire)) (void)FlushAll();
}

Status ExtentStore::Flush() {
  if (impl_->options.sync == SyncMode::kAlways) return Status::Ok();
  return impl_->FlushAll();
}

void ExtentStore::OfferKeys(KeyPage* page) const {
  MutexLock lock(impl_->mu);
  const int64_t now = impl_->clock->NowMillis();
  for (const auto& [key, entry] : impl_->index) {
    if (!entry->attrs.expired(now)) page->Offer(key);
  }
}

Status ExtentStore::Delete(std::string_view key) {
  MEMKV_RETURN_IF_ERROR(CheckKey(key));
  CommitOp op;
  op.kind = CommitOp::Kind::kDelete;
  op.key = key;
  CommitOp* ops[] = {&op};
  impl_->Commit(ops);
  if (op.status.ok()) {
    MutexLock lock(impl_->mu);
    impl_->counters.deletes++;
  }
  return op.status;
}

namespace {

RemovedValue Victim(const Entry& e, bool expired) {
  return RemovedValue{.key = e.key, .size_bytes = e.value_bytes, .attrs = e.attrs, .expired = expired};
}

// Deletes `victims` (each only in the version chosen: `generations`), in one
// commit; returns those deleted. *first_error: the first failure other than
// NotFound (replaced or deleted meanwhile).
std::vector<RemovedValue> DeleteVictims(ExtentStore::Impl& s, std::vector<RemovedValue> victims,
                                        const std::vector<uint64_t>& generations, Status* first_error) {
  std::vector<CommitOp> ops(victims.size());
  std::vector<CommitOp*> ptrs;
  for (size_t i = 0; i < victims.size(); ++i) {
    ops[i].kind = CommitOp::Kind::kDelete;
    ops[i].key = victims[i].key;
    ops[i].expect_generation = generations[i];
    ptrs.push_back(&ops[i]);
  }
  if (!ptrs.empty()) s.Commit(ptrs);
  std::vector<RemovedValue> removed;
  for (size_t i = 0; i < victims.size(); ++i) {
    if (ops[i].status.ok()) {
      removed.push_back(std::move(victims[i]));
    } else if (ops[i].status.code() != StatusCode::kNotFound && first_error->ok()) {
      *first_error = ops[i].status;
    }
  }
  return removed;
}

}  // namespace

Result<std::vector<std::string>> ExtentStore::EvictColdest(uint64_t bytes,
                                                          const std::function<bool(std::string_view)>& spare) {
  MEMKV_ASSIGN_OR_RETURN(std::vector<RemovedValue> removed, EvictColdestValues(bytes, spare));
  std::vector<std::string> keys;
  keys.reserve(removed.size());
  for (RemovedValue& r : removed) keys.push_back(std::move(r.key));
  return keys;
}

Result<std::vector<RemovedValue>> ExtentStore::EvictColdestValues(uint64_t bytes,
                                                                  const std::function<bool(std::string_view)>& spare) {
  if (bytes == 0) return InvalidArgument("EvictColdest(0): ask for at least one byte");
  Impl& s = *impl_;
  std::vector<RemovedValue> victims;
  std::vector<uint64_t> generations;
  {
    MutexLock lock(s.mu);
    uint64_t freed = 0;
    // The kit's passes over the LRU list, coldest first: expired values,
    // evict_first ones, the others, then those `spare` asked to keep; never
    // a pin whose TTL runs or a value being read.
    storage::policy::ScanByPass(s.policies.eviction().lru(), storage::policy::kColdestPasses, s.clock->NowMillis(),
                                &spare, [&](storage::policy::PolicyEntry& p, storage::policy::VictimClass c) {
                                  const Entry& e = static_cast<const Entry&>(p);
                                  victims.push_back(Victim(e, c == storage::policy::VictimClass::kExpired));
                                  generations.push_back(e.generation);
                                  freed += e.cost;
                                  return freed < bytes;
                                });
  }
  if (victims.empty()) {
    return ResourceExhausted("nothing to evict: " + std::to_string(Stats().keys) +
                             " values, all being read or pinned");
  }
  Status first_error;
  std::vector<RemovedValue> evicted = DeleteVictims(s, std::move(victims), generations, &first_error);
  {
    MutexLock lock(s.mu);
    for (const RemovedValue& r : evicted) {
      (r.expired ? s.counters.expired : s.counters.evictions)++;
      if (!r.expired) s.CountTenantEvictionLocked(r.key, false);
    }
  }
  if (evicted.empty() && !first_error.ok()) return first_error;
  return evicted;
}

Result<std::vector<RemovedValue>> ExtentStore::EvictForTenantQuota(std::string_view key, uint64_t bytes,
                                                                   const std::function<bool(std::string_view)>& spare) {
  Impl& s = *impl_;
  std::vector<RemovedValue> victims;
  std::vector<uint64_t> generations;
  {
    MutexLock lock(s.mu);
    storage::policy::TenantQuotas& quotas = s.policies.quota();
    const uint32_t t = quotas.TenantOf(key);
    if (t == TenantMap::kNone) return victims;
    auto current = s.index.find(key);
    const uint64_t replaced =
        storage::policy::TenantQuotas::ReplacedBytes(t, current != s.index.end() ? current->second.get() : nullptr);
    // As EvictColdestValues, among the tenant's values only (never `key`'s,
    // which the put replaces), counting value bytes as the quota does.
    std::vector<storage::policy::PolicyEntry*> chosen;
    const int64_t now = s.clock->NowMillis();
    Status room = quotas.ChooseRoom(t, key, bytes, replaced, 0, now, storage::policy::kColdestPasses, &spare, &chosen);
    if (!room.ok()) {
      quotas.CountRefusal(t);
      return room;
    }
    for (storage::policy::PolicyEntry* p : chosen) {
      const Entry& e = static_cast<const Entry&>(*p);
      victims.push_back(Victim(e, e.expired(now)));
      generations.push_back(e.generation);
    }
  }
  Status first_error;
  std::vector<RemovedValue> evicted = DeleteVictims(s, std::move(victims), generations, &first_error);
  {
    MutexLock lock(s.mu);
    for (const RemovedValue& r : evicted) {
      (r.expired ? s.counters.expired : s.counters.evictions)++;
      if (!r.expired) s.CountTenantEvictionLocked(r.key, true);
    }
  }
  if (evicted.empty() && !first_error.ok()) return first_error;
  return evicted;
}

std::vector<RemovedValue> ExtentStore::SweepExpired(size_t max_entries) {
  Impl& s = *impl_;
  std::vector<RemovedValue> victims;
  std::vector<uint64_t> generations;
  {
    MutexLock lock(s.mu);
    // Soonest expired first; the rest run later.
    s.policies.ttl().ForEachDue(s.clock->NowMillis(), [&](storage::policy::PolicyEntry& p) {
      if (victims.size() >= max_entries) return false;
      const Entry& e = static_cast<const Entry&>(p);
      victims.push_back(Victim(e, true));
      generations.push_back(e.generation);
      return true;
    });
  }
  Status ignored;  // a failed delete leaves the value a miss; the next sweep tries again
  std::vector<RemovedValue> removed = DeleteVictims(s, std::move(victims), generations, &ignored);
  MutexLock lock(s.mu);
  s.counters.expired += removed.size();
  return removed;
}

Status ExtentStore::Checkpoint() {
  CommitOp op;
  op.kind = CommitOp::Kind::kCheckpoint;
  CommitOp* ops[] = {&op};
  impl_->Commit(ops);
  return op.status;
}

ExtentStoreStats ExtentStore::Stats() const {
  const Impl& s = *impl_;
  MutexLock lock(s.mu);
  ExtentStoreStats out = s.counters;
  out.store_uuid = s.store_uuid;
  out.sync = s.options.sync;
  out.block_size_bytes = s.block_bytes;
  out.io_engine = std::string(s.io->name());
  out.open_nanos = s.open_nanos;
  out.commit_waits = s.commit_waits.load(std::memory_order_relaxed);
  out.encrypted = s.codec->seals();
  out.unit_bytes = kDriveUnitBytes;
  out.journal_live_bytes = s.journal_live_bytes;
  out.journal_budget_bytes =
      uint64_t(double(s.journal_area_bytes - std::min<uint64_t>(s.journal_area_bytes, kDriveHeaderBytes)) * kJournalLiveShare);
  out.drives.clear();
  for (const Drive& d : s.drives) {
    DriveStats ds;
    ds.index = d.index;
    ds.path = d.path;
    ds.uuid = d.sb.drive_uuid;
    ds.state = d.state;
    ds.reason = d.reason;
    if (d.state == DriveState::kOffline) out.degraded = true;
    if (d.present) {
      const ExtentAllocator& a = d.alloc;
      ds.raw_bytes = d.file.size_bytes();
      ds.usable_bytes = a.unit_count() * kDriveUnitBytes;
      ds.used_bytes = a.used_units() * kDriveUnitBytes;
      ds.free_bytes = a.free_units() * kDriveUnitBytes;
      ds.largest_free_bytes = a.longest_free_run() * kDriveUnitBytes;
      ds.free_runs = a.free_runs();
      ds.slots_total = ds.usable_bytes / s.block_bytes;
      ds.slots_free = ds.free_bytes / s.block_bytes;
      ds.journal_used_bytes = d.journal_used;
      ds.journal_area_bytes = d.sb.journal_area_bytes;
    }
    ds.value_bytes = d.value_bytes;
    out.drives.push_back(std::move(ds));
  }
  return out;
}

uint64_t ExtentStore::block_size_bytes() const { return impl_->block_bytes; }

void ExtentStore::Impl::SetSealTenants(std::shared_ptr<const TenantMap> map) { codec->SetTenants(std::move(map)); }

SyncMode ExtentStore::sync_mode() const { return impl_->options.sync; }

bool ExtentStore::FlushesWithin(int64_t limit_ns) const {
  const Nanos now = MonotonicNanos();
  MutexLock lock(impl_->flush_clock_mu);
  if (!impl_->flushes_running.empty() && now - *impl_->flushes_running.begin() > limit_ns) return false;
  return std::all_of(impl_->recent_flushes.begin(), impl_->recent_flushes.end(),
                     [&](Nanos took) { return took <= limit_ns; });
}

double DriveStats::fragmentation() const {
  return free_bytes == 0 ? 0.0 : 1.0 - double(largest_free_bytes) / double(free_bytes);
}

double DriveStats::bytes_per_value_byte() const {
  return value_bytes == 0 ? 0.0 : double(used_bytes) / double(value_bytes);
}

namespace {
template <typename F>
uint64_t SumOverDrives(const ExtentStoreStats& s, F field) {
  uint64_t sum = 0;
  for (const DriveStats& d : s.drives) sum += field(d);
  return sum;
}
}  // namespace

uint64_t ExtentStoreStats::used_bytes() const {
  return SumOverDrives(*this, [](const DriveStats& d) { return d.used_bytes; });
}

uint64_t ExtentStoreStats::usable_bytes() const {
  return SumOverDrives(*this, [](const DriveStats& d) { return d.usable_bytes; });
}

uint64_t ExtentStoreStats::free_bytes() const {
  return SumOverDrives(*this, [](const DriveStats& d) { return d.free_bytes; });
}

uint64_t ExtentStoreStats::largest_free_bytes() const {
  uint64_t largest = 0;
  for (const DriveStats& d : drives) largest = std::max(largest, d.largest_free_bytes);
  return largest;
}

double ExtentStoreStats::fragmentation() const {
  const uint64_t free = free_bytes();
  if (free == 0) return 0.0;
  const uint64_t runs = SumOverDrives(*this, [](const DriveStats& d) { return d.largest_free_bytes; });
  return 1.0 - double(runs) / double(free);
}

double ExtentStoreStats::bytes_per_value_byte() const {
  return value_bytes == 0 ? 0.0 : double(used_bytes()) / double(value_bytes);
}

ExtentStore::ExtentStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ExtentStore::~ExtentStore() { impl_->StopFlusher(); }

}  // namespace memkv::drive
