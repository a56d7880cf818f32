// memkv-match-prefix-bench: a prefix-cache lookup of a chain of keys spread
// over the servers, MatchPrefix against the BatchExists (and its present
// prefix) it replaces, alternating call by call in one run
// (docs/benchmarks.md, "Prefix match"; run it with
// bench/match_prefix_bench.sh, which starts four servers on loopback).
//
// It puts --keys keys of 64 bytes (a chain, named by index), deleting key
// --hole when it is below --keys, then times --calls calls of each, one at a
// time, the two in alternating order after --warmup untimed calls of both,
// checks every answer, and prints the median and p99 latency of each in
// microseconds and the ratios MatchPrefix / BatchExists. --json PATH also
// writes those figures and the flags to PATH as one JSON object.
// The client comes from the environment (MEMKV_SERVERS, MEMKV_AUTH_KEY, ...).
//
// A program, not a test; single-threaded.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/text_file.h"
#include "memkv/client.h"

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "memkv-match-prefix-bench: %s\n", what.c_str());
  std::exit(1);
}

double NowMicros() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

struct Flags {
  size_t keys = 128;
  size_t hole = SIZE_MAX;  // none
  size_t calls = 5000;
  size_t warmup = 200;
  std::string json;  // empty: no JSON
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    if (i + 1 >= argc) Die("flag " + name + " needs a value");
    if (name == "--json") {
      f.json = argv[++i];
      continue;
    }
    const size_t value = std::strtoull(argv[++i], nullptr, 10);
    if (name == "--keys") {
      f.keys = value;
    } else if (name == "--hole") {
      f.hole = value;
    } else if (name == "--calls") {
      f.calls = value;
    } else if (name == "--warmup") {
      f.warmup = value;
    } else {
      Die("unknown flag " + name +
          "; allowed: --keys N (1..1024), --hole INDEX, --calls N, --warmup N, --json PATH");
    }
  }
  if (f.keys == 0 || f.keys > 1024) Die("--keys must be 1..1024");
  if (f.calls == 0) Die("--calls must be at least 1");
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  auto created = memkv::Client::CreateFromEnvironment();
  if (!created.ok()) Die(created.status().ToString());
  memkv::Client& client = **created;

  std::vector<std::string> names;
  for (size_t i = 0; i < flags.keys; ++i) names.push_back("bench/chain/" + std::to_string(i));
  const std::vector<std::string_view> keys(names.begin(), names.end());
  const std::vector<uint8_t> value(64, 0x5a);
  for (size_t i = 0; i < keys.size(); ++i) {
    memkv::Status s = i == flags.hole ? memkv::Status::Ok() : client.Put(keys[i], value);
    if (i == flags.hole) (void)client.Delete(keys[i]);
    if (!s.ok()) Die("put " + names[i] + ": " + s.ToString());
  }
  const size_t want = std::min(flags.hole, flags.keys);

  auto match = [&] {
    memkv::Result<size_t> n = client.MatchPrefix(keys);
    if (!n.ok()) Die("MatchPrefix: " + n.status().ToString());
    if (*n != want) Die("MatchPrefix answered " + std::to_string(*n) + ", want " + std::to_string(want));
  };
  auto exists = [&] {
    const size_t n = client.BatchExists(keys).present_prefix;
    if (n != want) Die("BatchExists answered " + std::to_string(n) + ", want " + std::to_string(want));
  };
  for (size_t i = 0; i < flags.warmup; ++i) {
    match();
    exists();
  }
  std::vector<double> match_us, exists_us;
  for (size_t i = 0; i < flags.calls; ++i) {
    // Alternating which goes first, so neither always follows the other.
    for (int turn = 0; turn < 2; ++turn) {
      const bool do_match = (turn == 0) == (i % 2 == 0);
      const double start = NowMicros();
      do_match ? match() : exists();
      (do_match ? match_us : exists_us).push_back(NowMicros() - start);
    }
  }
  const double m50 = Quantile(match_us, 0.5), m99 = Quantile(match_us, 0.99);
  const double e50 = Quantile(exists_us, 0.5), e99 = Quantile(exists_us, 0.99);
  std::printf("%zu keys, hole %s, %zu calls each\n", flags.keys,
              flags.hole < flags.keys ? std::to_string(flags.hole).c_str() : "none", flags.calls);
  std::printf("%-12s %10s %10s\n", "", "p50 us", "p99 us");
  std::printf("%-12s %10.1f %10.1f\n", "MatchPrefix", m50, m99);
  std::printf("%-12s %10.1f %10.1f\n", "BatchExists", e50, e99);
  std::printf("%-12s %10.2f %10.2f\n", "ratio", m50 / e50, m99 / e99);
  if (!flags.json.empty()) {
    memkv::JsonWriter w;
    w.BeginObject()
        .Key("keys").Number(uint64_t{flags.keys})
        .Key("hole");
    flags.hole < flags.keys ? w.Number(uint64_t{flags.hole}) : w.Null();
    w.Key("calls").Number(uint64_t{flags.calls})
        .Key("warmup_calls").Number(uint64_t{flags.warmup})
        .Key("match_prefix_median_us").Number(m50)
        .Key("match_prefix_p99_us").Number(m99)
        .Key("batch_exists_median_us").Number(e50)
        .Key("batch_exists_p99_us").Number(e99)
        .Key("median_match_prefix_over_batch_exists_ratio").Number(m50 / e50)
        .Key("p99_match_prefix_over_batch_exists_ratio").Number(m99 / e99)
        .EndObject();
    memkv::Status written = memkv::WriteTextFile(flags.json, w.text() + "\n");
    if (!written.ok()) Die(written.ToString());
  }
  return 0;
}
