// ExtentStore: the read path. A value's extents read into staging buffers
// and decoded by the store's codec into the caller's memory, checked against
// its checksum (ReadValueRange, shared with ExtentReader); the read pins;
// Get, GetInto, GetIov and the lookups that read no bytes (Stat, Exists,
// Seals, ValueSize).
#include <algorithm>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "base/iov.h"
#include "base/log.h"
#include "drive/extent_store_impl.h"

namespace memkv::drive {

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
  MutexLock lock(s.mu);
  s.counters.gets++;
  auto it = s.index.find(key);
  if (it == s.index.end() || s.ExpiredLocked(*it->second)) {
    s.counters.misses++;
    return NotFound("key " + KeyForLog(key) + " not present");
  }
  std::shared_ptr<Entry> e = it->second;
  s.policies.PinReader(*e, /*linked=*/true);
  s.policies.OnTouch(*e, 0);  // the drives' pins keep the expiry they were written with
  return e;
}

// Drops the pin; on a failed read the value is dropped from the index (a
// corrupt extent stays corrupt) and the miss is counted. `counted`: false
// when no read was attempted.
Status FinishRead(ExtentStore::Impl& s, const std::shared_ptr<Entry>& e, const Status& read, bool counted) {
  MutexLock lock(s.mu);
  s.policies.UnpinReader(*e, e->linked);
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
  MutexLock lock(impl_->mu);
  auto it = impl_->index.find(key);
  if (it == impl_->index.end() || impl_->ExpiredLocked(*it->second)) {
    return NotFound("key " + KeyForLog(key) + " not present");
  }
  const Entry& e = *it->second;
  return ValueInfo{
      .size_bytes = e.value_bytes, .checksum = e.value_checksum, .generation = e.generation, .attrs = e.attrs};
}

bool ExtentStore::Exists(std::string_view key) {
  MutexLock lock(impl_->mu);
  auto it = impl_->index.find(key);
  return it != impl_->index.end() && !impl_->ExpiredLocked(*it->second);
}

std::vector<SegmentSeal> ExtentStore::Seals(std::string_view key) const {
  MutexLock lock(impl_->mu);
  auto it = impl_->index.find(key);
  if (it == impl_->index.end()) return {};
  return it->second->seals;
}

std::optional<uint64_t> ExtentStore::ValueSize(std::string_view key) {
  MutexLock lock(impl_->mu);
  auto it = impl_->index.find(key);
  if (it == impl_->index.end() || impl_->ExpiredLocked(*it->second)) return std::nullopt;
  return it->second->value_bytes;
}

}  // namespace memkv::drive
