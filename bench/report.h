// What memkv-bench prints and writes: the facts of the run (commit, build,
// machine), one table per op with memkv beside the raw reference (and Redis
// with --peer redis), progress lines on a terminal, and the JSON file with
// every cell and every repetition.
//
// Plain functions over plain structs; called from main's thread only.
#ifndef MEMKV_BENCH_REPORT_H_
#define MEMKV_BENCH_REPORT_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/text_file.h"
#include "bench/measure.h"
#include "memkv/status.h"

namespace memkv::bench {

// The run's facts, printed first and recorded in the JSON.
struct RunFacts {
  std::string commit;      // git rev-parse --short HEAD, or "unknown"
  std::string build_type;  // CMAKE_BUILD_TYPE of this binary
  std::string cpu_model;
  unsigned cores = 0;
  std::string kernel;  // uname: sysname release machine
  std::string transport = "tcp";
  std::string target;  // "spawned <binary>" or the --servers list
  std::string started_utc;
  double seconds_per_cell = 0;
  uint32_t repeat = 1;
  uint64_t pool_bytes = 0;
  bool pool_warmed = false;
  bool prefault = true;  // memory.prefault of the spawned server
  uint32_t batch = 1;    // --batch: values per call asked for
  std::string redis_version;  // --peer redis: INFO's redis_version; empty without
  std::string redis;          // --peer redis: "<binary> at 127.0.0.1:PORT"
  std::string redis_persistence = "--appendonly no";  // --peer redis: its persistence flags
  std::string storage = "memory";  // the spawned server's storage.mode (and sync): "file, sync interval"
};

// Gathers commit (from `source_dir`), CPU, cores, kernel and the time.
RunFacts GatherFacts(const std::string& source_dir, const std::string& build_type);

// One row of a table: one op at one size and connection count.
struct Row {
  std::string op;  // "put" or "get"
  uint64_t size_bytes = 0;
  uint32_t conns = 0;
  uint32_t batch = 1;               // values per call in this cell (sweep.h, CellBatch)
  std::optional<CellResult> memkv;  // the median repetition
  std::optional<CellResult> raw;
  std::optional<CellResult> redis;  // absent without --peer redis
  std::vector<CellResult> memkv_all;  // every repetition
  std::vector<CellResult> raw_all;
  std::vector<CellResult> redis_all;
  uint64_t working_set_keys = 0;
  uint64_t keys_verified = 0;  // the verify pass after the put (or fill)
  uint64_t verify_errors = 0;
  uint64_t connections_opened = 0;  // by the memkv client of this cell

  // Failed operations of every repetition of every target, and the verify
  // pass's errors.
  uint64_t Errors() const;
};

void PrintFacts(std::FILE* out, const RunFacts& facts);
// The first two lines of PrintFacts (commit, build, machine), which every
// mode prints; `program` names the mode ("memkv-bench --fill").
void PrintMachine(std::FILE* out, const std::string& program, const RunFacts& facts);
// The machine's facts as members of the object `w` is in (for --fill and
// --fresh, whose JSON is built with JsonWriter).
void WriteMachineJson(JsonWriter& w, const RunFacts& facts);
// Writes `text` to `path` (replacing it); IoError naming the path (base/text_file.h).
using memkv::WriteTextFile;
// One table per op present in `rows`, in the order of first appearance;
// `redis` adds Redis's columns.
void PrintTables(std::FILE* out, const std::vector<Row>& rows, bool redis);
// "[3/28] put 2 MiB x4: memkv 1234 MiB/s, raw 2345 MiB/s (0.53x)[, redis ...]"
void PrintProgress(std::FILE* out, size_t done, size_t total, const Row& row);

// `auth_cost_json` is a JSON array (auth_cost.h), written as "auth_cost".
Status WriteJson(const std::string& path, const RunFacts& facts, const std::vector<Row>& rows,
                 const std::string& auth_cost_json, uint64_t total_errors);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_REPORT_H_
