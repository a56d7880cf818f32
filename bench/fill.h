// memkv-bench --fill: what the DRAM pool spends to hold a byte of value.
//
// For each value size: a freshly spawned server (memory mode, --pool) is
// filled with distinct keys by --conns client threads (batched puts below
// 1 MiB) until the pool is full: the server reports its first eviction, or a
// round of puts adds no value bytes. The fill goes in rounds sized from the
// free bytes the server reports (GET /v1/status between rounds, outside the
// timing), at most 1/16 of the pool each, so it overshoots the first
// eviction by at most that much. Then the server's "memory" object is read
// (used_bytes / value_bytes is the figure with a target) and its resident
// memory (VmRSS + HugetlbPages), so the index on the heap shows too.
//
// The reference, in the same run, size by size after memkv's server has
// stopped: a spawned redis-server given exactly the keys memkv ended up
// holding, same values, by pipelined SETs on one connection; its INFO memory
// used_memory before and after, and its resident memory.
//
// Runs on main's thread; starts the fill threads itself.
#ifndef MEMKV_BENCH_FILL_H_
#define MEMKV_BENCH_FILL_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "bench/admin_status.h"
#include "bench/memkv_server.h"
#include "bench/options.h"
#include "bench/report.h"

namespace memkv::bench {

// The reference's side of one size.
struct RedisFill {
  uint64_t values = 0;       // SETs sent (= memkv's values)
  uint64_t value_bytes = 0;  // values x size
  uint64_t db_keys = 0;      // DBSIZE after the fill
  uint64_t used_before = 0;  // INFO memory used_memory
  uint64_t used_after = 0;
  uint64_t rss_before = 0;
  uint64_t rss_after = 0;
  double seconds = 0;        // the pipelined SETs, wall time
  uint64_t errors = 0;       // SETs not answered +OK, missing keys

  double UsedPerValueByte() const;  // (used_after - used_before) / value_bytes
  double RssPerValueByte() const;   // rss_after / value_bytes
  double MiBPerSecond() const;
};

// memkv's side of one size.
struct FillRow {
  uint64_t size_bytes = 0;
  uint32_t conns = 0;
  uint32_t batch = 0;      // keys per BatchPut (1: plain Put)
  uint64_t puts = 0;       // keys sent
  uint64_t put_errors = 0;
  uint32_t rounds = 0;
  double seconds = 0;      // wall time of the rounds' puts
  PoolStatus pool;         // the server's report at the end
  uint64_t rss_before = 0;  // the server's resident bytes before the first put
  uint64_t rss_after = 0;
  uint64_t verified = 0;   // stored values read back and compared byte-exact
  uint64_t verify_errors = 0;
  uint64_t other_errors = 0;  // status reads that failed, a non-zero exit, no eviction
  std::optional<RedisFill> redis;

  // used_bytes / value_bytes: the figure the target is about.
  double PoolPerValueByte() const;
  double RssPerValueByte() const;   // rss_after / value_bytes
  // (rss_after - pool_bytes) / value_bytes: what the server holds beside the
  // pool (the index and buffers on the heap, the binary), once every pool
  // page has been touched.
  double BeyondPoolPerValueByte() const;
  double OpsPerSecond() const;
  double MiBPerSecond() const;
  uint64_t Errors() const;
};

// The target for pool bytes per value byte: 1.10 below 1 MiB, 1.05 from 1 MiB.
double FillTarget(uint64_t size_bytes);

// The whole --fill run: prints `machine` and the tables, writes the JSON.
// Returns the exit status.
int RunFill(const BenchOptions& options, const SpawnEnv& env, const RunFacts& machine);

// ---- fill_report.cc ----

// Facts of the run that the tables and the JSON name.
struct FillRunInfo {
  RunFacts machine;
  uint64_t pool_bytes = 0;
  bool prefault = true;
  std::string memkv_binary;
  std::string redis_binary;   // empty: no reference
  std::string redis_version;
  std::string redis_allocator;
  std::string redis_missing;  // why there is no reference, when there is none
};

void PrintFillHeader(std::FILE* out, const FillRunInfo& info, uint32_t conns);
void PrintFillProgress(std::FILE* out, size_t done, size_t total, const FillRow& row);
void PrintFillTables(std::FILE* out, const FillRunInfo& info, const std::vector<FillRow>& rows);
std::string FillJson(const FillRunInfo& info, const std::vector<FillRow>& rows, uint64_t total_errors);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_FILL_H_
