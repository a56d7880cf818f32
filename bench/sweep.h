// The sweep: every size x connection count, memkv and the raw reference
// side by side.
//
// Each cell runs --repeat times; a repetition runs memkv (put, verify, get,
// delete) and then the reference (put, get) back to back, so slow drift of a
// shared machine hits both alike. A row reports, per target, the repetition
// with the median throughput (its latencies with it) and keeps every
// repetition's MiB/s; errors are summed over all repetitions.
//
// Runs on main's thread; starts the cell threads itself.
#ifndef MEMKV_BENCH_SWEEP_H_
#define MEMKV_BENCH_SWEEP_H_

#include <cstdint>
#include <vector>

#include "bench/memkv_target.h"
#include "bench/options.h"
#include "bench/report.h"

namespace memkv::bench {

struct Sweep {
  std::vector<Row> rows;
  uint64_t errors = 0;
};

Sweep RunSweep(const BenchOptions& options, const MemkvTarget& target, uint16_t raw_port);

// Keys one cell of `size_bytes` values cycles over: their room in the pool
// (each value rounded up to 64-byte units) fills at most half of
// `pool_bytes`, and at most 1024, so a cell neither evicts nor runs out of
// room.
uint64_t WorkingSetKeys(uint64_t size_bytes, uint64_t pool_bytes);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_SWEEP_H_
