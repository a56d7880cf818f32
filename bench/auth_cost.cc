#include "bench/auth_cost.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <sstream>

#include "base/checksum.h"
#include "base/units.h"
#include "bench/payload.h"
#include "bench/raw_reference.h"
#include "proto/frame.h"

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
double MicrosPerIteration(int iterations, const std::function<void()>& body) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) body();
  const std::chrono::duration<double, std::micro> spent = std::chrono::steady_clock::now() - start;
  return spent.count() / iterations;
}

}  // namespace

AuthCpuCost MeasureAuthCpuCost() {
  // A client and a server end of one session, exactly as memkv derives them.
  const std::vector<uint8_t> master(32, 0x5a);
  std::array<uint8_t, proto::kNonceSize> client_nonce{}, server_nonce{};
  client_nonce.fill(1);
  server_nonce.fill(2);
  proto::SessionKeys keys = proto::DeriveSessionKeys(master, client_nonce, server_nonce).value();
  auto client = std::move(proto::FrameAuth::Create(keys.client_to_server, keys.server_to_client).value());
  auto server = std::move(proto::FrameAuth::Create(keys.server_to_client, keys.client_to_server).value());
  uint8_t fields[proto::kFieldsSize] = {};
  const std::string key = "bench-key-0123456789";  // a typical KV-cache block key length
  std::span<const uint8_t> meta(reinterpret_cast<const uint8_t*>(key.data()), key.size());
  bool all_ok = true;
  AuthCpuCost cost;
  cost.tags_us = MicrosPerIteration(20000, [&] {
    all_ok &= server->VerifyNext(fields, meta, client->SignNext(fields, meta));
    all_ok &= client->VerifyNext(fields, {}, server->SignNext(fields, {}));
  });
  if (!all_ok) std::fprintf(stderr, "error: auth cost: a tag did not verify\n");
  const Payloads payloads(kAuthCostSizeBytes, 8, 1);
  uint64_t sink = 0;
  uint64_t next = 0;
  cost.checksums_us = 2 * MicrosPerIteration(400, [&] {
    std::span<const uint8_t> v = payloads.Value(next++ % payloads.keys());
    sink += Checksum(v.data(), v.size());
  });
  if (sink == 1) std::fprintf(stderr, " ");  // keeps the loop from being optimised away
  return cost;
}

double AuthCostRow::TagCost() const { return CostOf(plain, tagged); }
double AuthCostRow::TagSumCost() const { return CostOf(plain, tagged_summed); }

std::vector<AuthCostRow> RunAuthCost(const BenchOptions& o, uint16_t raw_port, uint64_t* errors) {
  const Payloads payloads(kAuthCostSizeBytes, kKeys, *std::max_element(std::begin(kConns), std::end(kConns)));
  std::vector<AuthCostRow> rows;
  for (bool put : {true, false}) {
    for (uint32_t conns : kConns) {
      std::vector<CellResult> plain, tagged, summed;
      for (uint32_t i = 0; i < o.repeat; ++i) {
        const RawCellSpec spec{conns, o.seconds};
        plain.push_back(RunRawCell(raw_port, put ? RawOp::kPut : RawOp::kGet, spec, payloads));
        tagged.push_back(RunRawCell(raw_port, put ? RawOp::kPutTag : RawOp::kGetTag, spec, payloads));
        summed.push_back(RunRawCell(raw_port, put ? RawOp::kPutTagSum : RawOp::kGetTagSum, spec, payloads));
      }
      rows.push_back({put ? "put" : "get", kAuthCostSizeBytes, conns, MedianCell(plain, errors),
                      MedianCell(tagged, errors), MedianCell(summed, errors)});
    }
  }
  return rows;
}

void PrintAuthCost(std::FILE* out, const std::vector<AuthCostRow>& rows, const AuthCpuCost& cpu) {
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
  std::fprintf(out, "CPU per 2 MiB request/response: tags (4 HMAC-SHA256) %.2f us, payload checksums (2 XXH3) %.1f us\n",
               cpu.tags_us, cpu.checksums_us);
  for (const AuthCostRow& r : rows) {
    if (r.conns != 1 || r.plain.p50_us <= 0) continue;
    std::fprintf(out, "  vs the plain stream's %s p50 of %.0f us: tags %.2f%%, checksums %.1f%%\n", r.op.c_str(),
                 r.plain.p50_us, 100.0 * cpu.tags_us / r.plain.p50_us, 100.0 * cpu.checksums_us / r.plain.p50_us);
  }
}

std::string AuthCostJson(const std::vector<AuthCostRow>& rows, const AuthCpuCost& cpu) {
  std::ostringstream o;
  o << "{\"cpu_tags_us_per_request\": " << cpu.tags_us << ", \"cpu_checksums_us_per_request\": " << cpu.checksums_us
    << ",\n   \"cells\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const AuthCostRow& r = rows[i];
    o << (i ? ",\n    " : "\n    ") << "{\"op\": \"" << r.op << "\", \"size_bytes\": " << r.size_bytes
      << ", \"conns\": " << r.conns << ", \"plain_mib_per_s\": " << r.plain.MiBPerSecond()
      << ", \"plain_p50_us\": " << r.plain.p50_us
      << ", \"tag_mib_per_s\": " << r.tagged.MiBPerSecond() << ", \"tag_cost\": " << r.TagCost()
      << ", \"tag_and_checksum_mib_per_s\": " << r.tagged_summed.MiBPerSecond()
      << ", \"tag_and_checksum_cost\": " << r.TagSumCost() << "}";
  }
  o << "\n  ]}";
  return o.str();
}

}  // namespace memkv::bench
