#include "client/access_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "base/checksum.h"
#include "base/errno_text.h"
#include "base/json.h"
#include "base/thread_name.h"

namespace memkv::client {
namespace {

uint64_t KeyHash(std::string_view key) { return Checksum(key.data(), key.size()); }

// (0, 1] -> the hash bound below which a key is sampled.
uint64_t SampleBound(double sample) {
  if (!(sample < 1.0)) return UINT64_MAX;
  if (!(sample > 0.0)) return 0;
  return static_cast<uint64_t>(std::ldexp(sample, 64));
}

// Seconds since the epoch with six decimals: "1764865755.123456".
std::string UnixSeconds(int64_t micros) {
  char text[32];
  std::snprintf(text, sizeof text, "%" PRId64 ".%06" PRId64, micros / 1'000'000, micros % 1'000'000);
  return text;
}

}  // namespace

std::string AccessOutcome(std::string_view op, StatusCode code) {
  const bool write = op == "put" || op == "batch_put";
  switch (code) {
    case StatusCode::kOk:
      return write ? "stored" : op == "delete" ? "deleted" : "hit";
    case StatusCode::kNotFound:
      return "miss";
    case StatusCode::kBusy:
      if (write) return "shed";
      break;
    default:
      break;
  }
  return "error:" + std::string(StatusCodeName(code));
}

std::string AccessKeyHash(std::string_view key) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, KeyHash(key));
  return text;
}

int64_t AccessNowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<std::unique_ptr<AccessLog>> AccessLog::Open(const AccessLogSettings& settings) {
  const int fd = ::open(settings.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return InvalidArgument("access_log_path: open(" + settings.path + "): " + ErrnoText(errno));
  }
  return std::unique_ptr<AccessLog>(new AccessLog(settings, fd));
}

AccessLog::AccessLog(const AccessLogSettings& settings, int fd)
    : settings_(settings), sample_bound_(SampleBound(settings.sample)), fd_(fd) {
  writer_ = std::thread([this] { WriterLoop(); });
}

AccessLog::~AccessLog() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  writer_.join();
  ::close(fd_);
}

void AccessLog::SetContext(std::string tenant, std::string identity) {
  MutexLock lock(mu_);
  tenant_ = std::move(tenant);
  identity_ = std::move(identity);
}

bool AccessLog::Sampled(std::string_view key) const {
  return sample_bound_ == UINT64_MAX || KeyHash(key) < sample_bound_;
}

void AccessLog::Append(std::string_view op, int64_t start_unix_micros, Nanos latency, size_t keys,
                       std::span<const AccessItem> items) {
  if (items.empty()) return;
  const int64_t second = start_unix_micros / 1'000'000;
  MutexLock lock(mu_);
  if (second != window_second_) {
    window_second_ = second;
    window_lines_ = 0;
  }
  if (window_lines_ + items.size() > settings_.max_lines_per_sec) {
    dropped_rate_.fetch_add(items.size(), std::memory_order_relaxed);
    return;
  }
  if (pending_.size() >= settings_.buffer_bytes) {
    dropped_buffer_.fetch_add(items.size(), std::memory_order_relaxed);
    return;
  }
  // The fields every line of the call shares, then each key's own.
  const uint64_t call = ++call_;
  std::string common = "{\"time\":" + UnixSeconds(start_unix_micros) + ",\"tenant\":" + JsonQuote(tenant_) +
                       ",\"identity\":" + JsonQuote(identity_) + ",\"op\":\"" + std::string(op) + "\"";
  const std::string tail = ",\"latency_us\":" + std::to_string(latency > 0 ? latency / 1000 : 0) +
                           ",\"call\":" + std::to_string(call) + ",\"keys\":" + std::to_string(keys) + "}\n";
  const bool was_empty = pending_.empty();
  for (const AccessItem& item : items) {
    pending_ += common;
    pending_ += ",\"key_hash\":\"" + AccessKeyHash(item.key) + "\",\"size\":" + std::to_string(item.size_bytes) +
                ",\"outcome\":\"" + AccessOutcome(op, item.code) + "\"";
    pending_ += tail;
  }
  window_lines_ += items.size();
  pending_lines_ += items.size();
  ++appended_;
  if (was_empty) cv_.notify_all();
}

void AccessLog::Flush() {
  MutexLock lock(mu_);
  const uint64_t target = appended_;
  lock.Wait(cv_, [&]() MEMKV_REQUIRES(mu_) { return written_ >= target || stop_; });
}

AccessLogCounts AccessLog::Counts() const {
  return {lines_.load(std::memory_order_relaxed), dropped_rate_.load(std::memory_order_relaxed),
          dropped_buffer_.load(std::memory_order_relaxed), dropped_write_.load(std::memory_order_relaxed)};
}

// Swaps the buffer out under the lock and writes it outside it, so callers
// appending meanwhile never wait on the disk.
void AccessLog::WriterLoop() {
  SetThreadName("memkv-accesslog");
  ScopedLogTarget log_scope(settings_.log_target);
  bool warned = false;
  std::string batch;
  MutexLock lock(mu_);
  while (true) {
    lock.Wait(cv_, [&]() MEMKV_REQUIRES(mu_) { return !pending_.empty() || stop_; });
    if (pending_.empty() && stop_) break;
    batch.clear();
    batch.swap(pending_);
    const uint64_t lines = pending_lines_;
    const uint64_t upto = appended_;
    pending_lines_ = 0;
    lock.Unlock();
    size_t done = 0;
    int err = 0;
    while (done < batch.size()) {
      const ssize_t n = ::write(fd_, batch.data() + done, batch.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        err = n < 0 ? errno : EIO;
        break;
      }
      done += static_cast<size_t>(n);
    }
    if (err == 0) {
      lines_.fetch_add(lines, std::memory_order_relaxed);
    } else {
      dropped_write_.fetch_add(lines, std::memory_order_relaxed);
      if (!warned) {
        LOG_WARN_C("client") << "access log " << settings_.path << ": write: " << ErrnoText(err)
                             << "; its lines are dropped (memkv_client_access_log_dropped_total{reason=\"write\"})";
        warned = true;
      }
    }
    lock.Lock();
    written_ = upto;
    cv_.notify_all();
  }
}

}  // namespace memkv::client
