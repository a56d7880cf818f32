// memkv-large-value-bench: one large value against many small ones, the same
// bytes over the same connection count, alternating in one run
// (docs/benchmarks.md, "Large values"; run it with bench/large_value_bench.sh,
// which starts the servers).
//
// Each round puts --total bytes as values of --small bytes (distinct keys,
// one call at a time), then gets them back into one buffer; and puts the
// same bytes as one value and gets it back (the two in alternating order,
// after one untimed pass of both). It prints the median MiB/s of each and
// the ratio large / small. Gets are checked against what was put.
// --json PATH also writes those figures, every round's and the flags to PATH
// as one JSON object. The client comes from the environment (MEMKV_SERVERS,
// MEMKV_AUTH_KEY, ...).
//
// A program, not a test; single-threaded.
#include <sys/mman.h>

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
  std::fprintf(stderr, "memkv-large-value-bench: %s\n", what.c_str());
  std::exit(1);
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

uint64_t ParseBytes(const char* text) {
  char* end = nullptr;
  const uint64_t n = std::strtoull(text, &end, 10);
  const std::string unit = end;
  if (unit.empty()) return n;
  if (unit == "K" || unit == "KiB") return n << 10;
  if (unit == "M" || unit == "MiB") return n << 20;
  if (unit == "G" || unit == "GiB") return n << 30;
  Die(std::string("unknown size unit in '") + text + "'; use KiB, MiB or GiB");
}

// Anonymous memory of `size` bytes, untouched until used.
uint8_t* Map(uint64_t size) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) Die("mmap of " + std::to_string(size) + " bytes failed");
  return static_cast<uint8_t*>(p);
}

// One op's row of the table: the medians, the ratio and every round's MiB/s.
void WriteRow(memkv::JsonWriter& w, const char* op, const std::vector<double>& small,
              const std::vector<double>& large) {
  w.BeginObject()
      .Key("op").String(op)
      .Key("small_values_median_mib_per_s").Number(Median(small))
      .Key("one_value_median_mib_per_s").Number(Median(large))
      .Key("one_value_over_small_values_ratio").Number(Median(large) / Median(small));
  w.Key("small_values_mib_per_s").BeginArray();
  for (double x : small) w.Number(x);
  w.EndArray().Key("one_value_mib_per_s").BeginArray();
  for (double x : large) w.Number(x);
  w.EndArray().EndObject();
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t total = uint64_t{4} << 30;
  uint64_t small = uint64_t{2} << 20;
  int rounds = 3;
  std::string json;
  if (argc % 2 == 0) Die(std::string("flag ") + argv[argc - 1] + " needs a value");
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--total") {
      total = ParseBytes(argv[i + 1]);
    } else if (flag == "--small") {
      small = ParseBytes(argv[i + 1]);
    } else if (flag == "--rounds") {
      rounds = std::atoi(argv[i + 1]);
    } else if (flag == "--json") {
      json = argv[i + 1];
    } else {
      Die("usage: memkv-large-value-bench [--total 4GiB] [--small 2MiB] [--rounds 3] [--json PATH]");
    }
  }
  if (small == 0 || total % small != 0 || rounds < 1) Die("--total must be a multiple of --small; --rounds >= 1");
  auto created = memkv::Client::CreateFromEnvironment();
  if (!created.ok()) Die(created.status().ToString());
  std::unique_ptr<memkv::Client> client = std::move(created).value();

  uint8_t* src = Map(total);
  uint8_t* dst = Map(total);
  for (uint64_t i = 0; i < total; i += 8) {
    const uint64_t x = (i >> 3) * 0x9e3779b97f4a7c15ULL;
    std::memcpy(src + i, &x, std::min<uint64_t>(8, total - i));
  }
  const uint64_t count = total / small;
  const double mib = double(total) / double(1 << 20);
  std::vector<double> small_put, small_get, large_put, large_get;
  const auto run_small = [&](bool timed) {
    double t = Now();
    for (uint64_t k = 0; k < count; ++k) {
      memkv::Status s = client->Put("small/" + std::to_string(k), std::span<const uint8_t>(src + k * small, small));
      if (!s.ok()) Die(s.ToString());
    }
    if (timed) small_put.push_back(mib / (Now() - t));
    t = Now();
    for (uint64_t k = 0; k < count; ++k) {
      auto got = client->GetInto("small/" + std::to_string(k), std::span<uint8_t>(dst + k * small, small));
      if (!got.ok()) Die(got.status().ToString());
    }
    if (timed) small_get.push_back(mib / (Now() - t));
    if (std::memcmp(src, dst, total) != 0) Die("small values read back differ from what was put");
    for (uint64_t k = 0; k < count; ++k) (void)client->Delete("small/" + std::to_string(k));
    std::memset(dst, 0, total);
  };
  const auto run_large = [&](bool timed) {
    double t = Now();
    memkv::Status s = client->Put("large", std::span<const uint8_t>(src, total));
    if (!s.ok()) Die(s.ToString());
    if (timed) large_put.push_back(mib / (Now() - t));
    t = Now();
    auto got = client->GetInto("large", std::span<uint8_t>(dst, total));
    if (!got.ok()) Die(got.status().ToString());
    if (timed) large_get.push_back(mib / (Now() - t));
    if (*got != total || std::memcmp(src, dst, total) != 0) Die("the large value read back differs");
    (void)client->Delete("large");
    std::memset(dst, 0, total);
  };
  // One untimed pass first: every page of both buffers and of the server's
  // pool is faulted in before anything is timed. Then the order alternates.
  run_small(false);
  run_large(false);
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      run_small(true);
      run_large(true);
    } else {
      run_large(true);
      run_small(true);
    }
  }
  std::printf("%.0f MiB as %llu values of %llu KiB, then as one value; one connection at a time; %d rounds, "
              "median MiB/s\n",
              mib, static_cast<unsigned long long>(count), static_cast<unsigned long long>(small >> 10), rounds);
  std::printf("%-6s %14s %14s %8s\n", "op", "small values", "one value", "ratio");
  std::printf("%-6s %14.0f %14.0f %8.2f\n", "put", Median(small_put), Median(large_put),
              Median(large_put) / Median(small_put));
  std::printf("%-6s %14.0f %14.0f %8.2f\n", "get", Median(small_get), Median(large_get),
              Median(large_get) / Median(small_get));
  if (!json.empty()) {
    memkv::JsonWriter w;
    w.BeginObject()
        .Key("total_bytes").Number(total)
        .Key("small_value_bytes").Number(small)
        .Key("small_values").Number(count)
        .Key("rounds").Number(int64_t{rounds});
    w.Key("rows").BeginArray();
    WriteRow(w, "put", small_put, large_put);
    WriteRow(w, "get", small_get, large_get);
    w.EndArray().EndObject();
    memkv::Status written = memkv::WriteTextFile(json, w.text() + "\n");
    if (!written.ok()) Die(written.ToString());
  }
  return 0;
}
