// Time as a seam: code that waits or expires things takes a Clock so tests can
// inject one. SteadyClock is the real monotonic clock. Thread-safe.
#ifndef MEMKV_BASE_CLOCK_H_
#define MEMKV_BASE_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>

namespace memkv {

using Nanos = int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Nanos NowNanos() const = 0;
};

class SteadyClock final : public Clock {
 public:
  Nanos NowNanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// The process's real monotonic clock.
inline Nanos MonotonicNanos() { return SteadyClock().NowNanos(); }

// Wall-clock time in milliseconds since the Unix epoch: for instants that
// must mean the same after a restart (a value's expiry, kept on the drives).
// Not monotonic; callers treat a step back as time standing still.
class RealtimeClock {
 public:
  virtual ~RealtimeClock() = default;
  virtual int64_t NowMillis() const = 0;
};

class SystemRealtimeClock final : public RealtimeClock {
 public:
  int64_t NowMillis() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A wall clock that moves only when told: tests of expiry.
class ManualRealtimeClock final : public RealtimeClock {
 public:
  explicit ManualRealtimeClock(int64_t now_ms = 1'700'000'000'000) : now_ms_(now_ms) {}
  int64_t NowMillis() const override { return now_ms_.load(std::memory_order_relaxed); }
  void Advance(int64_t ms) { now_ms_.fetch_add(ms, std::memory_order_relaxed); }
  void Set(int64_t now_ms) { now_ms_.store(now_ms, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace memkv

#endif  // MEMKV_BASE_CLOCK_H_
