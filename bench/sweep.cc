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
constexpr uint64_t kMaxBatchBytes = 16ULL << 20;

// One repetition of one cell.
struct Repetition {
  MemkvCells memkv;
  std::optional<CellResult> raw_put;
  std::optional<CellResult> raw_get;
  RedisCells redis;
};

std::string CellName(const Payloads& payloads, uint32_t conns) {
  return FormatSize(payloads.size_bytes()) + " x" + std::to_string(conns);
}

void RunRedis(const CellPlan& plan, const SweepTargets& t, const Payloads& payloads, Repetition* rep,
              uint64_t* errors) {
  Result<RedisCells> redis = t.redis->Run(plan, payloads, t.memkv->CellKeys(payloads, plan.conns));
  if (redis.ok()) {
    rep->redis = *redis;
  } else {
    std::fprintf(stderr, "error: redis %s: %s\n", CellName(payloads, plan.conns).c_str(),
                 redis.status().ToString().c_str());
    ++*errors;
  }
  *errors += rep->redis.other_errors;
}

Repetition RunOnce(const BenchOptions& o, const SweepTargets& t, const Payloads& payloads, uint32_t conns,
                   uint32_t batch, uint64_t* errors) {
  Repetition rep;
  const CellPlan plan{conns, o.seconds, o.put, o.get, batch, t.memkv_pid};
  Result<MemkvCells> memkv = t.memkv->Run(plan, payloads);
  if (memkv.ok()) {
    rep.memkv = *memkv;
  } else {
    std::fprintf(stderr, "error: memkv %s: %s\n", CellName(payloads, conns).c_str(),
                 memkv.status().ToString().c_str());
    ++*errors;
  }
  *errors += rep.memkv.other_errors;
  const RawCellSpec raw{conns, o.seconds, batch, t.raw_pid};
  if (o.put) rep.raw_put = RunRawCell(t.raw_port, RawOp::kPut, raw, payloads);
  if (o.get) rep.raw_get = RunRawCell(t.raw_port, RawOp::kGet, raw, payloads);
  if (t.redis != nullptr) RunRedis(plan, t, payloads, &rep, errors);
  return rep;
}

// The median-throughput cell of `cells` (absent ones skipped), carrying the
// errors of all; every present cell goes to *all.
std::optional<CellResult> Median(const std::vector<std::optional<CellResult>>& cells, std::vector<CellResult>* all) {
  uint64_t errors = 0;
  for (const std::optional<CellResult>& c : cells) {
    if (!c) continue;
    all->push_back(*c);
    errors += c->errors;
  }
  if (all->empty()) return std::nullopt;
  std::vector<CellResult> sorted = *all;
  std::sort(sorted.begin(), sorted.end(),
            [](const CellResult& a, const CellResult& b) { return a.MiBPerSecond() < b.MiBPerSecond(); });
  CellResult median = sorted[sorted.size() / 2];
  median.errors = errors;
  return median;
}

Row MakeRow(const std::string& op, const Payloads& payloads, uint32_t conns, uint32_t batch,
            const std::vector<Repetition>& reps) {
  Row r;
  r.op = op;
  r.size_bytes = payloads.size_bytes();
  r.conns = conns;
  r.batch = batch;
  r.working_set_keys = payloads.keys();
  const bool put = op == "put";
  std::vector<std::optional<CellResult>> memkv, raw, redis;
  for (const Repetition& rep : reps) {
    memkv.push_back(put ? rep.memkv.put : rep.memkv.get);
    raw.push_back(put ? rep.raw_put : rep.raw_get);
    redis.push_back(put ? rep.redis.put : rep.redis.get);
    r.connections_opened = std::max(r.connections_opened, rep.memkv.connections_opened);
  }
  r.memkv = Median(memkv, &r.memkv_all);
  r.raw = Median(raw, &r.raw_all);
  r.redis = Median(redis, &r.redis_all);
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

void RunCell(const BenchOptions& o, const SweepTargets& t, const Payloads& payloads, uint32_t conns,
             uint32_t batch, Sweep* sweep) {
  std::vector<Repetition> reps;
  for (uint32_t i = 0; i < o.repeat; ++i) {
    reps.push_back(RunOnce(o, t, payloads, conns, batch, &sweep->errors));
  }
  std::vector<std::string> ops;
  if (o.put) ops.push_back("put");
  if (o.get) ops.push_back("get");
  for (size_t i = 0; i < ops.size(); ++i) {
    Row row = MakeRow(ops[i], payloads, conns, batch, reps);
    if (i == 0) AddVerifyTallies(reps, &row);
    sweep->errors += row.Errors();
    sweep->rows.push_back(std::move(row));
  }
}

}  // namespace

uint64_t WorkingSetKeys(uint64_t size_bytes, uint64_t pool_bytes) {
  const uint64_t footprint = (size_bytes + kPoolUnitBytes - 1) / kPoolUnitBytes * kPoolUnitBytes;
  return std::clamp<uint64_t>(pool_bytes / 2 / footprint, 1, kMaxWorkingSetKeys);
}

uint32_t CellBatch(uint32_t batch, uint64_t size_bytes, uint64_t keys) {
  const uint64_t by_bytes = std::max<uint64_t>(kMaxBatchBytes / std::max<uint64_t>(size_bytes, 1), 1);
  return static_cast<uint32_t>(std::clamp<uint64_t>(std::min({uint64_t{batch}, keys, by_bytes}), 1, batch));
}

Sweep RunSweep(const BenchOptions& o, const SweepTargets& t) {
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  const uint32_t max_conns = *std::max_element(o.conns.begin(), o.conns.end());
  const size_t total = o.sizes_bytes.size() * o.conns.size() * ((o.put ? 1 : 0) + (o.get ? 1 : 0));
  Sweep sweep;
  for (uint64_t size : o.sizes_bytes) {
    const uint64_t keys = WorkingSetKeys(size, o.pool_bytes);
    const uint32_t batch = CellBatch(o.batch, size, keys);
    const Payloads payloads(size, keys, max_conns * batch);
    for (uint32_t conns : o.conns) {
      const size_t before = sweep.rows.size();
      RunCell(o, t, payloads, conns, batch, &sweep);
      for (size_t i = before; progress && i < sweep.rows.size(); ++i) {
        PrintProgress(stderr, i + 1, total, sweep.rows[i]);
      }
    }
  }
  return sweep;
}

}  // namespace memkv::bench
