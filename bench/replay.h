// memkv-bench --replay: re-issues a client access log (access_log_path;
// docs/client-library.md, "Access log") against MemKV servers and reports
// what they did with it (docs/benchmarks.md, "Replay").
//
// The log's lines are grouped back into calls (the lines of one call share
// its "call" number and come together), and every call is issued as the
// call it was: a get as a Get, a batch_get as a BatchGetInto of the same
// keys, a put as a Put of a value of the logged size, and so on. A key is
// "<run tag>/<key_hash>", so the replay repeats each sampled key's history
// without knowing the keys. Calls start at their logged offsets from the
// first, divided by the speed (0: as fast as the threads go), taken in
// order by `threads` threads; a call whose time has passed starts at once
// and counts as late.
//
// The report: calls and keys a second, value MiB/s, hit rate of the reads
// beside the hit rate the log recorded, sheds and errors, latency
// percentiles per op. Replayed against a server of the sample's share of
// the fleet's memory (access_log_sample x fleet memory), the hit rate is an
// estimate of the fleet's at that size.
//
// ParseAccessLog is pure; RunReplay owns its threads.
#ifndef MEMKV_BENCH_REPLAY_H_
#define MEMKV_BENCH_REPLAY_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/client.h"
#include "memkv/status.h"

namespace memkv::bench {

// One call of the log.
struct ReplayCall {
  double time_s = 0;  // when it began, seconds since the epoch
  std::string op;     // "get", "batch_put", ...
  std::vector<std::string> key_hashes;
  std::vector<uint64_t> sizes;        // per key, as logged
  std::vector<std::string> outcomes;  // per key, as logged
};

struct AccessLogFile {
  std::vector<ReplayCall> calls;  // in the log's order
  // The largest size logged for each key hash: the buffer a read needs.
  std::map<std::string, uint64_t> value_bytes;
};

// The calls of an access log's text. InvalidArgument naming the line (1-based)
// for a line that is not a JSON object with the fields of docs/client-library.md
// or an op the replay cannot issue; blank lines are skipped.
Result<AccessLogFile> ParseAccessLog(std::string_view text);

struct ReplayPlan {
  double speed = 1.0;    // 2: twice as fast as logged; 0: as fast as possible
  uint32_t threads = 4;  // calls in flight at most
  std::string key_prefix = "memkv-replay";
};

// What one op did in the replay.
struct ReplayOpStats {
  uint64_t calls = 0;
  uint64_t keys = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0;  // per call
};

struct ReplayResult {
  uint64_t calls = 0;
  uint64_t keys = 0;
  uint64_t value_bytes = 0;  // put and read back
  uint64_t reads = 0;        // keys of get, batch_get, exists, batch_exists, match_prefix, stat
  uint64_t hits = 0;         // of reads
  uint64_t logged_reads = 0;
  uint64_t logged_hits = 0;
  uint64_t stored = 0;
  uint64_t shed = 0;
  uint64_t errors = 0;       // keys whose status was neither hit, miss, stored, deleted nor shed
  uint64_t late = 0;         // calls started after their time
  double seconds = 0;        // first call to last return
  double logged_seconds = 0; // first call to last call in the log
  std::map<std::string, ReplayOpStats> ops;

  double HitRate() const { return reads > 0 ? double(hits) / double(reads) : 0; }
  double LoggedHitRate() const { return logged_reads > 0 ? double(logged_hits) / double(logged_reads) : 0; }
};

ReplayResult RunReplay(Client& client, const AccessLogFile& log, const ReplayPlan& plan);

// The report's table, and the same as JSON members (no braces).
void PrintReplay(std::FILE* out, const ReplayResult& r);
std::string ReplayJson(const ReplayResult& r);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_REPLAY_H_
