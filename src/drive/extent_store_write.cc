// ExtentStore: the write path. A value's bytes encoded by the store's codec
// into staging buffers and written to its extents (WriteValueRange, shared
// with ExtentWriter), then journaled and published: Put, PutIov, PutManyIov.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/checksum.h"
#include "base/iov.h"
#include "drive/extent_store_impl.h"

namespace memkv::drive {

// Writes value bytes [from, from + IovBytes(src)) (in waves of staging
// buffers), whole units, zero-padded. No sync: the commit leader syncs all
// drives of a batch at once (kInterval: the flusher does); a small value is
// written through the page cache. The bytes are hashed into `sum` on the way, so
// the caller can refuse a value whose bytes do not match the checksum its
// record will carry: no read could ever take them.
Status WriteValueRange(ExtentStore::Impl& s, std::string_view key, std::span<const iovec> src, uint64_t from,
                       uint64_t value_bytes, std::span<const ExtentRef> extents, bool buffered, ChecksumStream* sum,
                       bool* drive_failed, std::vector<SegmentSeal>* seals) {
  const uint64_t len = IovBytes(src);
  const std::vector<ExtentPiece> pieces = PiecesOf(extents, value_bytes, from, len);
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

void ExtentStore::Impl::CommitPuts(std::span<CommitOp* const> ops) {
  Commit(ops);
  MutexLock lock(mu);
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

// Writes a put's bytes to its extents `a` (`buffered`: through the page
// cache), checked against its checksum, and makes *op its record (not yet
// journaled). `staged`: the caller counted it (BeginStaging); Commit ends
// that, and so does a failure here. On failure frees `a`; *drive_failed
// when a drive refused the write (a retry on the other drives may succeed).
Status WritePut(ExtentStore::Impl& s, const ExtentStore::IovPut& p, Allocation a, bool staged, bool buffered,
                CommitOp* op, bool* drive_failed) {
  const uint64_t value_bytes = IovBytes(p.value);
  ChecksumStream sum;
  std::vector<SegmentSeal> seals;
  Status w = WriteValueRange(s, p.key, p.value, 0, value_bytes, a.extents, buffered, &sum, drive_failed, &seals);
  if (w.ok()) w = ChecksumMatches(p.key, value_bytes, sum.Digest(), p.checksum);
  if (!w.ok()) {
    if (staged) s.EndStaging(1);
    MutexLock lock(s.mu);
    s.FreeUnitsLocked(a.extents);
    return w;
  }
  *op = PutOp(p.key, std::move(a), value_bytes, p.checksum, p.attrs, std::move(seals));
  op->staged = staged;
  return Status::Ok();
}

// Whether a put of `value_bytes` is counted while it writes
// (BeginStaging): with SyncMode::kAlways, a value the drives buffer,
// whose write takes less than the flush a leader would wait for.
bool Stages(const ExtentStore::Impl& s, uint64_t value_bytes) {
  return s.options.sync == SyncMode::kAlways && ExtentStore::BuffersPut(value_bytes);
}

// WritePut into extents it reserves first. A value written through the
// page cache reaches the drive in the commit's fdatasync, which writes it
// back before it flushes. When a commit will run before this put joins
// one anyway (BeginStaging says busy), a value of kDirectWhenBusyBytes or
// more goes to the drive now, with O_DIRECT, while that commit runs: the
// next commit then has only its records to write before the flush.
Status StagePut(ExtentStore::Impl& s, const ExtentStore::IovPut& p, CommitOp* op, bool* drive_failed) {
  const uint64_t value_bytes = IovBytes(p.value);
  MEMKV_ASSIGN_OR_RETURN(Allocation a, s.Allocate(p.key, value_bytes));
  const bool staged = Stages(s, value_bytes);
  const bool busy = staged && s.BeginStaging(1);
  const bool buffered = ExtentStore::BuffersPut(value_bytes) && !(busy && value_bytes >= kDirectWhenBusyBytes);
  return WritePut(s, p, std::move(a), staged, buffered, op, drive_failed);
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
  std::vector<std::optional<Allocation>> room(puts.size());
  std::vector<bool> counted(puts.size(), false);  // a valid key: counted as a put
  for (size_t i = 0; i < puts.size(); ++i) {
    statuses[i] = CheckKey(puts[i].key);
    if (!statuses[i].ok()) continue;
    counted[i] = true;
    statuses[i] = Impl::CheckExtentCount(puts[i].key, IovBytes(puts[i].value), s.block_bytes);
  }
  {
    // One hold of the lock for the whole batch's counts and room: the
    // workers that commit batches side by side meet on it once per batch.
    MutexLock lock(s.mu);
    for (size_t i = 0; i < puts.size(); ++i) {
      if (counted[i]) s.counters.puts++;
      if (!statuses[i].ok()) continue;
      Result<Allocation> a = s.AllocateLockedFor(puts[i].key, IovBytes(puts[i].value));
      if (a.ok()) {
        room[i] = std::move(a).value();
      } else {
        statuses[i] = a.status();
      }
    }
  }
  // One thread writes the batch's values one after another, those the
  // drives buffer through the page cache whatever runs beside it, so that
  // they reach the drive together in the commit's one fdatasync.
  std::vector<bool> stages(puts.size(), false);
  for (size_t i = 0; i < puts.size(); ++i) stages[i] = room[i] && Stages(s, IovBytes(puts[i].value));
  (void)s.BeginStaging(size_t(std::count(stages.begin(), stages.end(), true)));
  for (size_t i = 0; i < puts.size(); ++i) {
    if (!room[i]) continue;
    bool drive_failed = false;
    const bool buffered = ExtentStore::BuffersPut(IovBytes(puts[i].value));
    statuses[i] = WritePut(s, puts[i], std::move(*room[i]), stages[i], buffered, &ops[i], &drive_failed);
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
      MutexLock lock(s.mu);
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
    MutexLock lock(s.mu);
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

}  // namespace memkv::drive
