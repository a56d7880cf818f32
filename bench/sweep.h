// The sweep: every size x connection count, memkv and the raw reference
// side by side, and Redis beside them with --peer redis.
//
// Each cell runs --repeat times; a repetition runs memkv (put, verify, get,
// delete), then the reference (put, get), then Redis (put, get, flush) back
// to back, so slow drift of a shared machine hits all alike. A row reports,
// per target, the repetition with the median throughput (its latencies and
// CPU with it) and keeps every repetition; errors are summed over all
// repetitions.
//
// Runs on main's thread; starts the cell threads itself.
#ifndef MEMKV_BENCH_SWEEP_H_
#define MEMKV_BENCH_SWEEP_H_

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "bench/memkv_target.h"
#include "bench/options.h"
#include "bench/redis_cells.h"
#include "bench/report.h"

namespace memkv::bench {

struct Sweep {
  std::vector<Row> rows;
  uint64_t errors = 0;
};

// What the sweep measures. Pids name the server processes whose CPU time is
// sampled; 0 where it is unknown (memkv servers given with --servers).
struct SweepTargets {
  const MemkvTarget* memkv = nullptr;
  pid_t memkv_pid = 0;
  uint16_t raw_port = 0;
  pid_t raw_pid = 0;
  const RedisTarget* redis = nullptr;  // null without --peer redis
};

Sweep RunSweep(const BenchOptions& options, const SweepTargets& targets);

// Keys one cell of `size_bytes` values cycles over: their room in the pool
// (each value rounded up to 64-byte units) fills at most half of
// `pool_bytes`, and at most 1024, so a cell neither evicts nor runs out of
// room.
uint64_t WorkingSetKeys(uint64_t size_bytes, uint64_t pool_bytes);

// The values per call of a cell asked for `batch`: no more than the working
// set's `keys` (a call names distinct keys) and no more than 16 MiB of values
// (at least one), so a batched cell never has more bytes in flight per
// connection, nor in receive buffers, than an unbatched 16 MiB cell.
uint32_t CellBatch(uint32_t batch, uint64_t size_bytes, uint64_t keys);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_SWEEP_H_
