#include "metrics/histogram.h"

#include <algorithm>
#include <string>

namespace memkv::metrics {
namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;
constexpr uint64_t kS = 1000 * kMs;

constexpr uint64_t kLatencyBoundsNanos[] = {
    1 * kUs,   2 * kUs,   5 * kUs,   10 * kUs,  20 * kUs,  50 * kUs,  100 * kUs, 200 * kUs,
    500 * kUs, 1 * kMs,   2 * kMs,   5 * kMs,   10 * kMs,  20 * kMs,  50 * kMs,  100 * kMs,
    200 * kMs, 500 * kMs, 1 * kS,    2 * kS,    5 * kS,    10 * kS,
};

constexpr uint64_t kSizeBoundsBytes[] = {
    64,        256,        1 << 10,    4 << 10,   16 << 10,  64 << 10, 256 << 10,
    1ul << 20, 4ul << 20,  16ul << 20, 64ul << 20, 256ul << 20, 1ul << 30,
};

std::atomic<size_t> g_next_shard{0};

}  // namespace

std::span<const uint64_t> LatencyBoundsNanos() { return kLatencyBoundsNanos; }
std::span<const uint64_t> SizeBoundsBytes() { return kSizeBoundsBytes; }

size_t internal::ThisThreadShard() {
  thread_local const size_t shard = g_next_shard.fetch_add(1, std::memory_order_relaxed) % kShards;
  return shard;
}

uint64_t Counter::Value() const {
  uint64_t total = 0;
  for (const Slot& slot : slots_) total += slot.value.load(std::memory_order_relaxed);
  return total;
}

Status Histogram::ValidateBounds(std::span<const uint64_t> bounds) {
  if (bounds.empty() || bounds.size() > kMaxBounds) {
    return InvalidArgument("histogram bounds: " + std::to_string(bounds.size()) +
                           " given, want 1.." + std::to_string(kMaxBounds));
  }
  for (size_t i = 1; i < bounds.size(); ++i) {
    if (bounds[i] <= bounds[i - 1]) {
      return InvalidArgument("histogram bounds not strictly ascending at index " + std::to_string(i) +
                             ": " + std::to_string(bounds[i - 1]) + " then " + std::to_string(bounds[i]));
    }
  }
  return Status::Ok();
}

Result<Histogram> Histogram::Create(std::span<const uint64_t> bounds) {
  MEMKV_RETURN_IF_ERROR(ValidateBounds(bounds));
  return Histogram(bounds);
}

Histogram::Histogram(std::span<const uint64_t> valid_bounds)
    : bounds_(valid_bounds.begin(), valid_bounds.end()),
      // Buckets plus +Inf plus the sum, rounded up to whole lines.
      lines_per_shard_((valid_bounds.size() + 2 + kCellsPerLine - 1) / kCellsPerLine),
      lines_(kShards * lines_per_shard_) {}

void Histogram::Observe(uint64_t value) {
  // lower_bound: the first bound >= value, so a value equal to a bound counts
  // under that bound; past the end is the +Inf bucket.
  size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  size_t shard = internal::ThisThreadShard();
  Cell(shard, bucket).fetch_add(1, std::memory_order_relaxed);
  Cell(shard, SumIndex()).fetch_add(value, std::memory_order_relaxed);
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot snap;
  snap.bounds = bounds_;
  snap.cumulative.resize(bounds_.size());
  // Each bucket is read once and the cumulative counts and the count are
  // prefix sums of those reads, so they are monotone and agree with each other.
  uint64_t running = 0;
  for (size_t bucket = 0; bucket <= bounds_.size(); ++bucket) {
    for (size_t shard = 0; shard < kShards; ++shard) {
      running += Cell(shard, bucket).load(std::memory_order_relaxed);
    }
    if (bucket < bounds_.size()) snap.cumulative[bucket] = running;
  }
  snap.count = running;
  for (size_t shard = 0; shard < kShards; ++shard) {
    snap.sum += Cell(shard, SumIndex()).load(std::memory_order_relaxed);
  }
  return snap;
}

}  // namespace memkv::metrics
