// The DRAM pool's state as a memkv server reports it: the "memory" object of
// its admin endpoint's GET /v1/status (docs/admin.md).
//
// ParsePoolStatus is pure; ReadPoolStatus does one blocking HTTP GET (a
// short deadline) and may be called from any thread.
#ifndef MEMKV_BENCH_ADMIN_STATUS_H_
#define MEMKV_BENCH_ADMIN_STATUS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "memkv/status.h"

namespace memkv::bench {

struct PoolStatus {
  uint64_t pool_bytes = 0;
  uint64_t used_bytes = 0;   // capacity consumed, values rounded up to the pool's units
  uint64_t value_bytes = 0;  // sum of the stored values' sizes
  uint64_t free_bytes = 0;
  uint64_t largest_free_bytes = 0;
  double fragmentation = 0;         // 1 - largest_free / free, as the server computes it
  double bytes_per_value_byte = 0;  // used / value, as the server computes it
  uint64_t keys = 0;
  uint64_t evictions = 0;
};

// The "memory" object of a /v1/status document. ProtocolError naming the
// first field that is missing or not a number.
Result<PoolStatus> ParsePoolStatus(std::string_view status_json);

// GET http://host:port/v1/status, parsed. Unavailable when the endpoint
// cannot be reached or answers other than 200.
Result<PoolStatus> ReadPoolStatus(const std::string& host, uint16_t port);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_ADMIN_STATUS_H_
