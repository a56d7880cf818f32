// ExtentStore: the data path (Put, Get, Delete, EvictColdest), staging
// buffers and drive faults. See extent_store.h for the contract and
// extent_store_impl.h for the locking rules.
#include "drive/extent_store.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/bytes.h"
#include "base/checksum.h"
#include "base/iov.h"
#include "base/log.h"
#include "drive/extent_store_impl.h"

namespace memkv {
namespace {

Status CheckKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxDriveKeyBytes) {
    return InvalidArgument("key of " + std::to_string(key.size()) + " bytes; keys are 1.." +
                           std::to_string(kMaxDriveKeyBytes) + " bytes");
  }
  return Status::Ok();
}

uint64_t DataBytes(uint64_t value_bytes, uint64_t block_bytes, size_t extent) {
  return std::min<uint64_t>(block_bytes, value_bytes - extent * block_bytes);
}

std::string DriveName(const Drive& d) {
  return "drive " + std::to_string(d.index) + (d.path.empty() ? "" : " (" + d.path + ")");
}

// "drive 0 (/a): 0 of 12 extents free; drive 1 (/b): offline (EIO ...)"
std::string DescribeSpaceLocked(const std::vector<Drive>& drives) {
  std::string out;
  for (const Drive& d : drives) {
    if (!out.empty()) out += "; ";
    out += DriveName(d) + ": ";
    if (d.state == DriveState::kOffline) {
      out += "offline (" + d.reason + ")";
    } else {
      out += std::to_string(d.alloc.free_count()) + " of " + std::to_string(d.alloc.slot_count()) + " extents free";
      if (d.state == DriveState::kFull) out += ", full (" + d.reason + ")";
    }
  }
  return out;
}

}  // namespace

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

std::vector<uint32_t> ExtentStore::Impl::AcquireBuffers(size_t want) {
  std::unique_lock<std::mutex> lock(buf_mu);
  buf_cv.wait(lock, [&] { return !free_bufs.empty(); });
  size_t n = std::min(want, free_bufs.size());
  std::vector<uint32_t> out(free_bufs.end() - ptrdiff_t(n), free_bufs.end());
  free_bufs.resize(free_bufs.size() - n);
  return out;
}

void ExtentStore::Impl::ReleaseBuffers(const std::vector<uint32_t>& bufs) {
  {
    std::lock_guard<std::mutex> lock(buf_mu);
    free_bufs.insert(free_bufs.end(), bufs.begin(), bufs.end());
  }
  buf_cv.notify_all();
}

uint64_t ExtentStore::Impl::IoBytes(const Drive& d, uint64_t data_bytes) const {
  return kDriveHeaderBytes + (data_bytes + d.lbs - 1) / d.lbs * d.lbs;
}

void ExtentStore::Impl::FreeSlotsLocked(const std::vector<ExtentRef>& extents) {
  for (const ExtentRef& e : extents) {
    if (e.drive < drives.size() && !drives[e.drive].alloc.Free(e.slot) &&
        drives[e.drive].state != DriveState::kOffline) {
      LOG_ERROR_C("drive") << "extent store: freeing slot " << e.slot << " of drive " << e.drive << " that is not in use";
    }
  }
}

void ExtentStore::Impl::LinkLocked(std::shared_ptr<Entry> e) {
  lru.push_front(e.get());
  e->lru = lru.begin();
  e->linked = true;
  counters.keys++;
  counters.value_bytes += e->value_bytes;
  for (size_t i = 0; i < e->extents.size(); ++i) {
    drives[e->extents[i].drive].value_bytes += DataBytes(e->value_bytes, block_bytes, i);
  }
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
  lru.erase(e->lru);
  e->linked = false;
  counters.keys--;
  counters.value_bytes -= e->value_bytes;
  for (size_t i = 0; i < e->extents.size(); ++i) {
    drives[e->extents[i].drive].value_bytes -= DataBytes(e->value_bytes, block_bytes, i);
  }
  if (e->pins == 0 && e->slots_owned) {
    FreeSlotsLocked(e->extents);
    e->slots_owned = false;
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
    // Their slots on the other drives stay allocated until the offline
    // record is durable: before that, a crash would replay these values'
    // records, and their extents must not have been reused.
    if (e->slots_owned) d.orphans.insert(d.orphans.end(), e->extents.begin(), e->extents.end());
    e->slots_owned = false;
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
    std::lock_guard<std::mutex> lock(mu);
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
    std::lock_guard<std::mutex> lock(mu);
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
  io->Run(ops);
  std::vector<uint32_t> failed;
  for (const IoOp& op : ops) {
    if (!op.ok()) failed.push_back(op.drive);
  }
  return failed;
}

// ------------------------------------------------------------------ writes

namespace {

struct Allocation {
  uint64_t generation = 0;
  std::vector<ExtentRef> extents;
};

// Round-robin over the drives that take new extents, starting one further
// along for each value, so consecutive values and the extents of one value
// spread over all drives.
Result<Allocation> AllocateLocked(ExtentStore::Impl& s, uint64_t count, std::string_view key) {
  uint64_t free_total = 0;
  bool any_up = false;
  for (const Drive& d : s.drives) {
    if (d.state != DriveState::kOffline) any_up = true;
    if (d.state == DriveState::kOnline) free_total += d.alloc.free_count();
  }
  if (!any_up) return Unavailable("put " + KeyForLog(key) + ": every drive is offline: " + DescribeSpaceLocked(s.drives));
  if (free_total < count) {
    return ResourceExhausted("put " + KeyForLog(key) + " needs " + std::to_string(count) + " extents of " +
                             std::to_string(s.block_bytes) + " bytes, " + std::to_string(free_total) +
                             " free: " + DescribeSpaceLocked(s.drives));
  }
  Allocation a;
  a.generation = s.next_generation++;
  a.extents.reserve(count);
  const uint32_t n = uint32_t(s.drives.size());
  uint32_t cursor = s.stripe_cursor++ % n;
  while (a.extents.size() < count) {
    Drive& d = s.drives[cursor];
    cursor = (cursor + 1) % n;
    if (d.state != DriveState::kOnline) continue;
    auto slot = d.alloc.Allocate();
    if (slot) a.extents.push_back(ExtentRef{.drive = d.index, .slot = *slot});
  }
  return a;
}

// Writes every extent of the value (in waves of staging buffers). No sync:
// the commit leader syncs all drives of a batch at once.
Status WriteExtents(ExtentStore::Impl& s, std::string_view key, std::span<const iovec> value,
                    uint64_t value_bytes, const Allocation& a, bool* drive_failed) {
  const size_t n = a.extents.size();
  for (size_t start = 0; start < n;) {
    std::vector<uint32_t> bufs = s.AcquireBuffers(n - start);
    std::vector<IoOp> ops;
    ops.reserve(bufs.size());
    for (size_t j = 0; j < bufs.size(); ++j) {
      const size_t i = start + j;
      const ExtentRef& e = a.extents[i];
      const Drive& d = s.drives[e.drive];
      const uint64_t data_bytes = DataBytes(value_bytes, s.block_bytes, i);
      const uint64_t io_bytes = s.IoBytes(d, data_bytes);
      uint8_t* b = s.buffer(bufs[j]);
      CopyFromIov(value, i * s.block_bytes, b + kDriveHeaderBytes, data_bytes);
      std::memset(b + kDriveHeaderBytes + data_bytes, 0, io_bytes - kDriveHeaderBytes - data_bytes);
      ExtentHeader h{.store_uuid = s.store_uuid, .generation = a.generation, .value_bytes = value_bytes,
                     .extent_index = uint32_t(i), .extent_count = uint32_t(n), .data_bytes = uint32_t(data_bytes),
                     .key = key};
      EncodeExtentHeader(h, std::span<const uint8_t>(b + kDriveHeaderBytes, data_bytes),
                         std::span<uint8_t, kDriveHeaderBytes>(b, kDriveHeaderBytes));
      ops.push_back(IoOp{.kind = IoKind::kWrite, .drive = e.drive, .offset = d.sb.slot_offset(e.slot), .buf = b,
                         .length = uint32_t(io_bytes), .fixed_buffer = int32_t(bufs[j])});
    }
    s.io->Run(ops);
    s.ReleaseBuffers(bufs);
    if (!std::all_of(ops.begin(), ops.end(), [](const IoOp& op) { return op.ok(); })) {
      *drive_failed = true;
      bool full = std::any_of(ops.begin(), ops.end(), [](const IoOp& op) { return op.result == -ENOSPC; });
      std::string msg = "put " + KeyForLog(key) + ": " + s.HandleFailures(ops, "writing an extent");
      return full ? ResourceExhausted(msg) : IoError(msg);
    }
    start += bufs.size();
  }
  return Status::Ok();
}

}  // namespace

Status ExtentStore::Put(std::string_view key, std::span<const uint8_t> value) {
  const iovec one{const_cast<uint8_t*>(value.data()), value.size()};
  return PutIov(key, std::span<const iovec>(&one, 1), Checksum(value.data(), value.size()));
}

Status ExtentStore::PutIov(std::string_view key, std::span<const iovec> value, uint64_t checksum) {
  MEMKV_RETURN_IF_ERROR(CheckKey(key));
  Impl& s = *impl_;
  const uint64_t value_bytes = IovBytes(value);
  const uint64_t extents = (value_bytes + s.block_bytes - 1) / s.block_bytes;
  if (extents > kMaxExtentsPerValue) {
    return TooLarge("put " + KeyForLog(key) + ": value of " + std::to_string(value_bytes) + " bytes needs " +
                    std::to_string(extents) + " extents, more than " + std::to_string(kMaxExtentsPerValue));
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.counters.puts++;
  }
  // A drive failing under this put takes itself offline; the put then tries
  // the drives that are left, once per drive at most.
  Status last;
  for (size_t attempt = 0; attempt <= s.drives.size(); ++attempt) {
    Allocation a;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      MEMKV_ASSIGN_OR_RETURN(a, AllocateLocked(s, extents, key));
    }
    bool drive_failed = false;
    Status w = WriteExtents(s, key, value, value_bytes, a, &drive_failed);
    if (!w.ok()) {
      std::lock_guard<std::mutex> lock(s.mu);
      s.FreeSlotsLocked(a.extents);
      if (!drive_failed) return w;
      last = w;
      continue;
    }
    CommitOp op;
    op.kind = CommitOp::Kind::kPut;
    op.key = key;
    op.generation = a.generation;
    op.value_bytes = value_bytes;
    op.value_checksum = checksum;
    op.extents = a.extents;
    CommitOp* ops[] = {&op};
    s.Commit(ops);
    if (op.status.ok()) return Status::Ok();
    if (!op.adopted) {
      std::lock_guard<std::mutex> lock(s.mu);
      s.FreeSlotsLocked(a.extents);
    }
    if (!op.drive_failed) return op.status;
    last = op.status;
  }
  return last;
}

// ------------------------------------------------------------------- reads

namespace {

// Reads and verifies every extent of `e` into dst (e.value_bytes long).
Status ReadExtents(ExtentStore::Impl& s, const Entry& e, std::span<const iovec> dst) {
  const size_t n = e.extents.size();
  for (size_t start = 0; start < n;) {
    std::vector<uint32_t> bufs = s.AcquireBuffers(n - start);
    std::vector<IoOp> ops;
    ops.reserve(bufs.size());
    for (size_t j = 0; j < bufs.size(); ++j) {
      const ExtentRef& x = e.extents[start + j];
      const Drive& d = s.drives[x.drive];
      const uint64_t data_bytes = DataBytes(e.value_bytes, s.block_bytes, start + j);
      ops.push_back(IoOp{.kind = IoKind::kRead, .drive = x.drive, .offset = d.sb.slot_offset(x.slot),
                         .buf = s.buffer(bufs[j]), .length = uint32_t(s.IoBytes(d, data_bytes)),
                         .fixed_buffer = int32_t(bufs[j])});
    }
    s.io->Run(ops);
    Status bad;
    for (size_t j = 0; j < ops.size() && bad.ok(); ++j) {
      if (!ops[j].ok()) continue;  // handled below, after the buffers are back
      const size_t i = start + j;
      const uint64_t data_bytes = DataBytes(e.value_bytes, s.block_bytes, i);
      const uint8_t* b = ops[j].buf;
      ExtentHeader want{.store_uuid = s.store_uuid, .generation = e.generation, .value_bytes = e.value_bytes,
                        .extent_index = uint32_t(i), .extent_count = uint32_t(n), .data_bytes = uint32_t(data_bytes),
                        .key = e.key};
      Status v = VerifyExtent(std::span<const uint8_t>(b, kDriveHeaderBytes),
                              std::span<const uint8_t>(b + kDriveHeaderBytes, data_bytes), want);
      if (!v.ok()) {
        bad = v.WithContext("get " + KeyForLog(e.key) + ": extent " + std::to_string(i) + " on drive " +
                            std::to_string(e.extents[i].drive) + " slot " + std::to_string(e.extents[i].slot));
        continue;
      }
      CopyToIov(dst, i * s.block_bytes, b + kDriveHeaderBytes, data_bytes);
    }
    s.ReleaseBuffers(bufs);
    if (!std::all_of(ops.begin(), ops.end(), [](const IoOp& op) { return op.ok(); })) {
      return Unavailable("get " + KeyForLog(e.key) + ": " + s.HandleFailures(ops, "reading an extent"));
    }
    if (!bad.ok()) return bad;
    start += bufs.size();
  }
  return Status::Ok();
}

}  // namespace

namespace {

// Pins the entry of `key` and marks it used; NotFound on a miss.
Result<std::shared_ptr<Entry>> PinForRead(ExtentStore::Impl& s, std::string_view key) {
  std::lock_guard<std::mutex> lock(s.mu);
  s.counters.gets++;
  auto it = s.index.find(key);
  if (it == s.index.end()) {
    s.counters.misses++;
    return NotFound("key " + KeyForLog(key) + " not present");
  }
  std::shared_ptr<Entry> e = it->second;
  e->pins++;
  s.lru.splice(s.lru.begin(), s.lru, e->lru);
  return e;
}

// Drops the pin; on a failed read the value is dropped from the index (a
// corrupt extent stays corrupt) and the miss is counted. `counted`: false
// when no read was attempted.
Status FinishRead(ExtentStore::Impl& s, const std::shared_ptr<Entry>& e, const Status& read, bool counted = true) {
  std::lock_guard<std::mutex> lock(s.mu);
  e->pins--;
  if (!counted) {
    // a refused call, not a hit or a miss
  } else if (read.ok()) {
    s.counters.hits++;
  } else {
    s.counters.misses++;
    if (read.code() == StatusCode::kCorruption) {
      s.counters.checksum_failures++;
      LOG_WARN_EVERY_C("drive", 10) << "extent store: " << read.message() << "; the value is dropped";
      s.UnlinkLocked(e.get());
    }
  }
  if (!e->linked && e->pins == 0 && e->slots_owned) {
    s.FreeSlotsLocked(e->extents);
    e->slots_owned = false;
  }
  if (read.ok()) return read;
  return NotFound("key " + KeyForLog(e->key) + " not readable: " + read.message());
}

}  // namespace

Result<std::vector<uint8_t>> ExtentStore::Get(std::string_view key) {
  MEMKV_RETURN_IF_ERROR(CheckKey(key));
  MEMKV_ASSIGN_OR_RETURN(std::shared_ptr<Entry> e, PinForRead(*impl_, key));
  std::vector<uint8_t> out(e->value_bytes);
  const iovec one{out.data(), out.size()};
  Status read = ReadExtents(*impl_, *e, std::span<const iovec>(&one, 1));
  MEMKV_RETURN_IF_ERROR(FinishRead(*impl_, e, read));
  return out;
}

Result<size_t> ExtentStore::GetInto(std::string_view key, std::span<uint8_t> buffer) {
  const iovec one{buffer.data(), buffer.size()};
  MEMKV_ASSIGN_OR_RETURN(ValueInfo info, GetIov(key, std::span<const iovec>(&one, 1)));
  return size_t(info.size_bytes);
}

Result<ValueInfo> ExtentStore::GetIov(std::string_view key, std::span<const iovec> buffer) {
  MEMKV_RETURN_IF_ERROR(CheckKey(key));
  MEMKV_ASSIGN_OR_RETURN(std::shared_ptr<Entry> e, PinForRead(*impl_, key));
  const uint64_t room = IovBytes(buffer);
  if (room < e->value_bytes) {
    Status too = TooLarge("get " + KeyForLog(key) + ": value of " + std::to_string(e->value_bytes) +
                          " bytes does not fit the " + std::to_string(room) + "-byte buffer");
    FinishRead(*impl_, e, Status::Ok(), /*counted=*/false);
    return too;
  }
  Status read = ReadExtents(*impl_, *e, buffer);
  MEMKV_RETURN_IF_ERROR(FinishRead(*impl_, e, read));
  return ValueInfo{.size_bytes = e->value_bytes, .checksum = e->value_checksum, .generation = e->generation};
}

Result<ValueInfo> ExtentStore::Stat(std::string_view key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->index.find(key);
  if (it == impl_->index.end()) return NotFound("key " + KeyForLog(key) + " not present");
  const Entry& e = *it->second;
  return ValueInfo{.size_bytes = e.value_bytes, .checksum = e.value_checksum, .generation = e.generation};
}

bool ExtentStore::Exists(std::string_view key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->index.count(key) != 0;
}

std::optional<uint64_t> ExtentStore::ValueSize(std::string_view key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->index.find(key);
  if (it == impl_->index.end()) return std::nullopt;
  return it->second->value_bytes;
}

void ExtentStore::OfferKeys(KeyPage* page) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const auto& [key, entry] : impl_->index) page->Offer(key);
}

Status ExtentStore::Delete(std::string_view key) {
  MEMKV_RETURN_IF_ERROR(CheckKey(key));
  CommitOp op;
  op.kind = CommitOp::Kind::kDelete;
  op.key = key;
  CommitOp* ops[] = {&op};
  impl_->Commit(ops);
  if (op.status.ok()) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->counters.deletes++;
  }
  return op.status;
}

Result<std::vector<std::string>> ExtentStore::EvictColdest(uint64_t extents,
                                                          const std::function<bool(std::string_view)>& spare) {
  if (extents == 0) return InvalidArgument("EvictColdest(0): ask for at least one extent");
  Impl& s = *impl_;
  std::vector<std::string> keys;
  std::vector<uint64_t> generations;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    uint64_t freed = 0;
    std::vector<const Entry*> spared;
    for (auto it = s.lru.rbegin(); it != s.lru.rend() && freed < extents; ++it) {
      const Entry* e = *it;
      if (e->pins > 0) continue;  // being read: evicting it frees nothing now
      if (spare && spare(e->key)) {
        spared.push_back(e);
        continue;
      }
      keys.push_back(e->key);
      generations.push_back(e->generation);
      freed += e->extents.size();
    }
    for (size_t i = 0; i < spared.size() && freed < extents; ++i) {  // coldest of the spared first
      keys.push_back(spared[i]->key);
      generations.push_back(spared[i]->generation);
      freed += spared[i]->extents.size();
    }
  }
  if (keys.empty()) {
    return ResourceExhausted("nothing to evict: " + std::to_string(Stats().keys) + " values, all being read");
  }
  std::vector<CommitOp> ops(keys.size());
  std::vector<CommitOp*> ptrs;
  for (size_t i = 0; i < keys.size(); ++i) {
    ops[i].kind = CommitOp::Kind::kDelete;
    ops[i].key = keys[i];
    ops[i].expect_generation = generations[i];
    ptrs.push_back(&ops[i]);
  }
  s.Commit(ptrs);
  std::vector<std::string> evicted;
  Status first_error;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (ops[i].status.ok()) {
      evicted.push_back(std::move(keys[i]));
    } else if (ops[i].status.code() != StatusCode::kNotFound && first_error.ok()) {
      first_error = ops[i].status;  // NotFound: replaced or deleted meanwhile
    }
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.counters.evictions += evicted.size();
  }
  if (evicted.empty() && !first_error.ok()) return first_error;
  return evicted;
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
  std::lock_guard<std::mutex> lock(s.mu);
  ExtentStoreStats out = s.counters;
  out.store_uuid = s.store_uuid;
  out.block_size_bytes = s.block_bytes;
  out.io_engine = std::string(s.io->name());
  out.open_nanos = s.open_nanos;
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
      ds.raw_bytes = d.file.size_bytes();
      ds.usable_bytes = d.sb.slot_count * s.block_bytes;
      ds.used_bytes = d.alloc.used_count() * s.block_bytes;
      ds.slots_total = d.alloc.slot_count();
      ds.slots_free = d.alloc.free_count();
      ds.journal_used_bytes = d.journal_used;
      ds.journal_area_bytes = d.sb.journal_area_bytes;
    }
    ds.value_bytes = d.value_bytes;
    out.drives.push_back(std::move(ds));
  }
  return out;
}

uint64_t ExtentStore::block_size_bytes() const { return impl_->block_bytes; }

ExtentStore::ExtentStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ExtentStore::~ExtentStore() = default;

}  // namespace memkv
