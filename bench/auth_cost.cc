#include "bench/auth_cost.h"

#include <algorithm>
#include <sstream>

#include "base/units.h"
#include "bench/payload.h"
#include "bench/raw_reference.h"

namespace memkv::bench {
namespace {

constexpr uint32_t kConns[] = {1, 4};
constexpr uint64_t kKeys = 64;

CellResult MedianCell(std::vector<CellResult> cells, uint64_t* errors) {
  for (const CellResult& c : cells) *errors += c.errors;
  std::sort(cells.begin(), cells.end(),
            [](const CellResult& a, const CellResult& b) { return a.MiBPerSecond() < b.MiBPerSecond(); });
  return cells[cells.size() / 2];
}

}  // namespace

namespace {
double CostOf(const CellResult& plain, const CellResult& variant) {
  double plain_mibs = plain.MiBPerSecond();
  return plain_mibs > 0 ? 1.0 - variant.MiBPerSecond() / plain_mibs : 0;
}
}  // namespace

double AuthCostRow::TagCost() const { return CostOf(plain, tagged); }
double AuthCostRow::TagSumCost() const { return CostOf(plain, tagged_summed); }

std::vector<AuthCostRow> RunAuthCost(const BenchOptions& o, uint16_t raw_port, uint64_t* errors) {
  const Payloads payloads(kAuthCostSizeBytes, kKeys, *std::max_element(std::begin(kConns), std::end(kConns)));
  std::vector<AuthCostRow> rows;
  for (bool put : {true, false}) {
    for (uint32_t conns : kConns) {
      std::vector<CellResult> plain, tagged, summed;
      for (uint32_t i = 0; i < o.repeat; ++i) {
        plain.push_back(RunRawCell(raw_port, put ? RawOp::kPut : RawOp::kGet, conns, o.seconds, payloads));
        tagged.push_back(RunRawCell(raw_port, put ? RawOp::kPutTag : RawOp::kGetTag, conns, o.seconds, payloads));
        summed.push_back(
            RunRawCell(raw_port, put ? RawOp::kPutTagSum : RawOp::kGetTagSum, conns, o.seconds, payloads));
      }
      rows.push_back({put ? "put" : "get", kAuthCostSizeBytes, conns, MedianCell(plain, errors),
                      MedianCell(tagged, errors), MedianCell(summed, errors)});
    }
  }
  return rows;
}

void PrintAuthCost(std::FILE* out, const std::vector<AuthCostRow>& rows) {
  std::fprintf(out,
               "\nauthentication cost on the raw stream (MiB/s): plain; with memkv's per-request header tag\n"
               "(HMAC-SHA256, checked on receipt); with the tag and the payload XXH3-64 on both ends\n");
  std::fprintf(out, "%4s %9s %5s %10s %10s %7s %10s %7s\n", "op", "size", "conns", "plain", "tag", "cost",
               "tag+sum", "cost");
  for (const AuthCostRow& r : rows) {
    std::fprintf(out, "%4s %9s %5u %10.1f %10.1f %6.1f%% %10.1f %6.1f%%\n", r.op.c_str(),
                 FormatSize(r.size_bytes).c_str(), r.conns, r.plain.MiBPerSecond(), r.tagged.MiBPerSecond(),
                 100.0 * r.TagCost(), r.tagged_summed.MiBPerSecond(), 100.0 * r.TagSumCost());
  }
}

std::string AuthCostJson(const std::vector<AuthCostRow>& rows) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const AuthCostRow& r = rows[i];
    o << (i ? ",\n    " : "\n    ") << "{\"op\": \"" << r.op << "\", \"size_bytes\": " << r.size_bytes
      << ", \"conns\": " << r.conns << ", \"plain_mib_per_s\": " << r.plain.MiBPerSecond()
      << ", \"tag_mib_per_s\": " << r.tagged.MiBPerSecond() << ", \"tag_cost\": " << r.TagCost()
      << ", \"tag_and_checksum_mib_per_s\": " << r.tagged_summed.MiBPerSecond()
      << ", \"tag_and_checksum_cost\": " << r.TagSumCost() << "}";
  }
  o << "\n  ]";
  return o.str();
}

}  // namespace memkv::bench
