// memkv-loads-first-bench: the latency of loads while stores saturate the
// server, with network.loads_first on and off, alternating in one run
// (docs/benchmarks.md, "Loads before stores").
//
// Each cell spawns a `memkv start` (memory store) with loads_first as the
// cell says, puts --load-keys values of --load-size, then starts
// --store-conns store threads, each with its own client and connection,
// putting batches of --store-batch values of --store-size as fast as the
// server takes them, and once they run, one load thread on its own
// connection doing GetInto of those values one at a time for --seconds.
// Prints each cell's load p50 / p99 / p99.9 in microseconds, loads/s and
// the stores' MB/s, then each round's p99 ratio off / on and the median of
// the rounds'. The order of on and off is swapped every round. With --json,
// every cell goes to that file too.
//
//   build/memkv-loads-first-bench --memkv build/memkv
//
// A program, not a test (its smoke run checks only that it runs).
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
#include "bench/flags.h"
#include "bench/memkv_server.h"
#include "bench/report.h"
#include "memkv/client.h"

namespace {

using memkv::bench::MemkvServer;
using memkv::bench::MemkvServerConfig;

struct Options {
  std::string memkv = "memkv";
  int store_conns = 8;
  uint64_t store_size = 4ULL << 20;
  int store_batch = 2;
  int store_keys = 8;  // per store thread, overwritten in turn
  uint64_t load_size = 64 << 10;
  int load_keys = 64;
  double seconds = 3.0;
  int rounds = 3;
  int workers = 2;
  uint64_t pool = 1ULL << 30;
  std::string json;
};

struct Cell {
  bool loads_first = false;
  double p50_us = 0, p99_us = 0, p999_us = 0;
  double loads_per_s = 0;
  double store_mb_per_s = 0;
  uint64_t loads = 0, load_errors = 0, store_errors = 0;
};

const std::string kKeyHex(64, 'a');

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "memkv-loads-first-bench: %s\n", what.c_str());
  std::exit(1);
}

std::unique_ptr<memkv::Client> Connect(const std::string& address) {
  memkv::ClientOptions co;
  co.servers = {address};
  co.auth_key_hex = kKeyHex;
  co.transport = "tcp";
  co.num_connections = 1;
  co.timeout_ms = 60'000;
  co.store_shed_latency_ms = 0;  // measure the server: the client sheds nothing
  co.store_shed_inflight = 0;
  memkv::Result<std::unique_ptr<memkv::Client>> c = memkv::Client::Create(co);
  if (!c.ok()) Die("client: " + c.status().ToString());
  return std::move(c).value();
}

double Quantile(std::vector<double>& sorted, double q) {
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())))];
}

Cell RunCell(const Options& o, bool loads_first) {
  MemkvServerConfig config;
  config.pool_bytes = o.pool;
  config.network_yaml = std::string("  loads_first: ") + (loads_first ? "true" : "false") + "\n";
  config.workers = o.workers;
  memkv::Result<std::unique_ptr<MemkvServer>> server =
      MemkvServer::Start(o.memkv, config, kKeyHex, std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  if (!server.ok()) Die(server.status().ToString());
  const std::string address = (*server)->address();

  std::unique_ptr<memkv::Client> loader = Connect(address);
  std::vector<uint8_t> load_value(o.load_size, 0x5a);
  for (int k = 0; k < o.load_keys; ++k) {
    memkv::Status s = loader->Put("load/" + std::to_string(k), load_value);
    if (!s.ok()) Die("preload: " + s.ToString());
  }

  std::atomic<bool> stop{false};
  std::atomic<int> storing{0};
  std::atomic<uint64_t> stored_bytes{0}, store_errors{0};
  std::vector<std::thread> stores;
  for (int t = 0; t < o.store_conns; ++t) {
    stores.emplace_back([&, t] {
      std::unique_ptr<memkv::Client> c = Connect(address);
      std::vector<uint8_t> value(o.store_size, static_cast<uint8_t>(t));
      std::vector<std::string> names(static_cast<size_t>(o.store_batch));
      std::vector<std::string_view> keys(names.size());
      std::vector<std::span<const uint8_t>> values(names.size(), value);
      storing.fetch_add(1);
      for (uint64_t n = 0; !stop.load(std::memory_order_relaxed); ++n) {
        for (size_t j = 0; j < names.size(); ++j) {
          names[j] = "store/" + std::to_string(t) + "/" +
                     std::to_string((n * names.size() + j) % static_cast<uint64_t>(o.store_keys));
          keys[j] = names[j];
        }
        memkv::BatchResult r = c->BatchPut(keys, values);
        for (const memkv::Status& s : r.statuses) {
          if (s.ok()) {
            stored_bytes.fetch_add(o.store_size, std::memory_order_relaxed);
          } else {
            store_errors.fetch_add(1, std::memory_order_relaxed);
          }
        }
      }
    });
  }
  // The loads start once every store thread is connected and putting.
  while (storing.load() < o.store_conns) std::this_thread::yield();

  Cell cell;
  cell.loads_first = loads_first;
  std::vector<double> latencies_us;
  std::vector<uint8_t> buffer(o.load_size);
  const uint64_t stored_before = stored_bytes.load();
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration<double>(o.seconds);
  for (uint64_t n = 0; std::chrono::steady_clock::now() < end; ++n) {
    const std::string key = "load/" + std::to_string(n % static_cast<uint64_t>(o.load_keys));
    const auto t0 = std::chrono::steady_clock::now();
    memkv::Result<size_t> got = loader->GetInto(key, buffer);
    const auto t1 = std::chrono::steady_clock::now();
    if (!got.ok()) {
      ++cell.load_errors;
      continue;
    }
    latencies_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const uint64_t stored = stored_bytes.load() - stored_before;
  stop.store(true);
  for (std::thread& t : stores) t.join();
  loader.reset();
  (*server)->Stop();

  if (latencies_us.empty()) Die("no load succeeded");
  std::sort(latencies_us.begin(), latencies_us.end());
  cell.loads = latencies_us.size();
  cell.p50_us = Quantile(latencies_us, 0.50);
  cell.p99_us = Quantile(latencies_us, 0.99);
  cell.p999_us = Quantile(latencies_us, 0.999);
  cell.loads_per_s = static_cast<double>(cell.loads) / elapsed;
  cell.store_mb_per_s = static_cast<double>(stored) / elapsed / 1e6;
  cell.store_errors = store_errors.load();
  return cell;
}

void PrintCell(int round, const Cell& c) {
  std::printf("round %d  loads_first %-5s  load p50 %8.0f us  p99 %8.0f us  p99.9 %8.0f us  %7.0f loads/s  "
              "stores %7.0f MB/s%s\n",
              round, c.loads_first ? "on" : "off", c.p50_us, c.p99_us, c.p999_us, c.loads_per_s, c.store_mb_per_s,
              c.load_errors + c.store_errors > 0
                  ? ("  (" + std::to_string(c.load_errors) + " loads, " + std::to_string(c.store_errors) +
                     " stores failed)").c_str()
                  : "");
}

std::string CellsJson(const Options& o, const memkv::bench::RunFacts& facts, const std::vector<Cell>& cells,
                      double median_ratio) {
  memkv::JsonWriter w;
  w.BeginObject();
  memkv::bench::WriteMachineJson(w, facts);
  w.Key("store_conns").Number(static_cast<uint64_t>(o.store_conns));
  w.Key("store_size_bytes").Number(o.store_size);
  w.Key("store_batch").Number(static_cast<uint64_t>(o.store_batch));
  w.Key("load_size_bytes").Number(o.load_size);
  w.Key("seconds_per_cell").Number(o.seconds);
  w.Key("workers").Number(static_cast<uint64_t>(o.workers));
  w.Key("cells").BeginArray();
  for (const Cell& c : cells) {
    w.BeginObject();
    w.Key("loads_first").Bool(c.loads_first);
    w.Key("load_p50_us").Number(c.p50_us);
    w.Key("load_p99_us").Number(c.p99_us);
    w.Key("load_p999_us").Number(c.p999_us);
    w.Key("loads").Number(c.loads);
    w.Key("loads_per_s").Number(c.loads_per_s);
    w.Key("store_mb_per_s").Number(c.store_mb_per_s);
    w.Key("load_errors").Number(c.load_errors);
    w.Key("store_errors").Number(c.store_errors);
    w.EndObject();
  }
  w.EndArray();
  w.Key("p99_off_over_on_median").Number(median_ratio);
  w.EndObject();
  return w.text();
}

void Usage() {
  std::fprintf(stderr,
               "usage: memkv-loads-first-bench [--memkv PATH] [--store-conns N] [--store-size BYTES]\n"
               "         [--store-batch N] [--load-size BYTES] [--seconds S] [--rounds N] [--workers N]\n"
               "         [--pool BYTES] [--json PATH]\n");
}

// The flags into `o`; false (the problem on stderr) on a bad one.
bool ParseOptions(int argc, char** argv, Options* o) {
  using memkv::bench::ParseCount;
  auto count = [](const std::string& flag, const std::string& v, uint32_t max, int* out, std::string* error) {
    uint32_t n = 0;
    if (!ParseCount(flag, v, max, "count", &n, error)) return false;
    *out = static_cast<int>(n);
    return true;
  };
  auto size = [](const std::string& flag, const std::string& v, uint64_t* out, std::string* error) {
    memkv::Result<uint64_t> n = memkv::bench::ParseValueSize(v);
    if (!n.ok() || *n == 0) {
      *error = flag + ": '" + v + "' is not a size above 0";
      return false;
    }
    *out = *n;
    return true;
  };
  auto apply = [&](const std::string& flag, const std::string& v, std::string* error) {
    if (flag == "--memkv") return o->memkv = v, true;
    if (flag == "--json") return o->json = v, true;
    if (flag == "--store-conns") return count(flag, v, 1024, &o->store_conns, error);
    if (flag == "--store-batch") return count(flag, v, 1024, &o->store_batch, error);
    if (flag == "--rounds") return count(flag, v, 100, &o->rounds, error);
    if (flag == "--workers") return count(flag, v, 256, &o->workers, error);
    if (flag == "--store-size") return size(flag, v, &o->store_size, error);
    if (flag == "--load-size") return size(flag, v, &o->load_size, error);
    if (flag == "--pool") return size(flag, v, &o->pool, error);
    if (flag == "--seconds") {
      char* end = nullptr;
      o->seconds = std::strtod(v.c_str(), &end);
      if (end != v.c_str() + v.size() || !(o->seconds > 0)) {
        *error = "--seconds: '" + v + "' is not a number of seconds above 0";
        return false;
      }
      return true;
    }
    *error = "unknown option " + flag;
    return false;
  };
  auto known = [](std::string_view flag) {
    for (std::string_view f : {"--memkv", "--json", "--store-conns", "--store-batch", "--rounds", "--workers",
                               "--store-size", "--load-size", "--pool", "--seconds"}) {
      if (flag == f) return true;
    }
    return false;
  };
  bool help = false;
  std::string error;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!memkv::bench::WalkFlags(args, [](const std::string&) { return false; }, known, apply, &help, &error) || help) {
    if (!error.empty()) std::fprintf(stderr, "memkv-loads-first-bench: %s\n", error.c_str());
    Usage();
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, &o)) return 2;
  const memkv::bench::RunFacts facts = memkv::bench::GatherFacts(MEMKV_SOURCE_DIR, MEMKV_BUILD_TYPE);
  memkv::bench::PrintMachine(stdout, "memkv-loads-first-bench", facts);
  std::printf("%d store connections putting batches of %d x %llu bytes, 1 load connection getting %llu bytes, "
              "%d workers, %.1f s a cell, %d rounds\n",
              o.store_conns, o.store_batch, static_cast<unsigned long long>(o.store_size),
              static_cast<unsigned long long>(o.load_size), o.workers, o.seconds, o.rounds);
  std::vector<Cell> cells;
  std::vector<double> ratios;
  for (int r = 0; r < o.rounds; ++r) {
    Cell on, off;
    for (bool first : {r % 2 == 0, r % 2 != 0}) {
      Cell c = RunCell(o, first);
      PrintCell(r + 1, c);
      std::fflush(stdout);
      (first ? on : off) = c;
      cells.push_back(c);
    }
    ratios.push_back(off.p99_us / on.p99_us);
    std::printf("round %d: load p99 off / on %.2fx\n", r + 1, ratios.back());
  }
  std::sort(ratios.begin(), ratios.end());
  const double median = ratios[ratios.size() / 2];
  std::printf("load p99 loads_first off / on (median of %d rounds): %.2fx\n", o.rounds, median);
  if (!o.json.empty()) {
    memkv::Status s = memkv::bench::WriteTextFile(o.json, CellsJson(o, facts, cells, median));
    if (!s.ok()) Die(s.ToString());
  }
  return 0;
}
