#include "bench/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "base/units.h"
#include "bench/raw_reference.h"

namespace memkv::bench {
namespace {

constexpr uint64_t kPoolUnitBytes = 64;  // the pool's allocation unit (storage/memory_store.h)
constexpr uint64_t kMaxWorkingSetKeys = 1024;

// One repetition of one cell.
struct Repetition {
  MemkvCells memkv;
  std::optional<CellResult> raw_put;
  std::optional<CellResult> raw_get;
};

Repetition RunOnce(const BenchOptions& o, const MemkvTarget& target, uint16_t raw_port,
                   const Payloads& payloads, uint32_t conns, uint64_t* errors) {
  Repetition rep;
  Result<MemkvCells> memkv = target.Run(CellPlan{conns, o.seconds, o.put, o.get}, payloads);
  if (memkv.ok()) {
    rep.memkv = *memkv;
  } else {
    std::fprintf(stderr, "error: memkv %s x%u: %s\n", FormatSize(payloads.size_bytes()).c_str(), conns,
                 memkv.status().ToString().c_str());
    ++*errors;
  }
  *errors += rep.memkv.other_errors;
  if (o.put) rep.raw_put = RunRawCell(raw_port, RawOp::kPut, conns, o.seconds, payloads);
  if (o.get) rep.raw_get = RunRawCell(raw_port, RawOp::kGet, conns, o.seconds, payloads);
  return rep;
}

// The median-throughput cell of `cells` (absent ones skipped), carrying the
// errors of all; every throughput goes to *mibs.
std::optional<CellResult> Median(std::vector<std::optional<CellResult>> cells, std::vector<double>* mibs) {
  std::vector<CellResult> present;
  uint64_t errors = 0;
  for (const std::optional<CellResult>& c : cells) {
    if (!c) continue;
    present.push_back(*c);
    mibs->push_back(c->MiBPerSecond());
    errors += c->errors;
  }
  if (present.empty()) return std::nullopt;
  std::sort(present.begin(), present.end(),
            [](const CellResult& a, const CellResult& b) { return a.MiBPerSecond() < b.MiBPerSecond(); });
  CellResult median = present[present.size() / 2];
  median.errors = errors;
  return median;
}

Row MakeRow(const std::string& op, const Payloads& payloads, uint32_t conns,
            const std::vector<Repetition>& reps) {
  Row r;
  r.op = op;
  r.size_bytes = payloads.size_bytes();
  r.conns = conns;
  r.working_set_keys = payloads.keys();
  std::vector<std::optional<CellResult>> memkv, raw;
  for (const Repetition& rep : reps) {
    memkv.push_back(op == "put" ? rep.memkv.put : rep.memkv.get);
    raw.push_back(op == "put" ? rep.raw_put : rep.raw_get);
    r.connections_opened = std::max(r.connections_opened, rep.memkv.connections_opened);
  }
  r.memkv = Median(memkv, &r.memkv_mibs);
  r.raw = Median(raw, &r.raw_mibs);
  return r;
}

// The verify pass follows the put (or the untimed fill): its tallies go on
// the put row, or on the get row when put was not asked for.
void AddVerifyTallies(const std::vector<Repetition>& reps, Row* row) {
  for (const Repetition& rep : reps) {
    row->keys_verified += rep.memkv.keys_verified;
    row->verify_errors += rep.memkv.verify_errors;
  }
}

uint64_t RowErrors(const Row& r) {
  return (r.memkv ? r.memkv->errors : 0) + (r.raw ? r.raw->errors : 0) + r.verify_errors;
}

void RunCell(const BenchOptions& o, const MemkvTarget& target, uint16_t raw_port, const Payloads& payloads,
             uint32_t conns, Sweep* sweep) {
  std::vector<Repetition> reps;
  for (uint32_t i = 0; i < o.repeat; ++i) {
    reps.push_back(RunOnce(o, target, raw_port, payloads, conns, &sweep->errors));
  }
  std::vector<std::string> ops;
  if (o.put) ops.push_back("put");
  if (o.get) ops.push_back("get");
  for (size_t i = 0; i < ops.size(); ++i) {
    Row row = MakeRow(ops[i], payloads, conns, reps);
    if (i == 0) AddVerifyTallies(reps, &row);
    sweep->errors += RowErrors(row);
    sweep->rows.push_back(std::move(row));
  }
}

}  // namespace

uint64_t WorkingSetKeys(uint64_t size_bytes, uint64_t pool_bytes) {
  const uint64_t footprint = (size_bytes + kPoolUnitBytes - 1) / kPoolUnitBytes * kPoolUnitBytes;
  return std::clamp<uint64_t>(pool_bytes / 2 / footprint, 1, kMaxWorkingSetKeys);
}

Sweep RunSweep(const BenchOptions& o, const MemkvTarget& target, uint16_t raw_port) {
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  const uint32_t max_conns = *std::max_element(o.conns.begin(), o.conns.end());
  const size_t total = o.sizes_bytes.size() * o.conns.size() * ((o.put ? 1 : 0) + (o.get ? 1 : 0));
  Sweep sweep;
  for (uint64_t size : o.sizes_bytes) {
    const Payloads payloads(size, WorkingSetKeys(size, o.pool_bytes), max_conns);
    for (uint32_t conns : o.conns) {
      const size_t before = sweep.rows.size();
      RunCell(o, target, raw_port, payloads, conns, &sweep);
      for (size_t i = before; progress && i < sweep.rows.size(); ++i) {
        PrintProgress(stderr, i + 1, total, sweep.rows[i]);
      }
    }
  }
  return sweep;
}

}  // namespace memkv::bench
