#include "bench/fresh.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>

#include "base/json.h"
#include "base/units.h"
#include "bench/flags.h"
#include "bench/memkv_target.h"
#include "bench/payload.h"
#include "bench/process.h"

namespace memkv::bench {
namespace {

constexpr uint64_t kPoolUnitBytes = 64;     // the pool's allocation unit (storage/memory_store.h)
constexpr uint64_t kDistinctValues = 1024;  // value i is pattern window i % this
constexpr uint32_t kWarmThreads = 4;
constexpr double kTarget = 0.8;

// What every repetition of one cell shares.
struct FreshCell {
  uint64_t size_bytes;
  uint32_t conns;
  const std::vector<std::string>* keys;
  const Payloads* payloads;
  std::string name;  // "4 KiB x16"
};

std::vector<std::string> FreshKeys(uint64_t size_bytes, uint32_t conns, uint64_t count) {
  std::vector<std::string> keys;
  keys.reserve(count);
  const std::string prefix = "memkv-bench/fresh/" + std::to_string(size_bytes) + "/" + std::to_string(conns) + "/";
  for (uint64_t i = 0; i < count; ++i) keys.push_back(prefix + std::to_string(i));
  return keys;
}

// The timed pass: distinct keys in order until all are written or time is up.
CellResult TimedPass(const MemkvTarget& target, const BenchOptions& o, const FreshCell& c, const char* side,
                     uint64_t* errors) {
  Result<std::unique_ptr<Client>> client = target.Connect(c.conns);
  if (!client.ok()) {
    std::fprintf(stderr, "error: memkv %s put %s: %s\n", side, c.name.c_str(), client.status().ToString().c_str());
    ++*errors;
    return CellResult{};
  }
  std::atomic<uint64_t> next{0};
  DriveSpec spec{c.conns, o.seconds, c.size_bytes, std::string("memkv ") + side + " put " + c.name};
  spec.max_ops = c.keys->size();
  return Drive(
      spec, [&](uint32_t) { (void)(*client)->Exists("memkv-bench/connect"); },
      [&](uint32_t) {
        const uint64_t i = next.fetch_add(1, std::memory_order_relaxed);
        return (*client)->Put((*c.keys)[i], c.payloads->Value(i % kDistinctValues));
      });
}

FreshSample RunSide(const BenchOptions& o, const SpawnEnv& env, const std::string& key_hex, const FreshCell& c,
                    bool warm) {
  FreshSample sample;
  const char* side = warm ? "warm" : "fresh";
  auto fail = [&](const Status& s) {
    std::fprintf(stderr, "error: memkv %s put %s: %s\n", side, c.name.c_str(), s.ToString().c_str());
    ++sample.errors;
  };
  const auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<MemkvServer>> server =
      MemkvServer::Start(env.memkv_binary, SpawnConfigOf(o), key_hex, env.temp_base);
  sample.start_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!server.ok()) {
    fail(server.status());
    return sample;
  }
  const MemkvTarget target({(*server)->address()}, key_hex, "fresh");
  if (warm) {
    if (::isatty(STDERR_FILENO)) std::fprintf(stderr, "warming the pool (%s)...\n", FormatSize(o.pool_bytes).c_str());
    Status warmed = target.WarmPool(o.pool_bytes, kWarmThreads);
    if (!warmed.ok()) fail(warmed);
  }
  sample.put = TimedPass(target, o, c, side, &sample.errors);
  if (const int rc = (*server)->Stop(); rc != 0) {
    fail(Internal("memkv server exited with status " + std::to_string(rc) + " after SIGTERM"));
  }
  return sample;
}

double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const FreshSample& Median(const std::vector<FreshSample>& samples) {
  std::vector<const FreshSample*> sorted;
  for (const FreshSample& s : samples) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(), [](const FreshSample* a, const FreshSample* b) {
    return a->put.MiBPerSecond() < b->put.MiBPerSecond();
  });
  return *sorted[sorted.size() / 2];
}

// ---- report ----

void PrintHeader(std::FILE* out, const BenchOptions& o, const SpawnEnv& env, const RunFacts& machine) {
  PrintMachine(out, "memkv-bench --fresh", machine);
  std::fprintf(out, "memkv: spawned %s per repetition, memory mode, pool %s, memory.prefault: %s\n",
               env.memkv_binary.c_str(), FormatSize(o.pool_bytes).c_str(), o.prefault ? "true" : "false");
  std::fprintf(out,
               "fresh: a new server, its pool never written; warm: a new server after the warm-up (2 MiB values "
               "over the whole pool, then deleted)\n");
  std::fprintf(out,
               "a pass puts distinct keys until 15/16 of the pool is written once or %.1f s pass; median of %u, "
               "fresh and warm alternating\n",
               o.seconds, o.repeat);
}

// Share of the pool the median fresh pass wrote.
double PoolWritten(const FreshRow& r, uint64_t pool_bytes) {
  const uint64_t footprint = (r.size_bytes + kPoolUnitBytes - 1) / kPoolUnitBytes * kPoolUnitBytes;
  return double(r.MedianFresh().put.ops * footprint) / double(pool_bytes);
}

void PrintTable(std::FILE* out, const std::vector<FreshRow>& rows, uint64_t pool_bytes) {
  std::fprintf(out,
               "\nput on a fresh pool vs a warmed one (MiB/s, median repetition; fresh/warm = median of each "
               "repetition's ratio, target >= %.1f;\np99 in us; written = share of the pool the fresh pass wrote; "
               "start = median seconds from spawn to ready, the prefault included)\n",
               kTarget);
  std::fprintf(out, "%9s %5s %11s %11s %10s %7s %8s %10s %10s %11s %11s %6s\n", "size", "conns", "fresh", "warm",
               "fresh/warm", "", "written", "fresh p99", "warm p99", "fresh start", "warm start", "errors");
  for (const FreshRow& r : rows) {
    const FreshSample& f = r.MedianFresh();
    const FreshSample& w = r.MedianWarm();
    std::fprintf(out, "%9s %5u %11.1f %11.1f %10.2f %7s %7.0f%% %10.0f %10.0f %11.2f %11.2f %6" PRIu64 "\n",
                 FormatValueSize(r.size_bytes).c_str(), r.conns, f.put.MiBPerSecond(), w.put.MiBPerSecond(),
                 r.Ratio(), r.Ratio() >= kTarget ? "met" : "MISSED", 100 * PoolWritten(r, pool_bytes), f.put.p99_us,
                 w.put.p99_us, r.MedianStartSeconds(false), r.MedianStartSeconds(true), r.Errors());
  }
}

void WriteSamples(JsonWriter& w, const std::vector<FreshSample>& samples) {
  w.BeginArray();
  for (const FreshSample& s : samples) {
    w.BeginObject()
        .Key("mib_per_s").Number(s.put.MiBPerSecond())
        .Key("ops_per_s").Number(s.put.OpsPerSecond())
        .Key("ops").Number(s.put.ops)
        .Key("errors").Number(s.put.errors + s.errors)
        .Key("seconds").Number(s.put.seconds)
        .Key("p50_us").Number(s.put.p50_us)
        .Key("p99_us").Number(s.put.p99_us)
        .Key("p999_us").Number(s.put.p999_us)
        .Key("start_seconds").Number(s.start_seconds)
        .EndObject();
  }
  w.EndArray();
}

std::string Json(const BenchOptions& o, const SpawnEnv& env, const RunFacts& machine,
                 const std::vector<FreshRow>& rows, uint64_t total_errors) {
  JsonWriter w;
  w.BeginObject().Key("mode").String("fresh");
  WriteMachineJson(w, machine);
  w.Key("memkv_binary").String(env.memkv_binary)
      .Key("pool_bytes").Number(o.pool_bytes)
      .Key("prefault").Bool(o.prefault)
      .Key("seconds_cap").Number(o.seconds)
      .Key("repeat").Number(uint64_t(o.repeat))
      .Key("target").Number(kTarget)
      .Key("total_errors").Number(total_errors);
  w.Key("cells").BeginArray();
  for (const FreshRow& r : rows) {
    w.BeginObject()
        .Key("op").String("put")
        .Key("size_bytes").Number(r.size_bytes)
        .Key("conns").Number(uint64_t(r.conns))
        .Key("max_keys").Number(r.max_keys)
        .Key("fresh_mib_per_s").Number(r.MedianFresh().put.MiBPerSecond())
        .Key("warm_mib_per_s").Number(r.MedianWarm().put.MiBPerSecond())
        .Key("ratio").Number(r.Ratio())
        .Key("ratio_of_medians").Number(r.MedianWarm().put.MiBPerSecond() > 0
                                            ? r.MedianFresh().put.MiBPerSecond() / r.MedianWarm().put.MiBPerSecond()
                                            : 0)
        .Key("pool_written").Number(PoolWritten(r, o.pool_bytes));
    w.Key("fresh");
    WriteSamples(w, r.fresh);
    w.Key("warm");
    WriteSamples(w, r.warm);
    w.EndObject();
  }
  w.EndArray().EndObject();
  return w.text() + "\n";
}

}  // namespace

const FreshSample& FreshRow::MedianFresh() const { return Median(fresh); }
const FreshSample& FreshRow::MedianWarm() const { return Median(warm); }

double FreshRow::Ratio() const {
  std::vector<double> ratios;
  for (size_t i = 0; i < fresh.size() && i < warm.size(); ++i) {
    const double warm_mibs = warm[i].put.MiBPerSecond();
    ratios.push_back(warm_mibs > 0 ? fresh[i].put.MiBPerSecond() / warm_mibs : 0);
  }
  return MedianOf(std::move(ratios));
}

double FreshRow::MedianStartSeconds(bool warm_side) const {
  std::vector<double> seconds;
  for (const FreshSample& s : warm_side ? warm : fresh) seconds.push_back(s.start_seconds);
  return MedianOf(std::move(seconds));
}

uint64_t FreshRow::Errors() const {
  uint64_t errors = 0;
  for (const std::vector<FreshSample>* side : {&fresh, &warm}) {
    for (const FreshSample& s : *side) errors += s.errors + s.put.errors;
  }
  return errors;
}

int RunFresh(const BenchOptions& o, const SpawnEnv& env, const RunFacts& machine) {
  ::signal(SIGPIPE, SIG_IGN);
  Result<std::string> key_hex = RandomAuthKeyHex();
  if (!key_hex.ok()) {
    std::fprintf(stderr, "memkv-bench: %s\n", key_hex.status().ToString().c_str());
    return 1;
  }
  PrintHeader(stdout, o, env, machine);
  std::fflush(stdout);
  const uint32_t max_conns = *std::max_element(o.conns.begin(), o.conns.end());
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  std::vector<FreshRow> rows;
  uint64_t errors = 0;
  for (uint64_t size : o.sizes_bytes) {
    const Payloads payloads(size, kDistinctValues, max_conns);
    const uint64_t footprint = (size + kPoolUnitBytes - 1) / kPoolUnitBytes * kPoolUnitBytes;
    for (uint32_t conns : o.conns) {
      FreshRow row;
      row.size_bytes = size;
      row.conns = conns;
      row.max_keys = std::max<uint64_t>(o.pool_bytes / 16 * 15 / footprint, 1);
      const std::vector<std::string> keys = FreshKeys(size, conns, row.max_keys);
      const FreshCell cell{size, conns, &keys, &payloads, FormatValueSize(size) + " x" + std::to_string(conns)};
      for (uint32_t rep = 0; rep < o.repeat; ++rep) {
        row.fresh.push_back(RunSide(o, env, *key_hex, cell, false));
        row.warm.push_back(RunSide(o, env, *key_hex, cell, true));
        if (progress) {
          std::fprintf(stderr, "[%zu/%zu, %u/%u] put %s: fresh %.1f MiB/s, warm %.1f MiB/s\n", rows.size() + 1,
                       o.sizes_bytes.size() * o.conns.size(), rep + 1, o.repeat, cell.name.c_str(),
                       row.fresh.back().put.MiBPerSecond(), row.warm.back().put.MiBPerSecond());
        }
      }
      errors += row.Errors();
      rows.push_back(std::move(row));
    }
  }
  PrintTable(stdout, rows, o.pool_bytes);
  Status written = WriteTextFile(o.json_path, Json(o, env, machine, rows, errors));
  if (!written.ok()) std::fprintf(stderr, "memkv-bench: %s\n", written.ToString().c_str());
  std::printf("\n%s; results in %s\n", errors == 0 ? "no errors" : "ERRORS: see stderr", o.json_path.c_str());
  return errors == 0 && written.ok() ? 0 : 1;
}

}  // namespace memkv::bench
