// Logging on stderr, one line per event: "2026-11-22T10:00:00.123Z WARN  message".
//
// The threshold is process-wide and set once by main (from --log-level); the
// write itself is a single write(2) so lines from different threads never
// interleave. Thread-safe.
#ifndef MEMKV_BASE_LOG_H_
#define MEMKV_BASE_LOG_H_

#include <sstream>
#include <string_view>

namespace memkv {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Parses "debug", "info", "warn", "error", "off"; false on anything else.
bool ParseLogLevel(std::string_view text, LogLevel* out);
void LogLine(LogLevel level, std::string_view message);

namespace internal {
class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage() { LogLine(level_, stream_.str()); }
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostringstream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
// Turns the stream expression into void so MEMKV_LOG can sit in a ?: and
// needs no dangling `if`.
struct LogVoidify {
  void operator&(std::ostream&) {}
};
}  // namespace internal

}  // namespace memkv

#define MEMKV_LOG(level)                                  \
  (::memkv::LogLevel::level < ::memkv::GetLogLevel())     \
      ? (void)0                                           \
      : ::memkv::internal::LogVoidify() &                 \
            ::memkv::internal::LogMessage(::memkv::LogLevel::level).stream()

#define LOG_DEBUG MEMKV_LOG(kDebug)
#define LOG_INFO MEMKV_LOG(kInfo)
#define LOG_WARN MEMKV_LOG(kWarn)
#define LOG_ERROR MEMKV_LOG(kError)

#endif  // MEMKV_BASE_LOG_H_
