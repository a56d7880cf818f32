// Lock-free metric cells for the data path: Histogram (fixed buckets) and
// Counter (a monotonic sum).
//
// Both are written from many threads at once and read rarely (a scrape), so
// the write side is optimised and the read side pays: each cell keeps kShards
// copies of its atomics, one per cache-line-aligned shard, and a thread always
// writes the shard picked by its thread-local index (internal::ThisThreadShard).
// A write is a relaxed fetch_add on a line that, with at most kShards writer
// threads, no other thread writes: no lock, no shared cache-line ping-pong.
// A read (Value, Snapshot) sums the shards with relaxed loads.
//
// Thread-safety: Observe/Add/Value/Snapshot may be called from any thread at
// any time. A reader running concurrently with writers sees each increment
// either entirely or not at all, and bucket counts that are consistent with
// the count (count is derived from them); the sum may lag or lead the counts
// by the observations in flight. Moving a cell while other threads use it is a
// bug, as for any object.
//
// Ownership: cells are plain values owned by whoever records into them (the
// server's per-subsystem stats structs); the exporter only reads them.
#ifndef MEMKV_METRICS_HISTOGRAM_H_
#define MEMKV_METRICS_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "memkv/status.h"

namespace memkv::metrics {

// Copies of each cell; more writer threads than this share shards (still
// correct, merely contended).
inline constexpr size_t kShards = 16;
inline constexpr size_t kCacheLineBytes = 64;
// Upper bounds per histogram, not counting the implicit +Inf bucket.
inline constexpr size_t kMaxBounds = 64;

// Latency bounds in nanoseconds, 1 µs .. 10 s in 1-2-5 steps (22 bounds).
// Export them with a divisor of kNanosPerSecond under a `_seconds` name.
std::span<const uint64_t> LatencyBoundsNanos();
// Size bounds in bytes, 64 B .. 1 GiB in powers of 4 (13 bounds).
std::span<const uint64_t> SizeBoundsBytes();
inline constexpr double kNanosPerSecond = 1e9;

namespace internal {
// This thread's shard in [0, kShards): assigned round-robin on the thread's
// first call and fixed for its lifetime.
size_t ThisThreadShard();
}  // namespace internal

// A monotonic uint64 sum (requests served, bytes written, errors).
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void Add(uint64_t n = 1) {
    slots_[internal::ThisThreadShard()].value.fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t Value() const;

 private:
  struct alignas(kCacheLineBytes) Slot {
    std::atomic<uint64_t> value{0};
  };
  std::array<Slot, kShards> slots_;
};

// What a Histogram held at one moment, in the Prometheus shape.
struct HistogramSnapshot {
  std::vector<uint64_t> bounds;      // upper bounds (inclusive), strictly ascending
  std::vector<uint64_t> cumulative;  // cumulative[i]: observations <= bounds[i]
  uint64_t count = 0;                // all observations, the +Inf bucket included
  uint64_t sum = 0;                  // sum of observed values (wraps after 2^64)
};

// Counts observations into buckets with fixed upper bounds: a value v lands
// in the first bucket whose bound is >= v (so v == bound counts under that
// bound's `le`), or in the +Inf bucket when it exceeds every bound.
class Histogram {
 public:
  // InvalidArgument unless `bounds` has 1..kMaxBounds strictly ascending values.
  static Result<Histogram> Create(std::span<const uint64_t> bounds);
  // The common shapes; these cannot fail.
  static Histogram ForLatencyNanos() { return Histogram(LatencyBoundsNanos()); }
  static Histogram ForSizesBytes() { return Histogram(SizeBoundsBytes()); }
  static Status ValidateBounds(std::span<const uint64_t> bounds);

  Histogram(Histogram&&) = default;
  Histogram& operator=(Histogram&&) = default;

  void Observe(uint64_t value);
  HistogramSnapshot Snapshot() const;
  std::span<const uint64_t> bounds() const { return bounds_; }

 private:
  // One shard's atomics: bucket counts [0, bounds.size()] (the last is +Inf),
  // then the sum; padded to whole cache lines so shards never share one.
  struct alignas(kCacheLineBytes) Line {
    std::array<std::atomic<uint64_t>, kCacheLineBytes / sizeof(uint64_t)> cells{};
  };
  static constexpr size_t kCellsPerLine = kCacheLineBytes / sizeof(uint64_t);

  explicit Histogram(std::span<const uint64_t> valid_bounds);
  std::atomic<uint64_t>& Cell(size_t shard, size_t index) {
    return lines_[shard * lines_per_shard_ + index / kCellsPerLine].cells[index % kCellsPerLine];
  }
  const std::atomic<uint64_t>& Cell(size_t shard, size_t index) const {
    return lines_[shard * lines_per_shard_ + index / kCellsPerLine].cells[index % kCellsPerLine];
  }
  size_t SumIndex() const { return bounds_.size() + 1; }

  std::vector<uint64_t> bounds_;
  size_t lines_per_shard_ = 0;
  std::vector<Line> lines_;  // kShards * lines_per_shard_
};

}  // namespace memkv::metrics

#endif  // MEMKV_METRICS_HISTOGRAM_H_
