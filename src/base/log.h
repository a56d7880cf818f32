// Logging on stderr, one line per event: "2026-11-22T10:00:00.123Z WARN  message",
// or with a component tag "2026-11-22T10:00:00.123Z WARN  [drive] message".
//
//   LOG_WARN << "plain";                      // no component
//   LOG_WARN_C("drive") << "tagged";          // component: a string literal
//   LOG_WARN_EVERY(10) << "repeats";          // at most one line per 10 s from this line
//   LOG_EVERY_N_SEC(kError, 1) << "...";      // any level
//   LOG_WARN_EVERY_C("drive", 10) << "...";   // both
//
// A rate-limited line is keyed by its call site (a static LogRateLimiter per
// expansion); the first line after a quiet spell ends with
// " (N similar messages suppressed)" when lines were left out meanwhile. The
// interval is measured on the monotonic clock; LogRateLimiter::Allow takes
// `now` so tests drive it without sleeping.
//
// The threshold is process-wide and set once by main (from --log-level); the
// write itself is a single write(2) so lines from different threads never
// interleave. Thread-safe.
//
// Code that runs on behalf of a library user (a memkv::Client inside someone
// else's program) installs a LogTarget for the calling thread with
// ScopedLogTarget: while it is installed, that target's threshold replaces
// the process-wide one and its sink, when set, takes the lines instead of
// stderr. So each Client logs at its own level to its own callback, and the
// server's threads are unaffected.
#ifndef MEMKV_BASE_LOG_H_
#define MEMKV_BASE_LOG_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace memkv {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void SetLogLevel(LogLevel level);
// The calling thread's threshold: its LogTarget's, else the process-wide one.
LogLevel GetLogLevel();
// Parses "debug", "info", "warn", "error", "off"; false on anything else.
bool ParseLogLevel(std::string_view text, LogLevel* out);
void LogLine(LogLevel level, std::string_view message);
// `component` empty writes no tag.
void LogLine(LogLevel level, std::string_view component, std::string_view message);
// The line LogLine writes at `unix_nanos` (since the epoch, UTC), '\n' included.
std::string FormatLogLine(int64_t unix_nanos, LogLevel level, std::string_view component,
                          std::string_view message);

// Where the lines of one thread go while a ScopedLogTarget installs it.
struct LogTarget {
  using Sink = std::function<void(LogLevel level, std::string_view component, std::string_view message)>;
  LogLevel level = LogLevel::kWarn;
  Sink sink;  // empty: stderr, formatted as FormatLogLine does
};

// Installs `target` (which must outlive the scope) for the calling thread and
// puts back the previous one on destruction; scopes nest.
class ScopedLogTarget {
 public:
  explicit ScopedLogTarget(const LogTarget* target);
  ~ScopedLogTarget();
  ScopedLogTarget(const ScopedLogTarget&) = delete;
  ScopedLogTarget& operator=(const ScopedLogTarget&) = delete;

 private:
  const LogTarget* previous_;
};

// Lets through at most one line per interval; one per call site (see the
// macros). Thread-safe and lock-free.
class LogRateLimiter {
 public:
  static constexpr int64_t kNotAllowed = -1;
  constexpr LogRateLimiter() = default;
  // At `now_ns`: kNotAllowed when a line was let through less than
  // `interval_ns` ago (the line is counted as suppressed), else the number of
  // lines suppressed since the last one let through.
  int64_t Allow(Nanos now_ns, Nanos interval_ns);

 private:
  std::atomic<Nanos> next_ns_{std::numeric_limits<Nanos>::min()};  // earliest next line
  std::atomic<int64_t> suppressed_{0};
};

namespace internal {
class LogMessage {
 public:
  // `component` must outlive the message (a string literal does).
  explicit LogMessage(LogLevel level, std::string_view component = {}, int64_t suppressed = 0)
      : level_(level), component_(component), suppressed_(suppressed) {}
  ~LogMessage() {
    if (suppressed_ > 0) stream_ << " (" << suppressed_ << " similar messages suppressed)";
    LogLine(level_, component_, stream_.str());
  }
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostringstream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::string_view component_;
  int64_t suppressed_;
  std::ostringstream stream_;
};
// For a rate-limited call site: kNotAllowed below the threshold (without
// touching the limiter), else what limiter->Allow says now.
int64_t LogEveryGate(LogRateLimiter* limiter, LogLevel level, double interval_seconds);
// Turns the stream expression into void so MEMKV_LOG can sit in a ?: and
// needs no dangling `if`.
struct LogVoidify {
  void operator&(std::ostream&) {}
};
}  // namespace internal

}  // namespace memkv

#define MEMKV_LOG_C(level, component)                                 \
  (::memkv::LogLevel::level < ::memkv::GetLogLevel())                 \
      ? (void)0                                                       \
      : ::memkv::internal::LogVoidify() &                             \
            ::memkv::internal::LogMessage(::memkv::LogLevel::level, component).stream()
#define MEMKV_LOG(level) MEMKV_LOG_C(level, {})

// The lambda gives each expansion its own static limiter. The for statement
// runs its body at most once and, unlike an `if`, cannot capture a caller's
// `else`.
#define MEMKV_LOG_EVERY_C(level, seconds, component)                                           \
  for (int64_t memkv_log_suppressed_ = ::memkv::internal::LogEveryGate(                        \
           []() -> ::memkv::LogRateLimiter* {                                                  \
             static ::memkv::LogRateLimiter limiter;                                           \
             return &limiter;                                                                  \
           }(),                                                                                \
           ::memkv::LogLevel::level, (seconds));                                               \
       memkv_log_suppressed_ >= 0; memkv_log_suppressed_ = ::memkv::LogRateLimiter::kNotAllowed) \
  ::memkv::internal::LogMessage(::memkv::LogLevel::level, component, memkv_log_suppressed_).stream()

#define LOG_DEBUG MEMKV_LOG(kDebug)
#define LOG_INFO MEMKV_LOG(kInfo)
#define LOG_WARN MEMKV_LOG(kWarn)
#define LOG_ERROR MEMKV_LOG(kError)

#define LOG_DEBUG_C(component) MEMKV_LOG_C(kDebug, component)
#define LOG_INFO_C(component) MEMKV_LOG_C(kInfo, component)
#define LOG_WARN_C(component) MEMKV_LOG_C(kWarn, component)
#define LOG_ERROR_C(component) MEMKV_LOG_C(kError, component)

#define LOG_EVERY_N_SEC(level, seconds) MEMKV_LOG_EVERY_C(level, seconds, {})
#define LOG_WARN_EVERY(seconds) MEMKV_LOG_EVERY_C(kWarn, seconds, {})
#define LOG_WARN_EVERY_C(component, seconds) MEMKV_LOG_EVERY_C(kWarn, seconds, component)

#endif  // MEMKV_BASE_LOG_H_
