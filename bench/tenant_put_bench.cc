// memkv-tenant-bench: puts under load from several tenants at once, one
// server binary against another in the same run (docs/benchmarks.md,
// "Tenants under load").
//
// Each round spawns a server from each binary in turn (alternating, the
// order swapped every round) with N tenants configured, each with a DRAM
// quota, and runs one client thread per tenant, each authenticated with its
// tenant's key, putting --size values (singly, or in batches of --batch) for
// --seconds. Prints each round's puts/s and the ratio of the two binaries;
// the median of the rounds' ratios is the figure. --json PATH also writes
// the flags, every round and the medians to PATH as one JSON object.
//
//   memkv-tenant-bench --memkv build/memkv --baseline /path/to/other/memkv [--json PATH]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/json.h"
#include "base/text_file.h"
#include "bench/memkv_server.h"
#include "memkv/client.h"

namespace {

using memkv::bench::MemkvServer;
using memkv::bench::MemkvServerConfig;

struct Options {
  std::string memkv = "memkv";
  std::string baseline;
  int tenants = 8;
  uint64_t size = 4096;
  int batch = 1;
  double seconds = 3.0;
  int rounds = 3;
  uint64_t pool = 1ULL << 30;
  std::string json;  // empty: no JSON
};

// One round's puts/s of each binary.
struct Round {
  double memkv = 0;
  double baseline = 0;
};

const std::string kAdminHex(64, 'a');

std::string TenantKey(int i) {
  char buf[65];
  for (int j = 0; j < 64; ++j) buf[j] = "0123456789abcdef"[(i * 7 + j) % 16];
  buf[64] = 0;
  std::string key(buf);
  key[0] = 'f';  // never the administrator's
  key[1] = "0123456789abcdef"[i % 16];
  return key;
}

std::string TenantsYaml(const Options& o) {
  std::string yaml = "tenants:\n";
  const uint64_t quota = o.pool / static_cast<uint64_t>(o.tenants + 1);
  for (int i = 0; i < o.tenants; ++i) {
    yaml += "  - name: team-" + std::to_string(i) + "\n    prefix: \"team-" + std::to_string(i) +
            "/\"\n    key: \"" + TenantKey(i) + "\"\n    dram_quota: " + std::to_string(quota) + "\n";
  }
  return yaml;
}

// Puts per second of one server under the tenants' load.
double RunOnce(const std::string& binary, const Options& o) {
  MemkvServerConfig config;
  config.pool_bytes = o.pool;
  config.extra_yaml = TenantsYaml(o);
  memkv::Result<std::unique_ptr<MemkvServer>> server =
      MemkvServer::Start(binary, config, kAdminHex, std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  if (!server.ok()) {
    std::fprintf(stderr, "%s: %s\n", binary.c_str(), server.status().ToString().c_str());
    std::exit(1);
  }
  std::vector<std::unique_ptr<memkv::Client>> clients;
  for (int i = 0; i < o.tenants; ++i) {
    memkv::ClientOptions co;
    co.servers = {(*server)->address()};
    co.auth_key_hex = TenantKey(i);
    co.transport = "tcp";
    co.num_connections = 1;
    memkv::Result<std::unique_ptr<memkv::Client>> c = memkv::Client::Create(co);
    if (!c.ok()) {
      std::fprintf(stderr, "client %d: %s\n", i, c.status().ToString().c_str());
      std::exit(1);
    }
    clients.push_back(std::move(c).value());
  }
  std::atomic<bool> go{false}, stop{false};
  std::atomic<uint64_t> puts{0}, failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < o.tenants; ++i) {
    threads.emplace_back([&, i] {
      memkv::Client& c = *clients[static_cast<size_t>(i)];
      std::vector<uint8_t> value(o.size, static_cast<uint8_t>(i));
      std::vector<std::string> names(static_cast<size_t>(o.batch));
      std::vector<std::string_view> keys(names.size());
      std::vector<std::span<const uint8_t>> values(names.size(), value);
      while (!go.load()) std::this_thread::yield();
      for (uint64_t n = 0; !stop.load(std::memory_order_relaxed); ++n) {
        if (o.batch == 1) {
          if (c.Put("k" + std::to_string(n % 4096), value).ok()) {
            puts.fetch_add(1, std::memory_order_relaxed);
          } else {
            failures.fetch_add(1, std::memory_order_relaxed);
          }
          continue;
        }
        for (size_t j = 0; j < names.size(); ++j) {
          names[j] = "k" + std::to_string((n * names.size() + j) % 4096);
          keys[j] = names[j];
        }
        memkv::BatchResult r = c.BatchPut(keys, values);
        for (const memkv::Status& s : r.statuses) (s.ok() ? puts : failures).fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  const auto start = std::chrono::steady_clock::now();
  go.store(true);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));  // the measured interval itself
  stop.store(true);
  for (std::thread& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failures.load() > 0) std::fprintf(stderr, "%s: %llu puts failed\n", binary.c_str(),
                                        static_cast<unsigned long long>(failures.load()));
  clients.clear();
  (*server)->Stop();
  return static_cast<double>(puts.load()) / elapsed;
}

void Usage() {
  std::fprintf(stderr,
               "usage: memkv-tenant-bench --memkv PATH --baseline PATH [--tenants N] [--size BYTES] [--batch N]\n"
               "                          [--seconds S] [--rounds N] [--json PATH]\n");
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The flags, every round (numbered from 1, as printed) and the medians of
// each column over the rounds; the ratio's is the figure the last line prints.
std::string ResultJson(const Options& o, const std::vector<Round>& rounds) {
  memkv::JsonWriter w;
  w.BeginObject()
      .Key("memkv").String(o.memkv)
      .Key("baseline").String(o.baseline)
      .Key("tenants").Number(int64_t{o.tenants})
      .Key("value_bytes").Number(o.size)
      .Key("batch").Number(int64_t{o.batch})
      .Key("seconds_per_cell").Number(o.seconds)
      .Key("rounds").Number(int64_t{o.rounds})
      .Key("pool_bytes").Number(o.pool);
  std::vector<double> memkv, baseline, ratio;
  w.Key("rows").BeginArray();
  for (size_t r = 0; r < rounds.size(); ++r) {
    memkv.push_back(rounds[r].memkv);
    baseline.push_back(rounds[r].baseline);
    ratio.push_back(rounds[r].memkv / rounds[r].baseline);
    w.BeginObject()
        .Key("round").Number(uint64_t{r + 1})
        .Key("memkv_puts_per_s").Number(memkv.back())
        .Key("baseline_puts_per_s").Number(baseline.back())
        .Key("memkv_over_baseline_ratio").Number(ratio.back())
        .EndObject();
  }
  w.EndArray();
  w.Key("median").BeginObject()
      .Key("memkv_puts_per_s").Number(Median(memkv))
      .Key("baseline_puts_per_s").Number(Median(baseline))
      .Key("memkv_over_baseline_ratio").Number(Median(ratio))
      .EndObject();
  w.EndObject();
  return w.text() + "\n";
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        Usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--memkv") {
      o.memkv = next();
    } else if (arg == "--baseline") {
      o.baseline = next();
    } else if (arg == "--tenants") {
      o.tenants = std::stoi(next());
    } else if (arg == "--size") {
      o.size = std::stoull(next());
    } else if (arg == "--batch") {
      o.batch = std::stoi(next());
    } else if (arg == "--seconds") {
      o.seconds = std::stod(next());
    } else if (arg == "--rounds") {
      o.rounds = std::stoi(next());
    } else if (arg == "--json") {
      o.json = next();
    } else {
      Usage();
      return 2;
    }
  }
  if (o.baseline.empty() || o.tenants < 1 || o.batch < 1 || o.rounds < 1) {
    Usage();
    return 2;
  }
  std::printf("%d tenants, one connection each, %llu-byte values, batches of %d, %.1f s a cell, %d rounds\n",
              o.tenants, static_cast<unsigned long long>(o.size), o.batch, o.seconds, o.rounds);
  std::vector<double> ratios;
  std::vector<Round> rounds;
  for (int r = 0; r < o.rounds; ++r) {
    double memkv = 0, baseline = 0;
    if (r % 2 == 0) {
      memkv = RunOnce(o.memkv, o);
      baseline = RunOnce(o.baseline, o);
    } else {
      baseline = RunOnce(o.baseline, o);
      memkv = RunOnce(o.memkv, o);
    }
    ratios.push_back(memkv / baseline);
    rounds.push_back({memkv, baseline});
    std::printf("round %d: memkv %.0f puts/s, baseline %.0f puts/s, ratio %.3f\n", r + 1, memkv, baseline,
                ratios.back());
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf("memkv / baseline (median of %d rounds): %.3fx\n", o.rounds, ratios[ratios.size() / 2]);
  if (!o.json.empty()) {
    if (memkv::Status written = memkv::WriteTextFile(o.json, ResultJson(o, rounds)); !written.ok()) {
      std::fprintf(stderr, "memkv-tenant-bench: %s\n", written.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
