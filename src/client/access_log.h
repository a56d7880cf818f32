// AccessLog: the client's sampled access log (ClientOptions::access_log_*;
// docs/client-library.md, "Access log"): one JSON object per line per
// sampled key of a finished call, which `memkv-bench --replay` re-issues
// against a server to size a fleet (docs/benchmarks.md, "Replay").
//
// Sampling is by key hash, not by call: a key is in the sample when its
// hash falls under access_log_sample, and then every operation on it is
// logged (its puts, its gets, its misses). A replay thus sees each sampled
// key's whole history, and its hit rate against a server of
// access_log_sample times the fleet's memory approximates the fleet's
// (spatial sampling). Every client with the same fraction samples the same
// keys, so the logs of many clients merge into one sample of the fleet.
//
// The caller's thread formats the lines and appends them to a bounded
// buffer under a short lock; the writer thread `memkv-accesslog` writes the
// buffer to the file (O_APPEND), so a call never waits on the disk. Lines
// are never dropped silently: a call whose lines exceed
// access_log_max_lines_per_sec in the current second, or do not fit the
// buffer, or fail to write, is counted (Counts()) and shown as
// memkv_client_access_log_dropped_total{reason}. A call's lines are kept or
// dropped together, so a batch replays whole or not at all.
//
// Owned by the client; every method may be called from any thread.
#ifndef MEMKV_CLIENT_ACCESS_LOG_H_
#define MEMKV_CLIENT_ACCESS_LOG_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/mutex.h"
#include "memkv/client.h"
#include "memkv/status.h"

namespace memkv::client {

struct AccessLogSettings {
  std::string path;                    // the file, appended to (created 0644)
  double sample = 0.01;                // fraction of the key space logged, (0, 1]
  uint32_t max_lines_per_sec = 1000;   // lines a second; the rest are dropped, counted
  size_t buffer_bytes = 1 << 20;       // lines waiting for the writer; past it, dropped
  const LogTarget* log_target = nullptr;  // the client's: where a write failure is logged
};

// Lines written, and calls' lines dropped by reason.
struct AccessLogCounts {
  uint64_t lines = 0;           // written to the file
  uint64_t dropped_rate = 0;    // over max_lines_per_sec
  uint64_t dropped_buffer = 0;  // the writer had fallen behind by buffer_bytes
  uint64_t dropped_write = 0;   // write() failed (disk full, ...): logged once
};

// One sampled key of a finished call.
struct AccessItem {
  std::string_view key;
  uint64_t size_bytes = 0;  // the value's: put, or read back on a hit; 0 otherwise
  StatusCode code = StatusCode::kOk;
};

// "hit" / "miss" / "stored" / "deleted" / "shed" / "error:<Code>", as the
// log writes the outcome of `code` for operation `op` ("get", "put", ...).
std::string AccessOutcome(std::string_view op, StatusCode code);
// The key_hash field: 16 lower-case hex digits of XXH3-64 of the key. A
// fingerprint, not a secret: it stands for the key without spelling it.
std::string AccessKeyHash(std::string_view key);

class AccessLog {
 public:
  // Opens (creates) the file and starts the writer; InvalidArgument naming
  // the path and errno when it cannot be opened.
  static Result<std::unique_ptr<AccessLog>> Open(const AccessLogSettings& settings);
  // Writes what is buffered, then stops the writer.
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  // The connection's tenant name ("" for admin) and cache identity tag
  // ("" when none): written into every line from now on.
  void SetContext(std::string tenant, std::string identity);

  // Whether `key` is in the sample (by its hash; the same in every process).
  bool Sampled(std::string_view key) const;
  // One call, begun at `start_unix_micros` (wall clock), that took
  // `latency`, with `keys` keys in all; `items` are its sampled keys.
  void Append(std::string_view op, int64_t start_unix_micros, Nanos latency, size_t keys,
              std::span<const AccessItem> items);
  // Waits until every line appended so far is written (or dropped).
  void Flush();
  AccessLogCounts Counts() const;

 private:
  AccessLog(const AccessLogSettings& settings, int fd);
  void WriterLoop();

  const AccessLogSettings settings_;
  const uint64_t sample_bound_;  // a key is sampled when its hash < this (UINT64_MAX: all)
  const int fd_;

  mutable Mutex mu_;
  std::condition_variable cv_;       // the writer waits for lines; Flush for the writer
  std::string pending_ MEMKV_GUARDED_BY(mu_);
  uint64_t pending_lines_ MEMKV_GUARDED_BY(mu_) = 0;
  uint64_t appended_ MEMKV_GUARDED_BY(mu_) = 0;  // batches handed to pending_
  uint64_t written_ MEMKV_GUARDED_BY(mu_) = 0;   // of those, past write()
  bool stop_ MEMKV_GUARDED_BY(mu_) = false;
  std::string tenant_ MEMKV_GUARDED_BY(mu_);
  std::string identity_ MEMKV_GUARDED_BY(mu_);
  int64_t window_second_ MEMKV_GUARDED_BY(mu_) = -1;
  uint64_t window_lines_ MEMKV_GUARDED_BY(mu_) = 0;
  uint64_t call_ MEMKV_GUARDED_BY(mu_) = 0;

  std::atomic<uint64_t> lines_{0};
  std::atomic<uint64_t> dropped_rate_{0};
  std::atomic<uint64_t> dropped_buffer_{0};
  std::atomic<uint64_t> dropped_write_{0};
  std::thread writer_;  // last: started once the members above exist
};

// The keys of one call as the client hands them to LogCall.
struct AccessKeys {
  std::span<const std::string_view> keys{};
  std::span<const std::span<const uint8_t>> values{};  // puts: sizes of the values
  const std::vector<size_t>* sizes = nullptr;        // batch gets: sizes read back
};

// The wall clock the log's "time" field is taken from.
int64_t AccessNowMicros();

// Logs one finished call whose result is `result`: a Status, a Result<T>
// or a BatchResult (statuses key by key). A MatchPrefix result n counts
// keys[0, n) as hits and the rest as misses; a Result<bool> (Exists) true
// as a hit. Nothing is done when no key is sampled.
template <typename R>
void LogCall(AccessLog& log, std::string_view op, const AccessKeys& k, const R& result, int64_t start_unix_micros,
             Nanos latency) {
  std::vector<AccessItem> items;
  for (size_t i = 0; i < k.keys.size(); ++i) {
    if (!log.Sampled(k.keys[i])) continue;
    AccessItem item{k.keys[i], i < k.values.size() ? k.values[i].size() : 0, StatusCode::kOk};
    if constexpr (std::is_same_v<R, BatchResult>) {
      item.code = i < result.statuses.size() ? result.statuses[i].code() : StatusCode::kInternal;
      if (k.sizes != nullptr && i < k.sizes->size() && item.code == StatusCode::kOk) item.size_bytes = (*k.sizes)[i];
    } else if constexpr (std::is_same_v<R, Status>) {
      item.code = result.code();
    } else {
      item.code = result.status().code();
      if (result.ok()) {
        using T = std::decay_t<decltype(*result)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (!*result) item.code = StatusCode::kNotFound;
        } else if constexpr (std::is_same_v<T, std::vector<uint8_t>>) {
          item.size_bytes = result->size();
        } else if constexpr (std::is_integral_v<T>) {
          if (op == "match_prefix") {
            if (i >= *result) item.code = StatusCode::kNotFound;
          } else {
            item.size_bytes = *result;
          }
        }
      }
    }
    items.push_back(item);
  }
  if (!items.empty()) log.Append(op, start_unix_micros, latency, k.keys.size(), items);
}

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_ACCESS_LOG_H_
