// memkv-bench --fresh: put on a pool that was never written, against the
// same put on a pool that was.
//
// For each size x connection count, --repeat times, alternating:
//   fresh  a newly spawned server, nothing written to its pool yet;
//   warm   a newly spawned server after the warm-up (MemkvTarget::WarmPool:
//          2 MiB values over the whole pool, then deleted), as the sweep does.
// Both then run the same timed pass (bench/measure.h): conns threads put
// distinct keys until 15/16 of the pool has been written once or --seconds
// have passed, whichever comes first; on the fresh server every put lands on
// memory never written before. The figure (target >= 0.8) is the median over
// the repetitions of fresh/warm, each fresh pass divided by the warm pass run
// right after it, so that a shared machine's drift over the run cancels. Servers start with
// memory.prefault as --no-prefault says, so the cliff the prefault removes
// can be shown; how long a server took to start (its prefault included) is
// reported beside.
//
// Runs on main's thread; starts the cell threads itself.
#ifndef MEMKV_BENCH_FRESH_H_
#define MEMKV_BENCH_FRESH_H_

#include <cstdint>
#include <vector>

#include "bench/measure.h"
#include "bench/memkv_server.h"
#include "bench/options.h"
#include "bench/report.h"

namespace memkv::bench {

// One repetition of one side of a cell.
struct FreshSample {
  CellResult put;
  double start_seconds = 0;  // spawn to "ready" (the prefault, when on, is in it)
  uint64_t errors = 0;       // spawn, warm-up and stop failures (put errors are in `put`)
};

struct FreshRow {
  uint64_t size_bytes = 0;
  uint32_t conns = 0;
  uint64_t max_keys = 0;  // the pass's key limit: 15/16 of the pool
  std::vector<FreshSample> fresh;  // every repetition, in run order
  std::vector<FreshSample> warm;

  // The median-throughput repetition of each side.
  const FreshSample& MedianFresh() const;
  const FreshSample& MedianWarm() const;
  // The median of fresh[i] / warm[i] MiB/s (0 when a warm pass moved nothing).
  double Ratio() const;
  // Median seconds from spawn to ready, over the repetitions.
  double MedianStartSeconds(bool warm_side) const;
  uint64_t Errors() const;
};

// The whole --fresh run: prints `machine` and the table, writes the JSON.
// Returns the exit status.
int RunFresh(const BenchOptions& options, const SpawnEnv& env, const RunFacts& machine);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_FRESH_H_
