#include "tests/rdma/probe_report.h"

#include <cstdio>

#include "base/json.h"

namespace memkv::probe {

namespace {

std::string StatsJson(const ClientStats& s) {
  auto n = [](uint64_t v) { return std::to_string(v); };
  std::string errors = "{";
  for (const auto& [status, count] : s.completion_errors) {
    if (errors.size() > 1) errors += ",";
    errors += "\"" + std::to_string(status) + "\":" + n(count);
  }
  errors += "}";
  return "{\"ops\":" + n(s.ops) + ",\"transport\":" + JsonQuote(s.transport) +
         ",\"rdma_ops\":" + n(s.rdma_ops) + ",\"rdma_bytes\":" + n(s.rdma_bytes) +
         ",\"tcp_ops\":" + n(s.tcp_ops) + ",\"tcp_bytes\":" + n(s.tcp_bytes) +
         ",\"rdma_reissued\":" + n(s.rdma_reissued) + ",\"fallbacks\":" + n(s.fallbacks) +
         ",\"fallback_reason\":" + JsonQuote(s.fallback_reason) + ",\"rdma_path\":" + JsonQuote(s.rdma_path) +
         ",\"rdma_zero_copy_ops\":" + n(s.rdma_zero_copy_ops) + ",\"rdma_spare_puts\":" + n(s.rdma_spare_puts) +
         ",\"completion_errors\":" + errors + ",\"timeouts\":" + n(s.timeouts) +
         ",\"checksum_failures\":" + n(s.checksum_failures) + ",\"bytes_sent\":" + n(s.bytes_sent) +
         ",\"bytes_received\":" + n(s.bytes_received) +
         ",\"connections_opened\":" + n(s.connections_opened) + "}";
}

}  // namespace

void PrintSummary(const Tally& tally, const ClientStats& stats,
                  const std::vector<std::pair<std::string, std::string>>& extra) {
  std::string line = "{\"ok\":" + std::to_string(tally.ok) + ",\"failed\":" + std::to_string(tally.failed) +
                     ",\"mismatched\":" + std::to_string(tally.mismatched);
  for (const auto& [name, value] : extra) line += "," + JsonQuote(name) + ":" + value;
  line += ",\"stats\":" + StatsJson(stats) + "}";
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace memkv::probe
