// memkv-rdma-probe: drives a running MemKV server through the public client
// library (memkv/client.h) the way a user would, checks every byte it reads
// back, and ends with one JSON line carrying the client's counters. The
// Soft-RoCE stage (tests/rdma/README.md) runs it inside a QEMU guest and
// judges the JSON; it is also handy by hand against any server.
//
// The client is configured only by the environment (Client::
// CreateFromEnvironment): MEMKV_SERVERS, MEMKV_AUTH_KEY, MEMKV_TRANSPORT,
// MEMKV_RDMA_DEVICES, MEMKV_RDMA_MTU, MEMKV_TIMEOUT_MS, ...
//
// Single-threaded except for the stall watchdog, which only reads an atomic
// and, on a hang, prints and exits the process.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/json.h"
#include "base/parse_number.h"
#include "memkv/client.h"
#include "tests/rdma/probe_report.h"

namespace memkv::probe {
namespace {

constexpr const char* kUsage = R"(Usage: memkv-rdma-probe COMMAND [options]

Commands (client settings come from MEMKV_SERVERS, MEMKV_AUTH_KEY,
MEMKV_TRANSPORT, MEMKV_RDMA_DEVICES, MEMKV_RDMA_MTU, MEMKV_TIMEOUT_MS, ...):
  roundtrip [--sizes N,N,...] [--prefix P]
      put one value of each size (pattern seeded by the size), read it back
      with Get and with GetInto, compare byte for byte
      (default sizes 0,1,4096,65536,1048576,2097153,16777216)
  load --count N --size S [--prefix P]
      N puts of distinct keys, then N gets, every byte checked
  stall --size S --seconds T [--after-error S2] [--prefix P]
      put+get in a loop for T seconds (or until S2 seconds, default 3, after
      the first failure: kill the server meanwhile); reports the slowest op
      and whether any op overran the client deadline (MEMKV_TIMEOUT_MS) by
      more than 1 s. A watchdog exits at once (code 1) when an op is still
      in flight 5 s past the deadline.
  bench --op put|get --size S --seconds T [--count N] [--depth D]
        [--batch B] [--prefix P]
      throughput of one op for T seconds over N keys (default 8, at least
      D x B) cycled in turn, from D threads (default 1, at most 256) each
      with one call at a time: a Put / GetInto, or with B > 1 (at most 4096)
      a BatchPut / BatchGetInto of B keys. Put writes the keys (values made
      before the clock starts), get reads them into per-thread buffers (put
      them first, same --prefix, --size, --depth and --batch; a get checks
      16 bytes at both ends). Reports ops (keys), MiB/s and the process's
      user/system CPU seconds. With D > MEMKV_NUM_CONNECTIONS (default 4)
      the threads wait for connections: set it to D
  wait --seconds T
      until a fresh client's Exists gets an answer (present or absent) from
      every server; for scripts that wait for a server to come up
Sizes take an optional k/m/g suffix (binary). Every command ends with one JSON
line {"ok":..,"failed":..,"mismatched":..,"stats":{..}}.
Exit: 0 every op ok and byte-exact (stall/wait: no hang, no wrong byte / a
server answered), 1 otherwise, 2 usage or client configuration error.
)";

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kMaxErrorsPrinted = 5;
// An op that ends this long after its deadline counts as a hang.
constexpr int64_t kHangSlackMs = 1000;
// The watchdog gives up on an op this long after its deadline.
constexpr int64_t kWatchdogSlackMs = 5000;

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Deterministic bytes for (seed, size): xorshift64, so a wrong offset or a
// stale block never compares equal.
std::vector<uint8_t> Pattern(uint64_t seed, size_t size) {
  std::vector<uint8_t> out(size);
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 0x5851F42D4C957F2DULL;
  for (size_t i = 0; i < size; ++i) {
    if (i % 8 == 0) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    out[i] = static_cast<uint8_t>(x >> (8 * (i % 8)));
  }
  return out;
}

// Offset of the first differing byte, or -1 when equal (sizes included).
int64_t FirstDifference(std::span<const uint8_t> want, std::span<const uint8_t> got) {
  const size_t n = std::min(want.size(), got.size());
  for (size_t i = 0; i < n; ++i) {
    if (want[i] != got[i]) return static_cast<int64_t>(i);
  }
  return want.size() == got.size() ? -1 : static_cast<int64_t>(n);
}

bool ParseSize(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) return false;
  uint64_t value = *ParseDecimal(std::string_view(text).substr(0, digits));  // 1 to 12 digits
  const std::string suffix = text.substr(digits);
  if (suffix == "k" || suffix == "K") value <<= 10;
  else if (suffix == "m" || suffix == "M") value <<= 20;
  else if (suffix == "g" || suffix == "G") value <<= 30;
  else if (!suffix.empty()) return false;
  *out = value;
  return true;
}

struct Flags {
  std::vector<uint64_t> sizes = {0, 1, 4096, 65536, 1048576, 2097153, 16777216};
  uint64_t count = 0;
  uint64_t size = 0;
  uint64_t seconds = 0;
  uint64_t after_error_s = 3;
  uint64_t depth = 1;
  uint64_t batch = 1;
  std::string prefix;
  std::string op;
};

// Returns false (after printing why) on a bad flag.
bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "memkv-rdma-probe: %s needs a value\n", a.c_str());
      return false;
    }
    const std::string v = argv[++i];
    bool ok = true;
    if (a == "--sizes") {
      f->sizes.clear();
      size_t start = 0;
      while (ok && start <= v.size()) {
        size_t comma = v.find(',', start);
        if (comma == std::string::npos) comma = v.size();
        uint64_t s = 0;
        ok = ParseSize(v.substr(start, comma - start), &s);
        f->sizes.push_back(s);
        start = comma + 1;
      }
    } else if (a == "--count") {
      ok = ParseSize(v, &f->count) && f->count > 0;
    } else if (a == "--size") {
      ok = ParseSize(v, &f->size);
    } else if (a == "--seconds") {
      ok = ParseSize(v, &f->seconds) && f->seconds > 0;
    } else if (a == "--after-error") {
      ok = ParseSize(v, &f->after_error_s);
    } else if (a == "--depth") {
      ok = ParseSize(v, &f->depth) && f->depth >= 1 && f->depth <= 256;
    } else if (a == "--batch") {
      ok = ParseSize(v, &f->batch) && f->batch >= 1 && f->batch <= 4096;
    } else if (a == "--prefix") {
      f->prefix = v;
    } else if (a == "--op") {
      f->op = v;
      ok = v == "put" || v == "get";
    } else {
      std::fprintf(stderr, "memkv-rdma-probe: unknown option '%s'\n%s", a.c_str(), kUsage);
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "memkv-rdma-probe: bad value '%s' for %s\n", v.c_str(), a.c_str());
      return false;
    }
  }
  if (f->prefix.empty()) {
    // Unique per run, so a rerun against the same server never reads old data.
    f->prefix = "probe-" + std::to_string(::getpid()) + "-" +
                std::to_string(Clock::now().time_since_epoch().count() % 1000000007) + "-";
  }
  return true;
}

// Prints the first few failures of a run, then only counts them.
class ErrorLog {
 public:
  void Add(const std::string& line) {
    if (printed_++ < kMaxErrorsPrinted) std::printf("error: %s\n", line.c_str());
    if (first_.empty()) first_ = line;
  }
  const std::string& first() const { return first_; }

 private:
  int printed_ = 0;
  std::string first_;
};

// Reads `key` back both ways and checks it against `want`. Returns a short
// description for the per-size line; counts into `tally`.
std::string CheckReadBack(Client& client, const std::string& key, std::span<const uint8_t> want,
                          Tally* tally, ErrorLog* errors) {
  std::string line;
  auto start = Clock::now();
  Result<std::vector<uint8_t>> got = client.Get(key);
  char ms[32];
  std::snprintf(ms, sizeof(ms), " %.1f ms", MsSince(start));
  if (!got.ok()) {
    ++tally->failed;
    errors->Add("get " + key + ": " + got.status().ToString());
    line += " get " + got.status().ToString();
  } else if (int64_t at = FirstDifference(want, *got); at >= 0) {
    ++tally->mismatched;
    errors->Add("get " + key + ": " + std::to_string(got->size()) + " bytes, first difference at " +
                std::to_string(at));
    line += " get MISMATCH@" + std::to_string(at);
  } else {
    ++tally->ok;
    line += std::string(" get ok") + ms;
  }

  std::vector<uint8_t> buffer(want.size());
  start = Clock::now();
  Result<size_t> n = client.GetInto(key, buffer);
  std::snprintf(ms, sizeof(ms), " %.1f ms", MsSince(start));
  if (!n.ok()) {
    ++tally->failed;
    errors->Add("getinto " + key + ": " + n.status().ToString());
    line += ", getinto " + n.status().ToString();
  } else if (int64_t at = FirstDifference(want, std::span(buffer.data(), *n)); at >= 0) {
    ++tally->mismatched;
    errors->Add("getinto " + key + ": " + std::to_string(*n) + " bytes, first difference at " +
                std::to_string(at));
    line += ", getinto MISMATCH@" + std::to_string(at);
  } else {
    ++tally->ok;
    line += std::string(", getinto ok") + ms;
  }
  return line;
}

int Roundtrip(Client& client, const Flags& f) {
  Tally tally;
  ErrorLog errors;
  uint64_t sum = 0;
  for (uint64_t size : f.sizes) {
    const std::string key = f.prefix + "rt-" + std::to_string(size);
    const std::vector<uint8_t> value = Pattern(size, size);
    auto start = Clock::now();
    Status put = client.Put(key, value);
    const double put_ms = MsSince(start);
    std::string line;
    if (!put.ok()) {
      ++tally.failed;
      errors.Add("put " + key + ": " + put.ToString());
      line = " put " + put.ToString();
    } else {
      ++tally.ok;
      char buf[48];
      std::snprintf(buf, sizeof(buf), " put ok %.1f ms,", put_ms);
      line = buf + CheckReadBack(client, key, value, &tally, &errors);
    }
    sum += size;
    std::printf("roundtrip %llu:%s\n", static_cast<unsigned long long>(size), line.c_str());
    std::fflush(stdout);
  }
  PrintSummary(tally, client.Stats(), {{"sizes_sum", std::to_string(sum)}});
  return tally.failed == 0 && tally.mismatched == 0 ? kExitOk : kExitFailed;
}

int Load(Client& client, const Flags& f) {
  Tally tally;
  ErrorLog errors;
  auto start = Clock::now();
  for (uint64_t i = 0; i < f.count; ++i) {
    const std::string key = f.prefix + "load-" + std::to_string(i);
    Status put = client.Put(key, Pattern(i + 1, f.size));
    if (put.ok()) {
      ++tally.ok;
    } else {
      ++tally.failed;
      errors.Add("put " + key + ": " + put.ToString());
    }
  }
  const double put_ms = MsSince(start);
  start = Clock::now();
  for (uint64_t i = 0; i < f.count; ++i) {
    const std::string key = f.prefix + "load-" + std::to_string(i);
    Result<std::vector<uint8_t>> got = client.Get(key);
    if (!got.ok()) {
      ++tally.failed;
      errors.Add("get " + key + ": " + got.status().ToString());
    } else if (int64_t at = FirstDifference(Pattern(i + 1, f.size), *got); at >= 0) {
      ++tally.mismatched;
      errors.Add("get " + key + ": " + std::to_string(got->size()) + " bytes, first difference at " +
                 std::to_string(at));
    } else {
      ++tally.ok;
    }
  }
  const double get_ms = MsSince(start);
  std::printf("load: %llu x %llu bytes: puts %.0f ms, gets %.0f ms\n",
              static_cast<unsigned long long>(f.count), static_cast<unsigned long long>(f.size), put_ms,
              get_ms);
  PrintSummary(tally, client.Stats(),
               {{"first_error", JsonQuote(errors.first())},
                {"put_ms", std::to_string(static_cast<int64_t>(put_ms))},
                {"get_ms", std::to_string(static_cast<int64_t>(get_ms))}});
  return tally.failed == 0 && tally.mismatched == 0 ? kExitOk : kExitFailed;
}

// CPU seconds (user, system) this process has used so far.
std::pair<double, double> CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return {s(u.ru_utime), s(u.ru_stime)};
}

// Whether the ends of `got` (16 bytes each) are those of `want`: a cheap check
// inside the timed loop; `roundtrip` and `load` check every byte.
bool EndsMatch(std::span<const uint8_t> want, std::span<const uint8_t> got) {
  if (want.size() != got.size()) return false;
  const size_t n = std::min<size_t>(16, want.size());
  return std::memcmp(want.data(), got.data(), n) == 0 &&
         std::memcmp(want.data() + want.size() - n, got.data() + got.size() - n, n) == 0;
}

// `depth` threads share the client, each with one op in flight at a time;
// an op is a single Put / GetInto, or with `batch` > 1 a BatchPut /
// BatchGetInto of that many keys. The keys (at least --count, default 8, and
// at least depth x batch) are named by index, so a get run finds what a put
// run with the same --prefix, --size, --depth and --batch wrote; thread t's
// op i takes the group of `batch` keys numbered (i x depth + t) modulo the
// groups.
int Bench(Client& client, const Flags& f) {
  const uint64_t per_op = f.batch, in_flight = f.depth * f.batch;
  uint64_t keys = std::max<uint64_t>(f.count == 0 ? 8 : f.count, in_flight);
  keys = (keys + in_flight - 1) / in_flight * in_flight;
  const uint64_t groups = keys / per_op;
  std::vector<std::string> names;
  std::vector<std::vector<uint8_t>> values;
  for (uint64_t i = 0; i < keys; ++i) {
    names.push_back(f.prefix + "bench-" + std::to_string(f.size) + "-" + std::to_string(i));
    values.push_back(Pattern(i + 1, f.size));
  }
  const bool put = f.op == "put";
  std::vector<Tally> tallies(f.depth);
  std::vector<ErrorLog> logs(f.depth);
  const auto cpu0 = CpuSeconds();
  const auto start = Clock::now();
  const double budget_ms = static_cast<double>(f.seconds) * 1000;
  auto worker = [&](uint64_t t) {
    Tally& tally = tallies[t];
    ErrorLog& errors = logs[t];
    std::vector<std::vector<uint8_t>> buffers(per_op, std::vector<uint8_t>(f.size));
    std::vector<std::string_view> batch_keys(per_op);
    std::vector<std::span<const uint8_t>> batch_values(per_op);
    std::vector<std::span<uint8_t>> batch_buffers(per_op);
    std::vector<size_t> sizes;
    for (uint64_t j = 0; j < per_op; ++j) batch_buffers[j] = buffers[j];
    // Counts one key's outcome; `k` is its index, `got` its bytes (gets).
    auto count = [&](uint64_t k, const Status& s, std::span<const uint8_t> got) {
      if (!s.ok()) {
        ++tally.failed;
        errors.Add(f.op + " " + names[k] + ": " + s.ToString());
      } else if (!put && !EndsMatch(values[k], got)) {
        ++tally.mismatched;
        errors.Add("get " + names[k] + ": " + std::to_string(got.size()) + " bytes, wrong bytes at an end");
      } else {
        ++tally.ok;
      }
    };
    for (uint64_t i = 0; MsSince(start) < budget_ms; ++i) {
      const uint64_t first = (i * f.depth + t) % groups * per_op;
      if (per_op == 1) {
        if (put) {
          count(first, client.Put(names[first], values[first]), {});
        } else {
          Result<size_t> n = client.GetInto(names[first], buffers[0]);
          count(first, n.status(), n.ok() ? std::span<const uint8_t>(buffers[0].data(), *n) : std::span<const uint8_t>());
        }
        continue;
      }
      for (uint64_t j = 0; j < per_op; ++j) {
        batch_keys[j] = names[first + j];
        batch_values[j] = values[first + j];
      }
      BatchResult r = put ? client.BatchPut(batch_keys, batch_values)
                          : client.BatchGetInto(batch_keys, batch_buffers, &sizes);
      for (uint64_t j = 0; j < per_op; ++j) {
        count(first + j, r.statuses[j],
              put || !r.statuses[j].ok() ? std::span<const uint8_t>()
                                         : std::span<const uint8_t>(buffers[j].data(), sizes[j]));
      }
    }
  };
  std::vector<std::thread> threads;
  for (uint64_t t = 1; t < f.depth; ++t) threads.emplace_back(worker, t);
  worker(0);
  for (std::thread& th : threads) th.join();
  const double ms = MsSince(start);
  Tally tally;
  std::string first_error;
  for (uint64_t t = 0; t < f.depth; ++t) {
    tally.ok += tallies[t].ok;
    tally.failed += tallies[t].failed;
    tally.mismatched += tallies[t].mismatched;
    if (first_error.empty()) first_error = logs[t].first();
  }
  const auto cpu1 = CpuSeconds();
  const double mib_s = static_cast<double>(tally.ok) * static_cast<double>(f.size) / (1 << 20) / (ms / 1000);
  std::printf("bench %s %llu, depth %llu, batch %llu: %llu ops in %.2f s, %.1f MiB/s, %.0f us per key, cpu user %.2f s sys %.2f s\n",
              f.op.c_str(), static_cast<unsigned long long>(f.size), static_cast<unsigned long long>(f.depth),
              static_cast<unsigned long long>(f.batch), static_cast<unsigned long long>(tally.ok), ms / 1000, mib_s, tally.ok == 0 ? 0.0 : ms * 1000 / static_cast<double>(tally.ok),
              cpu1.first - cpu0.first, cpu1.second - cpu0.second);
  char num[64];
  auto fmt = [&](double v) {
    std::snprintf(num, sizeof(num), "%.3f", v);
    return std::string(num);
  };
  PrintSummary(tally, client.Stats(),
               {{"op", JsonQuote(f.op)},
                {"size", std::to_string(f.size)},
                {"depth", std::to_string(f.depth)},
                {"batch", std::to_string(f.batch)},
                {"seconds", fmt(ms / 1000)},
                {"mib_s", fmt(mib_s)},
                {"cpu_user_s", fmt(cpu1.first - cpu0.first)},
                {"cpu_sys_s", fmt(cpu1.second - cpu0.second)},
                {"first_error", JsonQuote(first_error)}});
  return tally.failed == 0 && tally.mismatched == 0 ? kExitOk : kExitFailed;
}

// Shared between the stall loop and its watchdog.
struct StallState {
  std::atomic<int64_t> op_start_ms{-1};  // since `origin`; -1 when no op is in flight
  std::atomic<bool> done{false};
  Clock::time_point origin = Clock::now();
  int64_t NowMs() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - origin).count();
  }
};

void Watchdog(StallState* state, int64_t deadline_ms, Client* client) {
  while (!state->done.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int64_t start = state->op_start_ms.load();
    if (start < 0) continue;
    const int64_t age = state->NowMs() - start;
    if (age > deadline_ms + kWatchdogSlackMs) {
      std::printf("HANG: an op has been in flight for %lld ms (deadline %lld ms)\n",
                  static_cast<long long>(age), static_cast<long long>(deadline_ms));
      PrintSummary(Tally{}, client->Stats(),
                   {{"hang", "true"}, {"max_latency_ms", std::to_string(age)},
                    {"deadline_ms", std::to_string(deadline_ms)}});
      std::fflush(stdout);
      std::_Exit(kExitFailed);
    }
  }
}

int Stall(Client& client, const Flags& f, int64_t deadline_ms) {
  Tally tally;
  ErrorLog errors;
  StallState state;
  std::thread watchdog(Watchdog, &state, deadline_ms, &client);
  std::map<std::string, uint64_t> outcomes;  // status code name -> count
  double max_latency_ms = 0;
  uint64_t over_deadline = 0;
  int64_t first_error_ms = -1;
  int64_t ok_before_error = 0;
  std::vector<uint8_t> value = Pattern(f.size, f.size);
  // Time one op, record its outcome; true when it succeeded.
  auto record = [&](const char* what, const std::string& key, const Status& s, int64_t start_ms) {
    const double latency = static_cast<double>(state.NowMs() - start_ms);
    state.op_start_ms.store(-1);
    max_latency_ms = std::max(max_latency_ms, latency);
    if (latency > static_cast<double>(deadline_ms + kHangSlackMs)) {
      ++over_deadline;
      std::printf("SLOW: %s %s took %.0f ms (deadline %lld ms)\n", what, key.c_str(), latency,
                  static_cast<long long>(deadline_ms));
    }
    ++outcomes[std::string(StatusCodeName(s.code()))];
    if (s.ok()) {
      if (first_error_ms < 0) ++ok_before_error;
      return true;
    }
    ++tally.failed;
    errors.Add(std::string(what) + " " + key + " after " + std::to_string(int64_t(latency)) +
               " ms: " + s.ToString());
    if (first_error_ms < 0) first_error_ms = start_ms;
    return false;
  };
  for (uint64_t i = 0;; ++i) {
    const int64_t now = state.NowMs();
    if (now >= static_cast<int64_t>(f.seconds) * 1000) break;
    if (first_error_ms >= 0 && now - first_error_ms >= static_cast<int64_t>(f.after_error_s) * 1000) break;
    const std::string key = f.prefix + "stall-" + std::to_string(i % 8);
    int64_t start = state.NowMs();
    state.op_start_ms.store(start);
    if (!record("put", key, client.Put(key, value), start)) {
      // Pacing, not waiting: a dead server fails ops in microseconds, and
      // spinning would starve the guest's one CPU.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    ++tally.ok;
    start = state.NowMs();
    state.op_start_ms.store(start);
    Result<std::vector<uint8_t>> got = client.Get(key);
    if (!record("get", key, got.status(), start)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (int64_t at = FirstDifference(value, *got); at >= 0) {
      ++tally.mismatched;
      errors.Add("get " + key + ": " + std::to_string(got->size()) + " bytes, first difference at " +
                 std::to_string(at));
    } else {
      ++tally.ok;
    }
  }
  state.done.store(true);
  watchdog.join();
  std::string by_code = "{";
  for (const auto& [code, n] : outcomes) {
    if (by_code.size() > 1) by_code += ",";
    by_code += JsonQuote(code) + ":" + std::to_string(n);
  }
  by_code += "}";
  std::printf("stall: max latency %.0f ms, %llu op(s) over the %lld ms deadline + %lld ms\n",
              max_latency_ms, static_cast<unsigned long long>(over_deadline),
              static_cast<long long>(deadline_ms), static_cast<long long>(kHangSlackMs));
  PrintSummary(tally, client.Stats(),
               {{"hang", over_deadline > 0 ? "true" : "false"},
                {"max_latency_ms", std::to_string(static_cast<int64_t>(max_latency_ms))},
                {"deadline_ms", std::to_string(deadline_ms)},
                {"over_deadline", std::to_string(over_deadline)},
                {"ok_before_error", std::to_string(ok_before_error)},
                {"first_error_at_ms", std::to_string(first_error_ms)},
                {"first_error", JsonQuote(errors.first())},
                {"outcomes", by_code}});
  return over_deadline == 0 && tally.mismatched == 0 ? kExitOk : kExitFailed;
}

// Polls with a fresh client each time, so the client's per-server backoff
// after a refused connection never stretches the wait.
int Wait(const Flags& f) {
  const auto start = Clock::now();
  std::string last;
  while (MsSince(start) < static_cast<double>(f.seconds) * 1000) {
    Result<std::unique_ptr<Client>> client = Client::CreateFromEnvironment();
    if (!client.ok()) {
      std::fprintf(stderr, "memkv-rdma-probe: %s\n", client.status().ToString().c_str());
      return kExitUsage;
    }
    Result<bool> present = (*client)->Exists(f.prefix + "wait");
    if (present.ok()) {
      std::printf("wait: server answered after %.0f ms\n", MsSince(start));
      PrintSummary(Tally{1, 0, 0}, (*client)->Stats(), {});
      return kExitOk;
    }
    last = present.status().ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  std::printf("wait: no answer in %llu s; last: %s\n", static_cast<unsigned long long>(f.seconds),
              last.c_str());
  return kExitFailed;
}

int Main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitUsage : kExitOk;
  }
  const std::string command = argv[1];
  Flags f;
  if (!ParseFlags(argc, argv, &f)) return kExitUsage;
  if ((command == "load" && f.count == 0) || (command == "stall" && f.seconds == 0) ||
      (command == "wait" && f.seconds == 0) ||
      (command == "bench" && (f.seconds == 0 || f.op.empty() || f.size == 0))) {
    std::fprintf(stderr, "memkv-rdma-probe %s: missing --count / --seconds / --op / --size\n%s", command.c_str(), kUsage);
    return kExitUsage;
  }
  if (command == "wait") return Wait(f);

  Result<std::unique_ptr<Client>> client = Client::CreateFromEnvironment();
  if (!client.ok()) {
    std::fprintf(stderr, "memkv-rdma-probe: %s\n", client.status().ToString().c_str());
    return kExitUsage;
  }
  if (command == "roundtrip") return Roundtrip(**client, f);
  if (command == "load") return Load(**client, f);
  if (command == "bench") return Bench(**client, f);
  if (command == "stall") {
    // The deadline the client was built with: the same variable, same default.
    int64_t deadline_ms = ClientOptions{}.timeout_ms;
    if (const char* v = std::getenv("MEMKV_TIMEOUT_MS"); v != nullptr && *v != '\0') {
      deadline_ms = std::atoll(v);
    }
    return Stall(**client, f, deadline_ms);
  }
  std::fprintf(stderr, "memkv-rdma-probe: unknown command '%s'\n%s", command.c_str(), kUsage);
  return kExitUsage;
}

}  // namespace
}  // namespace memkv::probe

int main(int argc, char** argv) { return memkv::probe::Main(argc, argv); }
