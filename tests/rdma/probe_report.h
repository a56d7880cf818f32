// The one JSON line that ends every memkv-rdma-probe command: the op tally
// and the client's ClientStats, field for field, so the Soft-RoCE stage can
// judge a run from its last line alone. Plain functions; no state.
#ifndef MEMKV_TESTS_RDMA_PROBE_REPORT_H_
#define MEMKV_TESTS_RDMA_PROBE_REPORT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memkv/client.h"

namespace memkv::probe {

struct Tally {
  uint64_t ok = 0;          // ops that succeeded (reads: and were byte-exact)
  uint64_t failed = 0;      // ops that returned an error (a miss included)
  uint64_t mismatched = 0;  // reads that returned wrong bytes or a wrong size
};

// {"ok":..,"failed":..,"mismatched":..,<extra...>,"stats":{...}}. Each extra
// is (name, JSON value text). Flushes stdout.
void PrintSummary(const Tally& tally, const ClientStats& stats,
                  const std::vector<std::pair<std::string, std::string>>& extra);

}  // namespace memkv::probe

#endif  // MEMKV_TESTS_RDMA_PROBE_REPORT_H_
