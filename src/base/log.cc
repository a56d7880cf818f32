#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <string>

namespace memkv {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};
thread_local const LogTarget* t_target = nullptr;

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO ";
    case LogLevel::kWarn: return "WARN ";
    case LogLevel::kError: return "ERROR";
    case LogLevel::kOff: return "OFF  ";
  }
  return "?    ";
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(level, std::memory_order_relaxed); }
LogLevel GetLogLevel() {
  return t_target != nullptr ? t_target->level : g_level.load(std::memory_order_relaxed);
}

ScopedLogTarget::ScopedLogTarget(const LogTarget* target) : previous_(t_target) { t_target = target; }
ScopedLogTarget::~ScopedLogTarget() { t_target = previous_; }

bool ParseLogLevel(std::string_view text, LogLevel* out) {
  if (text == "debug") *out = LogLevel::kDebug;
  else if (text == "info") *out = LogLevel::kInfo;
  else if (text == "warn") *out = LogLevel::kWarn;
  else if (text == "error") *out = LogLevel::kError;
  else if (text == "off") *out = LogLevel::kOff;
  else return false;
  return true;
}

std::string FormatLogLine(int64_t unix_nanos, LogLevel level, std::string_view component,
                          std::string_view message) {
  constexpr int64_t kNanosPerSecond = 1'000'000'000;
  int64_t seconds = unix_nanos / kNanosPerSecond;
  int64_t millis = (unix_nanos % kNanosPerSecond) / 1'000'000;
  if (millis < 0) {  // before 1970: floor, not truncate
    seconds -= 1;
    millis += 1000;
  }
  time_t t = static_cast<time_t>(seconds);
  tm utc{};
  gmtime_r(&t, &utc);
  char stamp[96];
  std::snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(millis));
  std::string line;
  line.reserve(message.size() + component.size() + 48);
  line += stamp;
  line += LevelName(level);
  line += ' ';
  if (!component.empty()) {
    line += '[';
    line += component;
    line += "] ";
  }
  line += message;
  line += '\n';
  return line;
}

void LogLine(LogLevel level, std::string_view message) { LogLine(level, {}, message); }

void LogLine(LogLevel level, std::string_view component, std::string_view message) {
  if (t_target != nullptr && t_target->sink) {
    t_target->sink(level, component, message);
    return;
  }
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t unix_nanos = int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
  std::string line = FormatLogLine(unix_nanos, level, component, message);
  // One write(2) per line; a short write on stderr is not worth retrying.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

int64_t LogRateLimiter::Allow(Nanos now_ns, Nanos interval_ns) {
  Nanos next = next_ns_.load(std::memory_order_relaxed);
  // Losing the race to another thread that just let a line through counts as
  // suppressed too: only one line per interval gets out.
  if (now_ns < next ||
      !next_ns_.compare_exchange_strong(next, now_ns + interval_ns, std::memory_order_relaxed)) {
    suppressed_.fetch_add(1, std::memory_order_relaxed);
    return kNotAllowed;
  }
  return suppressed_.exchange(0, std::memory_order_relaxed);
}

int64_t internal::LogEveryGate(LogRateLimiter* limiter, LogLevel level, double interval_seconds) {
  if (level < GetLogLevel()) return LogRateLimiter::kNotAllowed;
  return limiter->Allow(MonotonicNanos(), static_cast<Nanos>(interval_seconds * 1e9));
}

}  // namespace memkv
