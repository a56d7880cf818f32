// ExtentStore: the data path (Put, Get, Delete, EvictColdest), staging
// buffers and drive faults. See extent_store.h for the contract and
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

std::string DriveName(const Drive& d) {
  return "drive " + std::to_string(d.index) + (d.path.empty() ? "" : " (" + d.path + ")");
}

// "drive 0 (/a): 0 of 12582912 bytes free; drive 1 (/b): offline (EIO ...)"
std::string DescribeSpaceLocked(const std::vector<Drive>& drives) {
  std::string out;
  for (const Drive& d : drives) {
    if (!out.empty()) out += "; ";
    out += DriveName(d) + ": ";
    if (d.state == DriveState::kOffline) {
      out += "offline (" + d.reason + ")";
    } else {
      const ExtentAllocator& a = d.alloc;
      out += std::to_string(a.free_units() * kDriveUnitBytes) + " of " + std::to_string(a.unit_count() * kDriveUnitBytes) +
             " bytes free";
      if (a.free_units() != 0) {
        out += " (longest free run " + std::to_string(a.longest_free_run() * kDriveUnitBytes) + ")";
      }
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
void CountLocked(ExtentStore::Impl& s, const Entry& e, int sign) {
  if (e.attrs.expires_at_ms != 0) {
    if (sign > 0) {
      s.by_expiry.emplace(e.attrs.expires_at_ms, &e);
    } else {
      s.by_expiry.erase({e.attrs.expires_at_ms, &e});
    }
  }
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

}  // namespace

void ExtentStore::Impl::LinkLocked(std::shared_ptr<Entry> e) {
  lru.push_front(e.get());
  e->lru = lru.begin();
  e->linked = true;
  counters.keys++;
  counters.value_bytes += e->value_bytes;
  CountLocked(*this, *e, 1);
  CountTenantLocked(*e, 1);
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
  CountLocked(*this, *e, -1);
  CountTenantLocked(*e, -1);
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

std::string_view SyncModeName(SyncMode mode) {
  return mode == SyncMode::kAlways ? "always" : "interval";
}

Status ExtentStore::Impl::FlushAll() {
  // Cleared first: a write that lands while the flush runs sets it again.
  unflushed.store(false, std::memory_order_release);
  std::vector<uint32_t> online;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const Drive& d : drives) {
      if (d.state != DriveState::kOffline) online.push_back(d.index);
    }
  }
  const std::vector<uint32_t> failed = SyncDrives(online);
  {
    std::lock_guard<std::mutex> lock(mu);
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
  std::unique_lock<std::mutex> lock(flusher_mu);
  const auto interval = std::chrono::milliseconds(options.sync_interval_ms);
  while (!flusher_cv.wait_for(lock, interval, [this] { return flusher_stop; })) {
    if (!unflushed.load(std::memory_order_acquire)) continue;
    lock.unlock();
    Status s = FlushAll();
    if (!s.ok()) LOG_WARN_EVERY_C("drive", 10) << "extent store: " << s.ToString();
    lock.lock();
  }
}

void ExtentStore::Impl::StopFlusher() {
  if (flusher.joinable()) {
    {
      std::lock_guard<std::mutex> lock(flusher_mu);
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

// ------------------------------------------------------------------ writes

namespace {

// Finds room for a value of `units` units. Extents of up to a block each go
// round-robin over the drives that take new extents, starting one further
// along for each value, so consecutive values and the extents of one value
// spread over all drives; each takes the best-fitting free run of the first
// drive (from the cursor) that has one long enough. When no drive has a run
// that long, the extent is cut: it takes the longest free run anywhere and
// the rest of the value goes on in further extents. So a value fits whenever
// enough units are free, however fragmented (up to kMaxExtentsPerValue).
Result<Allocation> AllocateLocked(ExtentStore::Impl& s, uint64_t value_bytes, std::string_view key) {
  const uint64_t units = UnitsFor(value_bytes);
  uint64_t free_total = 0;
  bool any_up = false;
  for (const Drive& d : s.drives) {
    if (d.state != DriveState::kOffline) any_up = true;
    if (d.state == DriveState::kOnline) free_total += d.alloc.free_units();
  }
  if (!any_up) return Unavailable("put " + KeyForLog(key) + ": every drive is offline: " + DescribeSpaceLocked(s.drives));
  if (free_total < units) {
    return ResourceExhausted("put " + KeyForLog(key) + " needs " + std::to_string(units * kDriveUnitBytes) +
                             " bytes of drive space (" + std::to_string(value_bytes) + "-byte value), " +
                             std::to_string(free_total * kDriveUnitBytes) + " free: " + DescribeSpaceLocked(s.drives));
  }
  const uint64_t block_units = s.block_bytes / kDriveUnitBytes;
  const uint64_t extents = (units + block_units - 1) / block_units;
  const uint64_t record = PutRecordBytes(key.size(), extents) + s.codec->SealRecordBytes(value_bytes, extents);
  const uint64_t budget = uint64_t(double(s.journal_area_bytes - kDriveHeaderBytes) * kJournalLiveShare);
  if (s.journal_live_bytes + record > budget) {
    return ResourceExhausted("put " + KeyForLog(key) + ": the journal is full: the live index takes " +
                             std::to_string(s.journal_live_bytes) + " bytes of the " + std::to_string(budget) +
                             " it may use in a journal area of " + std::to_string(s.journal_area_bytes) +
                             " bytes; evict values or format with a larger journal");
  }
  Allocation a;
  a.generation = s.next_generation++;
  const uint32_t n = uint32_t(s.drives.size());
  uint32_t cursor = s.stripe_cursor++ % n;
  auto give_back = [&] {
    for (const ExtentRef& e : a.extents) s.drives[e.drive].alloc.Free(e.unit, e.units);
  };
  for (uint64_t left = units; left > 0;) {
    if (a.extents.size() == kMaxExtentsPerValue) {
      give_back();
      return ResourceExhausted("put " + KeyForLog(key) + ": the free space is too fragmented to hold " +
                               std::to_string(value_bytes) + " bytes in " + std::to_string(kMaxExtentsPerValue) +
                               " extents: " + DescribeSpaceLocked(s.drives));
    }
    const uint64_t want = std::min(left, block_units);
    std::optional<ExtentRef> got;
    for (uint32_t k = 0; k < n && !got; ++k) {
      Drive& d = s.drives[(cursor + k) % n];
      if (d.state != DriveState::kOnline) continue;
      if (std::optional<uint64_t> first = d.alloc.Allocate(want)) {
        got = ExtentRef{.drive = d.index, .unit = *first, .units = uint32_t(want)};
      }
    }
    if (!got) {
      Drive* longest = nullptr;
      for (Drive& d : s.drives) {
        if (d.state != DriveState::kOnline) continue;
        if (longest == nullptr || d.alloc.longest_free_run() > longest->alloc.longest_free_run()) longest = &d;
      }
      std::optional<UnitRun> run = longest != nullptr ? longest->alloc.AllocateLongest(want) : std::nullopt;
      if (!run) {  // cannot happen: free_total covered the value
        give_back();
        return Internal("put " + KeyForLog(key) + ": free units vanished: " + DescribeSpaceLocked(s.drives));
      }
      got = ExtentRef{.drive = longest->index, .unit = run->first, .units = uint32_t(run->units)};
    }
    a.extents.push_back(*got);
    cursor = (got->drive + 1) % n;
    left -= got->units;
  }
  return a;
}

// A value moves in the codec's pieces: InvalidArgument unless [from, from +
// len) starts on one and ends on one or at (or past: a larger read buffer)
// the value's end.
Status CheckCodecRange(const ValueCodec& codec, const char* what, std::string_view key, uint64_t from, uint64_t len,
                       uint64_t value_bytes) {
  const uint64_t to = std::min(from + len, value_bytes);
  const uint64_t step = codec.piece_bytes();
  if (from % step == 0 && (to == value_bytes || to % step == 0)) return Status::Ok();
  return InvalidArgument(std::string(what) + " " + KeyForLog(key) + ": a piece of " + std::to_string(len) +
                         " bytes at offset " + std::to_string(from) + " of a value stored " +
                         std::string(codec.name()) + "; pieces start and end on multiples of " +
                         std::to_string(step) + " bytes (or at the value's end)");
}

// The first of `segments` that ends after value byte `from`.
size_t FirstSegmentAfter(std::span<const SealSegment> segments, uint64_t from) {
  size_t i = 0;
  while (i < segments.size() && segments[i].offset + segments[i].bytes <= from) ++i;
  return i;
}

// The parts of a value's extents that hold value bytes [from, from + len):
// for each, the extent, the first unit of it that the range touches and the
// value bytes there. `from` is a multiple of the unit.
struct ExtentPiece {
  const ExtentRef* extent = nullptr;
  uint64_t unit = 0;        // within the extent
  uint64_t offset = 0;      // value offset of its first byte
  uint64_t data_bytes = 0;  // value bytes in it (the I/O covers whole units)
};

std::vector<ExtentPiece> PiecesOf(std::span<const ExtentRef> extents, uint64_t value_bytes, uint64_t from,
                                  uint64_t len) {
  std::vector<ExtentPiece> pieces;
  const uint64_t to = std::min(from + len, value_bytes);
  uint64_t start = 0;
  for (const ExtentRef& e : extents) {
    const uint64_t end = start + uint64_t(e.units) * kDriveUnitBytes;
    if (start >= to) break;
    if (end > from) {
      const uint64_t lo = std::max(start, from);
      pieces.push_back({&e, (lo - start) / kDriveUnitBytes, lo, std::min(end, to) - lo});
    }
    start = end;
  }
  return pieces;
}

}  // namespace

// Writes value bytes [from, from + IovBytes(src)) (in waves of staging
// buffers), whole units, zero-padded. No sync: the commit leader syncs all
// drives of a batch at once (kInterval: the flusher does); a small value is
// written through the page cache. The bytes are hashed into `sum` on the way, so
// the caller can refuse a value whose bytes do not match the checksum its
// record will carry: no read could ever take them.
Status WriteValueRange(ExtentStore::Impl& s, std::string_view key, std::span<const iovec> src, uint64_t from,
                       uint64_t value_bytes, std::span<const ExtentRef> extents, ChecksumStream* sum,
                       bool* drive_failed, std::vector<SegmentSeal>* seals) {
  const uint64_t len = IovBytes(src);
  const std::vector<ExtentPiece> pieces = PiecesOf(extents, value_bytes, from, len);
  const bool buffered = value_bytes <= kBufferedValueBytes;  // BuffersPut
  ValueCodec& codec = *s.codec;
  MEMKV_RETURN_IF_ERROR(CheckCodecRange(codec, "put", key, from, len, value_bytes));
  const std::vector<SealSegment> segments = codec.Segments(extents, value_bytes);
  seals->resize(codec.SealCount(extents, value_bytes));
  const CodedValue v{key, value_bytes};
  size_t next_segment = FirstSegmentAfter(segments, from);  // the next to encode
  for (size_t start = 0; start < pieces.size();) {
    std::vector<uint32_t> bufs = s.AcquireBuffers(pieces.size() - start);
    // A write per segment of each piece, each encoded just before it is
    // submitted: the drive writes a segment while the next is encoded.
    struct SegmentWrite {
      size_t segment;
      uint64_t lo;          // value offset of its first byte
      uint64_t bytes;       // value bytes in it
      uint64_t pad_bytes;   // zeros after them, to the end of its last unit
    };
    std::vector<IoOp> ops;
    std::vector<SegmentWrite> writes;
    ops.reserve(bufs.size());
    writes.reserve(bufs.size());
    for (size_t j = 0; j < bufs.size(); ++j) {
      const ExtentPiece& p = pieces[start + j];
      const Drive& d = s.drives[p.extent->drive];
      const uint64_t at = d.sb.unit_offset(p.extent->unit + p.unit);
      uint8_t* b = s.buffer(bufs[j]);
      const uint64_t piece_end = p.offset + p.data_bytes;
      for (; next_segment < segments.size() && segments[next_segment].offset < piece_end; ++next_segment) {
        const SealSegment& g = segments[next_segment];
        const uint64_t lo = std::max(g.offset, p.offset);
        const uint64_t hi = std::min(g.offset + g.bytes, piece_end);
        const uint64_t skip = lo - p.offset;  // a multiple of the unit
        const uint64_t io_bytes = UnitsFor(hi - lo) * kDriveUnitBytes;
        ops.push_back(IoOp{.kind = IoKind::kWrite, .drive = p.extent->drive, .offset = at + skip, .buf = b + skip,
                           .length = uint32_t(io_bytes), .fixed_buffer = int32_t(bufs[j]), .buffered = buffered});
        writes.push_back({next_segment, lo, hi - lo, io_bytes - (hi - lo)});
        if (g.offset + g.bytes > piece_end) break;  // goes on in the next piece
      }
    }
    s.io->RunPrepared(ops, [&](size_t i) {
      const SegmentWrite& w = writes[i];
      codec.Encode(v, segments[w.segment], w.segment, w.lo, w.bytes, src, from, ops[i].buf, sum, *seals);
      std::memset(ops[i].buf + w.bytes, 0, w.pad_bytes);
    });
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

Status ChecksumMatches(std::string_view key, uint64_t value_bytes, uint64_t written, uint64_t checksum) {
  if (written == checksum) return Status::Ok();
  return InvalidArgument("put " + KeyForLog(key) + ": the " + std::to_string(value_bytes) +
                         "-byte value does not match the checksum given for it (" + std::to_string(checksum) +
                         "); nothing was stored");
}

Result<Allocation> ExtentStore::Impl::Allocate(std::string_view key, uint64_t value_bytes) {
  const uint64_t extents = (value_bytes + block_bytes - 1) / block_bytes;
  if (extents > kMaxExtentsPerValue) {
    return TooLarge("put " + KeyForLog(key) + ": value of " + std::to_string(value_bytes) + " bytes needs " +
                    std::to_string(extents) + " extents, more than " + std::to_string(kMaxExtentsPerValue));
  }
  std::lock_guard<std::mutex> lock(mu);
  MEMKV_RETURN_IF_ERROR(TenantQuotaLocked(key, value_bytes));
  return AllocateLocked(*this, value_bytes, key);
}

void ExtentStore::Impl::CommitPuts(std::span<CommitOp* const> ops) {
  Commit(ops);
  std::lock_guard<std::mutex> lock(mu);
  for (const CommitOp* op : ops) {
    if (!op->status.ok() && !op->adopted) FreeUnitsLocked(op->extents);
  }
}

namespace {

// The put record of a value written to `a`'s extents.
CommitOp PutOp(std::string_view key, Allocation a, uint64_t value_bytes, uint64_t checksum, const ValueAttrs* attrs,
               std::vector<SegmentSeal> seals) {
  CommitOp op;
  op.seals = std::move(seals);
  if (attrs != nullptr) op.attrs = *attrs;
  op.kind = CommitOp::Kind::kPut;
  op.key = key;
  op.generation = a.generation;
  op.value_bytes = value_bytes;
  op.value_checksum = checksum;
  op.extents = std::move(a.extents);
  return op;
}

// Reserves a put's extents and writes its bytes there, checked against its
// checksum, and makes *op its record (not yet journaled). On failure frees
// what it reserved; *drive_failed when a drive refused the write (a retry
// on the other drives may succeed).
Status StagePut(ExtentStore::Impl& s, const ExtentStore::IovPut& p, CommitOp* op, bool* drive_failed) {
  const uint64_t value_bytes = IovBytes(p.value);
  MEMKV_ASSIGN_OR_RETURN(Allocation a, s.Allocate(p.key, value_bytes));
  ChecksumStream sum;
  std::vector<SegmentSeal> seals;
  Status w = WriteValueRange(s, p.key, p.value, 0, value_bytes, a.extents, &sum, drive_failed, &seals);
  if (w.ok()) w = ChecksumMatches(p.key, value_bytes, sum.Digest(), p.checksum);
  if (!w.ok()) {
    std::lock_guard<std::mutex> lock(s.mu);
    s.FreeUnitsLocked(a.extents);
    return w;
  }
  *op = PutOp(p.key, std::move(a), value_bytes, p.checksum, p.attrs, std::move(seals));
  return Status::Ok();
}

}  // namespace

Status ExtentStore::Impl::Publish(std::string_view key, const Allocation& a, uint64_t value_bytes,
                                  uint64_t checksum, const ValueAttrs& attrs, std::vector<SegmentSeal> seals,
                                  bool* drive_failed) {
  CommitOp op = PutOp(key, a, value_bytes, checksum, &attrs, std::move(seals));
  CommitOp* ops[] = {&op};
  CommitPuts(ops);
  *drive_failed = op.drive_failed;
  return op.status;
}

Status ExtentStore::Put(std::string_view key, std::span<const uint8_t> value) {
  const iovec one{const_cast<uint8_t*>(value.data()), value.size()};
  return PutIov(key, std::span<const iovec>(&one, 1), Checksum(value.data(), value.size()));
}

std::vector<Status> ExtentStore::PutManyIov(std::span<const IovPut> puts) {
  Impl& s = *impl_;
  std::vector<Status> statuses(puts.size());
  std::vector<CommitOp> ops(puts.size());
  std::vector<CommitOp*> staged;
  std::vector<bool> retry(puts.size(), false);  // a drive went offline or full under it
  staged.reserve(puts.size());
  for (size_t i = 0; i < puts.size(); ++i) {
    statuses[i] = CheckKey(puts[i].key);
    if (!statuses[i].ok()) continue;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.counters.puts++;
    }
    bool drive_failed = false;
    statuses[i] = StagePut(s, puts[i], &ops[i], &drive_failed);
    retry[i] = drive_failed;
    if (statuses[i].ok()) staged.push_back(&ops[i]);
  }
  if (!staged.empty()) s.CommitPuts(staged);
  for (CommitOp* op : staged) {
    const size_t i = size_t(op - ops.data());
    statuses[i] = op->status;
    retry[i] = op->drive_failed;
  }
  for (size_t i = 0; i < puts.size(); ++i) {
    if (!retry[i]) continue;
    // PutIov tries the drives that are left; it counts the put itself.
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.counters.puts--;
    }
    statuses[i] = PutIov(puts[i].key, puts[i].value, puts[i].checksum, puts[i].attrs);
  }
  return statuses;
}

Status ExtentStore::PutIov(std::string_view key, std::span<const iovec> value, uint64_t checksum,
                           const ValueAttrs* attrs) {
  MEMKV_RETURN_IF_ERROR(CheckKey(key));
  Impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.counters.puts++;
  }
  // A drive failing under this put takes itself offline; the put then tries
  // the drives that are left, once per drive at most.
  Status last;
  for (size_t attempt = 0; attempt <= s.drives.size(); ++attempt) {
    CommitOp op;
    bool drive_failed = false;
    Status w = StagePut(s, IovPut{key, value, checksum, attrs}, &op, &drive_failed);
    if (w.ok()) {
      CommitOp* ops[] = {&op};
      s.CommitPuts(ops);
      w = op.status;
      drive_failed = op.drive_failed;
    }
    if (w.ok() || !drive_failed) return w;
    last = w;
  }
  return last;
}

// ------------------------------------------------------------------- reads

// Reads value bytes [from, from + IovBytes(dst)) of `e` into dst (`from` a
// multiple of the unit), hashing them into `sum`; Unavailable when a drive
// failed. dst holds unchecked bytes: the caller checks the whole value
// (CheckValueSum) once it has read it all.
Status ReadValueRange(ExtentStore::Impl& s, const Entry& e, uint64_t from, std::span<const iovec> dst,
                      ChecksumStream* sum) {
  const uint64_t len = IovBytes(dst);
  const std::vector<ExtentPiece> pieces = PiecesOf(e.extents, e.value_bytes, from, len);
  ValueCodec& codec = *s.codec;
  MEMKV_RETURN_IF_ERROR(CheckCodecRange(codec, "get", e.key, from, len, e.value_bytes));
  const size_t seal_count = codec.SealCount(e.extents, e.value_bytes);
  if (e.seals.size() != seal_count) {
    return Corruption("get " + KeyForLog(e.key) + ": " + std::to_string(e.seals.size()) + " seals where the " +
                      std::string(codec.name()) + " codec keeps " + std::to_string(seal_count));
  }
  const std::vector<SealSegment> segments = codec.Segments(e.extents, e.value_bytes);
  const CodedValue v{e.key, e.value_bytes};
  size_t next_segment = FirstSegmentAfter(segments, from);
  Status decode_failure;  // the first segment that failed its seal
  // Each piece is read into a staging buffer (huge pages: a few segments per
  // request, where 4 KiB pages would cut a 4 MiB read into several device
  // requests), then hashed and copied out as soon as it and the pieces
  // before it are in, while the drive still reads the rest: a value of
  // several extents costs the reads plus the last piece's hash and copy.
  for (size_t start = 0; start < pieces.size();) {
    std::vector<uint32_t> bufs = s.AcquireBuffers(pieces.size() - start);
    std::vector<IoOp> ops;
    // What each read holds: a segment's bytes [lo, lo + bytes) of the value.
    struct SegmentRead {
      size_t segment;
      uint64_t lo;
      uint64_t bytes;
    };
    std::vector<SegmentRead> reads;
    ops.reserve(bufs.size());
    reads.reserve(bufs.size());
    for (size_t j = 0; j < bufs.size(); ++j) {
      const ExtentPiece& p = pieces[start + j];
      const Drive& d = s.drives[p.extent->drive];
      const uint64_t at = d.sb.unit_offset(p.extent->unit + p.unit);
      // A read per segment of the piece: the first is decoded while the
      // drive still reads the others.
      const uint64_t piece_end = p.offset + p.data_bytes;
      for (; next_segment < segments.size() && segments[next_segment].offset < piece_end; ++next_segment) {
        const SealSegment& g = segments[next_segment];
        const uint64_t lo = std::max(g.offset, p.offset);
        const uint64_t hi = std::min(g.offset + g.bytes, piece_end);
        const uint64_t skip = lo - p.offset;  // a multiple of the unit
        ops.push_back(IoOp{.kind = IoKind::kRead, .drive = p.extent->drive, .offset = at + skip,
                           .buf = s.buffer(bufs[j]) + skip, .length = uint32_t(UnitsFor(hi - lo) * kDriveUnitBytes),
                           .fixed_buffer = int32_t(bufs[j])});
        reads.push_back({next_segment, lo, hi - lo});
        if (g.offset + g.bytes > piece_end) break;  // goes on in the next piece
      }
    }
    size_t next = 0;  // the first read not yet hashed and copied
    std::vector<bool> in(ops.size(), false);
    bool failed = false;
    s.io->RunEach(ops, [&](size_t i) {
      in[i] = true;
      failed = failed || !ops[i].ok();
      // Decode each segment on its copy out of the buffer: its seal is
      // checked before the read returns any of it.
      for (; !failed && next < ops.size() && in[next]; ++next) {
        const SegmentRead& r = reads[next];
        Status d = codec.Decode(v, segments[r.segment], r.segment, r.lo, r.bytes, ops[next].buf, dst, from, sum,
                                e.seals);
        if (!d.ok() && decode_failure.ok()) {
          decode_failure = Status(d.code(), "get " + KeyForLog(e.key) + ": " + d.message());
        }
      }
    });
    s.ReleaseBuffers(bufs);
    if (!decode_failure.ok()) return decode_failure;
    if (failed) return Unavailable("get " + KeyForLog(e.key) + ": " + s.HandleFailures(ops, "reading an extent"));
    start += bufs.size();
  }
  return Status::Ok();
}

// Corruption, naming where the value lies, when the hash of all its bytes
// (`digest`) is not the checksum of its record: a torn extent (partial
// write), a stale one (its units hold another write now, or never got this
// one) and bit rot all fail it.
Status CheckValueSum(const Entry& e, uint64_t digest) {
  if (digest == e.value_checksum) return Status::Ok();
  const size_t n = e.extents.size();
  std::string where;
  for (size_t i = 0; i < n && i < 4; ++i) {
    const ExtentRef& x = e.extents[i];
    where += std::string(i == 0 ? "" : ", ") + "drive " + std::to_string(x.drive) + " units " +
             std::to_string(x.unit) + ".." + std::to_string(x.unit + x.units - 1);
  }
  if (n > 4) where += ", ...";
  return Corruption("get " + KeyForLog(e.key) + ": value checksum mismatch over " + std::to_string(e.value_bytes) +
                    " bytes in " + std::to_string(n) + " extent(s) (" + where +
                    "): a torn or lost write, a stale extent or bit rot");
}

namespace {

// Reads the whole of `e` into dst (e.value_bytes long) and checks it.
Status ReadExtents(ExtentStore::Impl& s, const Entry& e, std::span<const iovec> dst) {
  ChecksumStream sum;
  MEMKV_RETURN_IF_ERROR(ReadValueRange(s, e, 0, dst, &sum));
  return CheckValueSum(e, sum.Digest());
}

}  // namespace

// Pins the entry of `key` and marks it used; NotFound on a miss.
Result<std::shared_ptr<Entry>> PinForRead(ExtentStore::Impl& s, std::string_view key) {
  std::lock_guard<std::mutex> lock(s.mu);
  s.counters.gets++;
  auto it = s.index.find(key);
  if (it == s.index.end() || s.ExpiredLocked(*it->second)) {
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
Status FinishRead(ExtentStore::Impl& s, const std::shared_ptr<Entry>& e, const Status& read, bool counted) {
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
    } else if (read.code() == StatusCode::kAuthFailed) {
      s.counters.decrypt_failures++;
      // Once per value: it is dropped here, so it fails no second read.
      if (e->linked) {
        LOG_WARN_EVERY_C("drive", 10) << "extent store: " << read.message() << "; the value is dropped";
      }
      s.UnlinkLocked(e.get());
    }
  }
  if (!e->linked && e->pins == 0 && e->units_owned) {
    s.FreeUnitsLocked(e->extents);
    e->units_owned = false;
  }
  if (read.ok()) return read;
  return NotFound("key " + KeyForLog(e->key) + " not readable: " + read.message());
}

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
    (void)FinishRead(*impl_, e, Status::Ok(), /*counted=*/false);  // only unpins: returns the Ok it is given
    return too;
  }
  Status read = ReadExtents(*impl_, *e, buffer);
  MEMKV_RETURN_IF_ERROR(FinishRead(*impl_, e, read));
  return ValueInfo{
      .size_bytes = e->value_bytes, .checksum = e->value_checksum, .generation = e->generation, .attrs = e->attrs};
}

Result<ValueInfo> ExtentStore::Stat(std::string_view key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->index.find(key);
  if (it == impl_->index.end() || impl_->ExpiredLocked(*it->second)) {
    return NotFound("key " + KeyForLog(key) + " not present");
  }
  const Entry& e = *it->second;
  return ValueInfo{
      .size_bytes = e.value_bytes, .checksum = e.value_checksum, .generation = e.generation, .attrs = e.attrs};
}

bool ExtentStore::Exists(std::string_view key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->index.find(key);
  return it != impl_->index.end() && !impl_->ExpiredLocked(*it->second);
}

std::vector<SegmentSeal> ExtentStore::Seals(std::string_view key) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->index.find(key);
  if (it == impl_->index.end()) return {};
  return it->second->seals;
}

std::optional<uint64_t> ExtentStore::ValueSize(std::string_view key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->index.find(key);
  if (it == impl_->index.end() || impl_->ExpiredLocked(*it->second)) return std::nullopt;
  return it->second->value_bytes;
}

void ExtentStore::OfferKeys(KeyPage* page) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
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
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->counters.deletes++;
  }
  return op.status;
}

namespace {

// What a victim's extents give back, in whole units (an empty value frees a
// journal record: counted as one byte).
uint64_t FreedBytes(const Entry& e) {
  uint64_t n = 0;
  for (const ExtentRef& x : e.extents) n += x.units;
  return std::max<uint64_t>(n * kDriveUnitBytes, 1);
}

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

// Eviction's passes over the LRU list, coldest first: expired values,
// evict_first ones, the others, then those `spare` asked to keep.
enum EvictPass { kPassExpired, kPassFirst, kPassNormal, kPassSpared };

// Whether `pass` takes `e` (*expired: whether its TTL has run out). Pinned
// values whose TTL runs, and values being read (evicting frees nothing now),
// are never taken.
bool TakenInPass(const Entry& e, int pass, int64_t now, const std::function<bool(std::string_view)>& spare,
                 bool* expired) {
  *expired = e.attrs.expired(now);
  if (e.pins > 0 || (!*expired && e.attrs.retention == Retention::kPinned)) return false;
  const bool spared = !*expired && spare && spare(e.key);
  switch (pass) {
    case kPassExpired: return *expired;
    case kPassFirst: return !*expired && !spared && e.attrs.retention == Retention::kEvictFirst;
    case kPassNormal: return !*expired && !spared && e.attrs.retention == Retention::kNormal;
    default: return spared;
  }
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
    std::lock_guard<std::mutex> lock(s.mu);
    const int64_t now = s.clock->NowMillis();
    uint64_t freed = 0;
    // EvictPass's passes, coldest first.
    for (int pass = kPassExpired; pass <= kPassSpared && freed < bytes; ++pass) {
      for (auto it = s.lru.rbegin(); it != s.lru.rend() && freed < bytes; ++it) {
        const Entry* e = *it;
        bool expired = false;
        if (!TakenInPass(*e, pass, now, spare, &expired)) continue;
        victims.push_back(Victim(*e, expired));
        generations.push_back(e->generation);
        freed += FreedBytes(*e);
      }
    }
  }
  if (victims.empty()) {
    return ResourceExhausted("nothing to evict: " + std::to_string(Stats().keys) +
                             " values, all being read or pinned");
  }
  Status first_error;
  std::vector<RemovedValue> evicted = DeleteVictims(s, std::move(victims), generations, &first_error);
  {
    std::lock_guard<std::mutex> lock(s.mu);
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
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.tenants == nullptr) return victims;
    const uint32_t t = s.tenants->Find(key);
    if (t == TenantMap::kNone) return victims;
    const uint64_t quota = (*s.tenants)[t].drive_quota_bytes;
    const TenantUsage& usage = s.tenant_usage[t];
    auto current = s.index.find(key);
    const uint64_t replaced =
        current != s.index.end() && current->second->tenant == t ? current->second->value_bytes : 0;
    const uint64_t used = usage.drive_bytes - replaced;
    if (quota == 0 || used + bytes <= quota) return victims;
    if (bytes > quota) {
      s.tenant_usage[t].quota_refusals++;
      return ResourceExhausted(s.TenantQuotaMessageLocked(t, "a value of " + std::to_string(bytes) +
                                                                 " bytes is larger than the whole quota"));
    }
    const uint64_t need = used + bytes - quota;
    const int64_t now = s.clock->NowMillis();
    uint64_t freed = 0;
    // As EvictColdestValues, among the tenant's values only (never `key`'s,
    // which the put replaces), counting value bytes as the quota does.
    for (int pass = kPassExpired; pass <= kPassSpared && freed < need; ++pass) {
      for (auto it = s.lru.rbegin(); it != s.lru.rend() && freed < need; ++it) {
        const Entry* e = *it;
        if (e->tenant != t || e->key == key || e->value_bytes == 0) continue;
        bool expired = false;
        if (!TakenInPass(*e, pass, now, spare, &expired)) continue;
        victims.push_back(Victim(*e, expired));
        generations.push_back(e->generation);
        freed += e->value_bytes;
      }
    }
    if (freed < need) {
      s.tenant_usage[t].quota_refusals++;
      return ResourceExhausted(s.TenantQuotaMessageLocked(
          t, "a put of " + std::to_string(bytes) + " bytes needs " + std::to_string(need) +
                 " bytes freed and what is left is pinned or being read"));
    }
  }
  Status first_error;
  std::vector<RemovedValue> evicted = DeleteVictims(s, std::move(victims), generations, &first_error);
  {
    std::lock_guard<std::mutex> lock(s.mu);
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
    std::lock_guard<std::mutex> lock(s.mu);
    const int64_t now = s.clock->NowMillis();
    for (auto it = s.by_expiry.begin(); it != s.by_expiry.end() && victims.size() < max_entries; ++it) {
      const Entry* e = it->second;
      if (!e->attrs.expired(now)) break;  // soonest first: the rest run later
      victims.push_back(Victim(*e, true));
      generations.push_back(e->generation);
    }
  }
  Status ignored;  // a failed delete leaves the value a miss; the next sweep tries again
  std::vector<RemovedValue> removed = DeleteVictims(s, std::move(victims), generations, &ignored);
  std::lock_guard<std::mutex> lock(s.mu);
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
  std::lock_guard<std::mutex> lock(s.mu);
  ExtentStoreStats out = s.counters;
  out.store_uuid = s.store_uuid;
  out.sync = s.options.sync;
  out.block_size_bytes = s.block_bytes;
  out.io_engine = std::string(s.io->name());
  out.open_nanos = s.open_nanos;
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

bool ExtentStore::BuffersPut(uint64_t value_bytes) const { return value_bytes <= kBufferedValueBytes; }

SyncMode ExtentStore::sync_mode() const { return impl_->options.sync; }

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
