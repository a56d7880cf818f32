#include "bench/measure.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <latch>
#include <string>
#include <thread>

#include "bench/cpu_time.h"

namespace memkv::bench {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

constexpr uint64_t kErrorsShownPerCell = 5;
constexpr size_t kReservedSamples = 1 << 16;

int64_t NanosBetween(SteadyTime a, SteadyTime b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

// What one thread measured.
struct ThreadTally {
  std::vector<int64_t> latencies_ns;
  uint64_t ops = 0;
  uint64_t errors = 0;
  SteadyTime end;
};

// The timed loop of one thread: waits for the common start, then runs `op`
// until the deadline.
void TimedLoop(uint32_t thread, const DriveSpec& spec, const OpFn& op, const std::atomic<bool>& go,
               const SteadyTime& deadline, std::atomic<uint64_t>* started, std::atomic<uint64_t>* cell_errors,
               ThreadTally* tally) {
  go.wait(false);
  tally->latencies_ns.reserve(kReservedSamples);
  for (;;) {
    SteadyTime start = std::chrono::steady_clock::now();
    if (start >= deadline) break;
    if (spec.max_ops != 0 && started->fetch_add(1, std::memory_order_relaxed) >= spec.max_ops) break;
    Status s = op(thread);
    SteadyTime end = std::chrono::steady_clock::now();
    if (s.ok()) {
      tally->latencies_ns.push_back(NanosBetween(start, end));
      ++tally->ops;
    } else {
      ++tally->errors;
      ReportError(spec.what, s, cell_errors->fetch_add(1));
    }
  }
  tally->end = std::chrono::steady_clock::now();
}

CellResult Summarize(const DriveSpec& spec, std::vector<ThreadTally>& tallies, SteadyTime start) {
  CellResult r;
  std::vector<int64_t> all;
  SteadyTime last_end = start;
  for (ThreadTally& t : tallies) {
    r.ops += t.ops;
    r.errors += t.errors;
    all.insert(all.end(), t.latencies_ns.begin(), t.latencies_ns.end());
    last_end = std::max(last_end, t.end);
  }
  std::sort(all.begin(), all.end());
  r.bytes = r.ops * spec.bytes_per_op;
  r.seconds = double(NanosBetween(start, last_end)) / 1e9;
  r.p50_us = PercentileUs(all, 0.50);
  r.p99_us = PercentileUs(all, 0.99);
  r.p999_us = PercentileUs(all, 0.999);
  r.p9999_us = PercentileUs(all, 0.9999);
  return r;
}

std::optional<double> ServerCpuNow(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  Result<double> s = ProcessCpuSeconds(pid);
  if (s.ok()) return *s;
  std::fprintf(stderr, "warning: server CPU time: %s\n", s.status().ToString().c_str());
  return std::nullopt;
}

std::optional<double> PerGiB(std::optional<double> cpu_s, uint64_t bytes) {
  if (!cpu_s || bytes == 0) return std::nullopt;
  return *cpu_s / (double(bytes) / double(1ULL << 30));
}

}  // namespace

std::optional<double> CellResult::ClientCpuPerGiB() const { return PerGiB(client_cpu_s, bytes); }
std::optional<double> CellResult::ServerCpuPerGiB() const { return PerGiB(server_cpu_s, bytes); }
std::optional<double> CellResult::CpuPerGiB() const {
  if (!server_cpu_s) return std::nullopt;
  return PerGiB(client_cpu_s + *server_cpu_s, bytes);
}

void ReportError(const std::string& what, const Status& status, uint64_t errors_so_far) {
  // One fprintf per line: stdio locks the stream, so lines stay whole.
  if (errors_so_far < kErrorsShownPerCell) {
    std::fprintf(stderr, "error: %s: %s\n", what.c_str(), status.ToString().c_str());
  } else if (errors_so_far == kErrorsShownPerCell) {
    std::fprintf(stderr, "error: %s: more errors; see the errors column\n", what.c_str());
  }
}

double PercentileUs(std::span<const int64_t> sorted_ns, double p) {
  if (sorted_ns.empty()) return 0;
  auto rank = static_cast<size_t>(std::ceil(p * double(sorted_ns.size())));
  rank = std::clamp<size_t>(rank, 1, sorted_ns.size());
  return double(sorted_ns[rank - 1]) / 1e3;
}

CellResult Drive(const DriveSpec& spec, const WarmupFn& warmup, const OpFn& op) {
  std::vector<ThreadTally> tallies(spec.threads);
  std::atomic<bool> go{false};
  std::atomic<uint64_t> cell_errors{0};
  std::atomic<uint64_t> started{0};
  std::latch ready(spec.threads);
  SteadyTime deadline;  // written before `go` is released
  std::vector<std::thread> threads;
  threads.reserve(spec.threads);
  for (uint32_t i = 0; i < spec.threads; ++i) {
    threads.emplace_back([&, i] {
      // Named after the target ("memkv", "raw", "redis": the first word of
      // spec.what), so that `perf report --comm memkv` shows one target's
      // timed threads alone.
      const std::string name = spec.what.substr(0, std::min<size_t>(spec.what.find(' '), 15));
      pthread_setname_np(pthread_self(), name.c_str());
      if (warmup) warmup(i);
      ready.count_down();
      TimedLoop(i, spec, op, go, deadline, &started, &cell_errors, &tallies[i]);
    });
  }
  ready.wait();
  const std::optional<double> server_cpu_before = ServerCpuNow(spec.server_pid);
  const double client_cpu_before = SelfCpuSeconds();
  SteadyTime start = std::chrono::steady_clock::now();
  deadline = start + std::chrono::nanoseconds(static_cast<int64_t>(spec.seconds * 1e9));
  go.store(true);
  go.notify_all();
  for (std::thread& t : threads) t.join();
  const double client_cpu_after = SelfCpuSeconds();
  const std::optional<double> server_cpu_after = ServerCpuNow(spec.server_pid);
  CellResult r = Summarize(spec, tallies, start);
  r.client_cpu_s = client_cpu_after - client_cpu_before;
  if (server_cpu_before && server_cpu_after) r.server_cpu_s = *server_cpu_after - *server_cpu_before;
  return r;
}

uint64_t ForEachItem(uint32_t threads, uint64_t items, const std::string& what,
                     const std::function<Status(uint32_t thread, uint64_t item)>& fn) {
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> failed{0};
  std::vector<std::thread> pool;
  const auto n = static_cast<uint32_t>(std::clamp<uint64_t>(items, 1, threads));
  for (uint32_t t = 0; t < n; ++t) {
    pool.emplace_back([&, t] {
      for (uint64_t i = next.fetch_add(1); i < items; i = next.fetch_add(1)) {
        Status s = fn(t, i);
        if (!s.ok()) ReportError(what, s, failed.fetch_add(1));
      }
    });
  }
  for (std::thread& th : pool) th.join();
  return failed.load();
}

}  // namespace memkv::bench
