// The Redis side of a sweep cell (memkv-bench --peer redis): `conns` threads,
// each with its own RespConnection to one spawned redis-server, over the same
// keys (MemkvTarget::CellKeys), the same value bytes and the same timing
// (Drive) as the memkv cell beside it.
//
// One cell runs, in order:
//   put   timed; SET, or with a batch of B > 1 SetBatch of B distinct keys
//         per round trip; keys cycle over the working set
//         (with --ops get only: an untimed fill of the whole working set)
//   get   timed; GET straight into the thread's buffer, or GetBatchInto of B
//         keys into payloads.Buffer(t * B + j); every value's length and
//         first and last 8 bytes checked, as memkv's are
//   flush untimed; FLUSHALL, so the next cell starts from an empty server
// Redis's CPU time is read from /proc/<its pid>/stat around each timed part.
//
// Thread-safety: Run() is called by one thread at a time; it starts its own.
#ifndef MEMKV_BENCH_REDIS_CELLS_H_
#define MEMKV_BENCH_REDIS_CELLS_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/measure.h"
#include "bench/memkv_target.h"
#include "bench/payload.h"

namespace memkv::bench {

struct RedisCells {
  std::optional<CellResult> put;  // absent when put was not asked for
  std::optional<CellResult> get;  // absent when get was not asked for
  uint64_t other_errors = 0;      // fill and flush failures
};

class RedisTarget {
 public:
  // A redis-server listening on 127.0.0.1:`port` as process `pid`.
  RedisTarget(uint16_t port, pid_t pid) : port_(port), pid_(pid) {}

  // Runs one cell (plan.server_pid is ignored: Redis's own is sampled).
  // `keys` has payloads.keys() names. An error when the connections cannot
  // be opened; failed operations are counted in the cells.
  Result<RedisCells> Run(const CellPlan& plan, const Payloads& payloads, const std::vector<std::string>& keys) const;

 private:
  uint16_t port_;
  pid_t pid_;
};

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_REDIS_CELLS_H_
