// What authentication costs a stream, measured rather than estimated.
//
// memkv has no unauthenticated mode to compare against, so the cost is taken
// on the raw reference: the same request/response stream run plain (RawOp
// kPut/kGet), with memkv's per-request tag (an HMAC-SHA256 over a header,
// checked by the receiver), and with the tag plus the payload checksums that
// bind the payload to it (XXH3-64 on both ends). Cells alternate the three,
// --repeat times; the median of each is kept. Runs on main's thread.
#ifndef MEMKV_BENCH_AUTH_COST_H_
#define MEMKV_BENCH_AUTH_COST_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "bench/measure.h"
#include "bench/options.h"

namespace memkv::bench {

inline constexpr uint64_t kAuthCostSizeBytes = 2ULL << 20;  // the size the budget is set at

struct AuthCostRow {
  std::string op;  // "put" or "get"
  uint64_t size_bytes = 0;
  uint32_t conns = 0;
  CellResult plain;
  CellResult tagged;         // header HMAC only
  CellResult tagged_summed;  // header HMAC and payload XXH3 on both ends
  // 1 - variant/plain throughput: the share of the stream the work costs.
  double TagCost() const;
  double TagSumCost() const;
};

// CPU time of the per-request work itself, timed in a tight loop: far less
// noisy than throughput on a shared machine. One request/response pair signs
// and verifies two frames (four HMACs) and hashes the payload twice.
struct AuthCpuCost {
  double tags_us = 0;       // sign + verify of a request and of its response
  double checksums_us = 0;  // XXH3-64 of a 2 MiB payload, sender and receiver
};

AuthCpuCost MeasureAuthCpuCost();
std::vector<AuthCostRow> RunAuthCost(const BenchOptions& options, uint16_t raw_port, uint64_t* errors);
void PrintAuthCost(std::FILE* out, const std::vector<AuthCostRow>& rows, const AuthCpuCost& cpu);
std::string AuthCostJson(const std::vector<AuthCostRow>& rows, const AuthCpuCost& cpu);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_AUTH_COST_H_
