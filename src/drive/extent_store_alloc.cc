// ExtentStore: room for values. The staging buffers a put or get moves
// its bytes through, the allocation of a value's extents over the drives,
// and the geometry of a range of a value (the extent pieces and codec
// segments it touches) that the write and read paths share.
#include <algorithm>
#include <string>
#include <vector>

#include "drive/extent_store_impl.h"

namespace memkv::drive {
namespace {

// "drive 0 (/a): 0 of 12582912 bytes free; drive 1 (/b): offline (EIO ...)"
// With Impl::mu held (it guards the drives' states and allocators; a Drive cannot name it).
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

// Finds room for a value of `units` units. Extents of up to a block each go
// round-robin over the drives that take new extents, starting one further
// along for each value, so consecutive values and the extents of one value
// spread over all drives; each takes the best-fitting free run of the first
// drive (from the cursor) that has one long enough. When no drive has a run
// that long, the extent is cut: it takes the longest free run anywhere and
// the rest of the value goes on in further extents. So a value fits whenever
// enough units are free, however fragmented (up to kMaxExtentsPerValue).
Result<Allocation> AllocateLocked(ExtentStore::Impl& s, uint64_t value_bytes, std::string_view key) MEMKV_REQUIRES(s.mu) {
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

}  // namespace

// ------------------------------------------------------------ staging buffers

std::vector<uint32_t> ExtentStore::Impl::AcquireBuffers(size_t want) {
  MutexLock lock(buf_mu);
  lock.Wait(buf_cv, [&]() MEMKV_REQUIRES(buf_mu) { return !free_bufs.empty(); });
  size_t n = std::min(want, free_bufs.size());
  std::vector<uint32_t> out(free_bufs.end() - ptrdiff_t(n), free_bufs.end());
  free_bufs.resize(free_bufs.size() - n);
  return out;
}

void ExtentStore::Impl::ReleaseBuffers(const std::vector<uint32_t>& bufs) {
  {
    MutexLock lock(buf_mu);
    free_bufs.insert(free_bufs.end(), bufs.begin(), bufs.end());
  }
  buf_cv.notify_all();
}

// ------------------------------------------------------------------ extents

Status ExtentStore::Impl::CheckExtentCount(std::string_view key, uint64_t value_bytes, uint64_t block_bytes) {
  const uint64_t extents = (value_bytes + block_bytes - 1) / block_bytes;
  if (extents <= kMaxExtentsPerValue) return Status::Ok();
  return TooLarge("put " + KeyForLog(key) + ": value of " + std::to_string(value_bytes) + " bytes needs " +
                  std::to_string(extents) + " extents, more than " + std::to_string(kMaxExtentsPerValue));
}

Result<Allocation> ExtentStore::Impl::AllocateLockedFor(std::string_view key, uint64_t value_bytes) {
  MEMKV_RETURN_IF_ERROR(TenantQuotaLocked(key, value_bytes));
  return AllocateLocked(*this, value_bytes, key);
}

Result<Allocation> ExtentStore::Impl::Allocate(std::string_view key, uint64_t value_bytes) {
  MEMKV_RETURN_IF_ERROR(CheckExtentCount(key, value_bytes, block_bytes));
  MutexLock lock(mu);
  return AllocateLockedFor(key, value_bytes);
}

// ------------------------------------------------------------ range geometry

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

}  // namespace memkv::drive
