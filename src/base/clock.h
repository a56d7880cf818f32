// Time as a seam: code that waits or expires things takes a Clock so tests can
// inject one. SteadyClock is the real monotonic clock. Thread-safe.
#ifndef MEMKV_BASE_CLOCK_H_
#define MEMKV_BASE_CLOCK_H_

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

}  // namespace memkv

#endif  // MEMKV_BASE_CLOCK_H_
