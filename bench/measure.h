// The one timing method both memkv and the raw reference are measured with.
//
// A cell runs `threads` threads; each repeats one synchronous operation until
// the time budget has passed (or the cell's operation limit is reached),
// timing every call with steady_clock. The cell's throughput is the bytes of
// successful operations over the wall time from the common start to the last
// thread's end (so the last operation that overruns the budget is paid for,
// not hidden). Latency percentiles come from every operation of every thread.
// CPU is sampled around the timed part (bench/cpu_time.h): this process's
// (the client's) and, when the spec names one, the server process's.
//
// Thread-safety: Drive() owns its threads; the callbacks it is given are
// called concurrently from them, each with its own thread index.
#ifndef MEMKV_BENCH_MEASURE_H_
#define MEMKV_BENCH_MEASURE_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memkv/status.h"

namespace memkv::bench {

// Outcome of one timed cell (one target, op, size and connection count).
struct CellResult {
  uint64_t ops = 0;     // successful operations
  uint64_t errors = 0;  // failed operations (not counted in ops or bytes)
  uint64_t bytes = 0;
  double seconds = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0, p9999_us = 0;  // per operation (a batch is one)
  double client_cpu_s = 0;                // this process, over the timed part
  std::optional<double> server_cpu_s;     // the server process; absent when unknown

  double MiBPerSecond() const { return seconds > 0 ? double(bytes) / seconds / (1 << 20) : 0; }
  double OpsPerSecond() const { return seconds > 0 ? double(ops) / seconds : 0; }
  // CPU seconds per GiB moved; absent when nothing moved (or, for the
  // server's part and the total, when the server is unknown).
  std::optional<double> ClientCpuPerGiB() const;
  std::optional<double> ServerCpuPerGiB() const;
  std::optional<double> CpuPerGiB() const;  // client + server
};

struct DriveSpec {
  uint32_t threads = 1;
  double seconds = 1.0;
  uint64_t bytes_per_op = 0;
  std::string what;  // "memkv put 2 MiB x4", names the cell in error lines
  // When non-zero, the cell also ends once this many operations have been
  // started (successful or not): a pass over a fixed set of keys.
  uint64_t max_ops = 0;
  // The server process whose CPU time the cell samples; 0: unknown (a
  // server this benchmark did not start).
  pid_t server_pid = 0;
};

// Called once per thread before the clock starts (connections, buffers).
using WarmupFn = std::function<void(uint32_t thread)>;
// One operation; a non-Ok status counts as an error and is reported.
using OpFn = std::function<Status(uint32_t thread)>;

CellResult Drive(const DriveSpec& spec, const WarmupFn& warmup, const OpFn& op);

// Runs fn(thread, item) for item in [0, items) over `threads` threads,
// untimed (fill, verify, delete passes). Returns the number of non-Ok items
// and reports each (up to a limit) on stderr prefixed by `what`.
uint64_t ForEachItem(uint32_t threads, uint64_t items, const std::string& what,
                     const std::function<Status(uint32_t thread, uint64_t item)>& fn);

// Nearest-rank percentile (0 < p <= 1) of `sorted_ns`, in microseconds.
double PercentileUs(std::span<const int64_t> sorted_ns, double p);

// Prints an operation's failure on stderr, at most a few per cell so a dead
// server does not flood the terminal; the count is always in the table.
void ReportError(const std::string& what, const Status& status, uint64_t errors_so_far);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_MEASURE_H_
