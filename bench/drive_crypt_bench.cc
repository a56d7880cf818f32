// memkv-drive-crypt-bench: what encryption at rest costs on the drive tier.
// Two extent stores on drive files in the same directory, one formatted
// plain and one encrypted (storage.encryption: aes-256-gcm), take the same
// puts and gets of --value-bytes values from --threads threads, round after
// round, alternating which goes first; each round reports both throughputs
// and their ratio (encrypted / plain), and the end the median ratio of all
// rounds (docs/storage.md, "Encryption at rest"). --json PATH also writes
// every round's figures, their medians and the flags to PATH as one JSON
// object. A program, not a test: a smoke run keeps it from rotting.
//
//   memkv-drive-crypt-bench [--dir DIR] [--value-bytes B] [--values N] [--rounds N]
//                           [--threads N] [--file-size B] [--block-size B] [--json PATH]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/checksum.h"
#include "base/json.h"
#include "base/log.h"
#include "base/text_file.h"
#include "base/units.h"
#include "drive/extent_store.h"

namespace memkv::drive {
namespace {

struct Args {
  std::string dir;
  uint64_t value_bytes = 2 << 20;
  uint64_t values = 64;        // per round and store
  int rounds = 6;
  int threads = 4;
  uint64_t file_size = 1ull << 30;
  uint64_t block_size = 4 << 20;
  std::string json;  // empty: no JSON
};

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "memkv-drive-crypt-bench: %s\nusage: memkv-drive-crypt-bench [--dir DIR] [--value-bytes B] "
               "[--values N] [--rounds N] [--threads N] [--file-size B] [--block-size B]\n"
               "                               [--json PATH]\n",
               why.c_str());
  std::exit(2);
}

uint64_t SizeArg(const std::string& flag, const char* text) {
  Result<uint64_t> v = ParseSize(text);
  if (!v.ok() || *v == 0) Usage(flag + ": '" + text + "' is not a size (e.g. 2MiB)");
  return *v;
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (i + 1 >= argc) Usage(f + " needs a value");
    const char* v = argv[++i];
    if (f == "--dir") a.dir = v;
    else if (f == "--value-bytes") a.value_bytes = SizeArg(f, v);
    else if (f == "--values") a.values = std::strtoull(v, nullptr, 10);
    else if (f == "--rounds") a.rounds = std::atoi(v);
    else if (f == "--threads") a.threads = std::atoi(v);
    else if (f == "--file-size") a.file_size = SizeArg(f, v);
    else if (f == "--block-size") a.block_size = SizeArg(f, v);
    else if (f == "--json") a.json = v;
    else Usage("unknown flag " + f);
  }
  if (a.values == 0 || a.rounds < 1 || a.threads < 1) Usage("--values, --rounds and --threads are at least 1");
  return a;
}

struct Store {
  std::string name;
  std::unique_ptr<ExtentStore> store;
};

// Runs `op(i)` for i in [0, n) over `threads` threads; returns the seconds it took.
template <typename Op>
double Timed(uint64_t n, int threads, Op op) {
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (uint64_t i; (i = next.fetch_add(1)) < n;) {
        if (!op(t, i)) failed = true;
      }
    });
  }
  for (std::thread& th : pool) th.join();
  if (failed) {
    std::fprintf(stderr, "memkv-drive-crypt-bench: an operation failed (see the log)\n");
    std::exit(1);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One round's throughputs (MB/s, 1e6 bytes a second), [0] plain and
// [1] encrypted, as printed.
struct Round {
  double put[2] = {0, 0};
  double get[2] = {0, 0};
};

// The figures of one round, or their medians, as members of the object `w` is in.
void WriteFigures(JsonWriter& w, double plain_put, double plain_get, double encrypted_put, double encrypted_get,
                  double put_ratio, double get_ratio) {
  w.Key("plain_put_mb_per_s").Number(plain_put)
      .Key("plain_get_mb_per_s").Number(plain_get)
      .Key("encrypted_put_mb_per_s").Number(encrypted_put)
      .Key("encrypted_get_mb_per_s").Number(encrypted_get)
      .Key("put_encrypted_over_plain_ratio").Number(put_ratio)
      .Key("get_encrypted_over_plain_ratio").Number(get_ratio);
}

// The flags, every round and the medians (of each column over the rounds;
// the ratios' are the medians that the last line prints).
std::string ResultJson(const Args& a, const std::string& dir, const std::vector<Round>& rounds) {
  JsonWriter w;
  w.BeginObject()
      .Key("value_bytes").Number(a.value_bytes)
      .Key("values_per_round").Number(a.values)
      .Key("threads").Number(int64_t{a.threads})
      .Key("rounds").Number(int64_t{a.rounds})
      .Key("file_size_bytes").Number(a.file_size)
      .Key("block_size_bytes").Number(a.block_size)
      .Key("dir").String(dir);
  std::vector<double> column[6];
  w.Key("rows").BeginArray();
  for (size_t r = 0; r < rounds.size(); ++r) {
    const Round& x = rounds[r];
    const double figures[6] = {x.put[0], x.get[0], x.put[1], x.get[1], x.put[1] / x.put[0], x.get[1] / x.get[0]};
    for (int i = 0; i < 6; ++i) column[i].push_back(figures[i]);
    w.BeginObject().Key("round").Number(uint64_t{r});
    WriteFigures(w, figures[0], figures[1], figures[2], figures[3], figures[4], figures[5]);
    w.EndObject();
  }
  w.EndArray();
  w.Key("median").BeginObject();
  WriteFigures(w, Median(column[0]), Median(column[1]), Median(column[2]), Median(column[3]), Median(column[4]),
               Median(column[5]));
  w.EndObject().EndObject();
  return w.text() + "\n";
}

int Main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  SetLogLevel(LogLevel::kWarn);
  const bool own_dir = a.dir.empty();
  std::string dir = a.dir;
  if (own_dir) {
    char tmpl[] = "/var/tmp/memkv-crypt-bench-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) Usage("cannot make a scratch directory under /var/tmp");
    dir = tmpl;
  }
  MasterKey key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = uint8_t(i * 7 + 1);
  Store stores[2] = {{"plain", nullptr}, {"encrypted", nullptr}};
  for (int s = 0; s < 2; ++s) {
    DriveFormatOptions f;
    f.drives = {dir + "/" + stores[s].name + ".memkv"};
    f.file_size_bytes = a.file_size;
    f.block_size_bytes = a.block_size;
    f.force = true;
    if (s == 1) f.master_key = key;
    if (Status st = ExtentStore::Format(f); !st.ok()) Usage("format: " + st.ToString());
    ExtentStoreOptions o;
    o.drives = f.drives;
    if (s == 1) o.master_key = key;
    auto opened = ExtentStore::Open(o);
    if (!opened.ok()) Usage("open: " + opened.status().ToString());
    stores[s].store = std::move(opened).value();
  }
  std::vector<uint8_t> value(a.value_bytes);
  for (size_t i = 0; i < value.size(); ++i) value[i] = uint8_t(i * 131 + (i >> 12));
  const uint64_t checksum = Checksum(value.data(), value.size());
  const iovec whole{value.data(), value.size()};
  std::vector<std::vector<uint8_t>> bufs(size_t(a.threads), std::vector<uint8_t>(a.value_bytes));

  std::printf("memkv-drive-crypt-bench: %s values, %llu per round, %d threads, %d rounds, block %s, files in %s\n",
              FormatSize(a.value_bytes).c_str(), static_cast<unsigned long long>(a.values), a.threads, a.rounds,
              FormatSize(a.block_size).c_str(), dir.c_str());
  std::printf("%-6s %-10s %12s %12s\n", "round", "store", "put MB/s", "get MB/s");
  std::vector<double> put_ratio, get_ratio;
  std::vector<Round> rounds;
  const double mb = double(a.values * a.value_bytes) / 1e6;
  for (int r = 0; r < a.rounds; ++r) {
    double put[2] = {0, 0}, get[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const int s = (r + k) % 2;  // alternate which store goes first
      ExtentStore& st = *stores[s].store;
      put[s] = mb / Timed(a.values, a.threads, [&](int, uint64_t i) {
                 return st.PutIov("v" + std::to_string(i), std::span<const iovec>(&whole, 1), checksum).ok();
               });
      get[s] = mb / Timed(a.values, a.threads, [&](int t, uint64_t i) {
                 auto got = st.GetInto("v" + std::to_string(i), bufs[size_t(t)]);
                 return got.ok() && *got == value.size();
               });
    }
    for (int s = 0; s < 2; ++s) {
      std::printf("%-6d %-10s %12.0f %12.0f\n", r, stores[s].name.c_str(), put[s], get[s]);
    }
    put_ratio.push_back(put[1] / put[0]);
    get_ratio.push_back(get[1] / get[0]);
    rounds.push_back({{put[0], put[1]}, {get[0], get[1]}});
  }
  for (int s = 0; s < 2; ++s) {
    const ExtentStoreStats st = stores[s].store->Stats();
    if (st.checksum_failures + st.decrypt_failures != 0) {
      std::fprintf(stderr, "memkv-drive-crypt-bench: %s store had failed reads\n", stores[s].name.c_str());
      return 1;
    }
  }
  std::printf("encrypted / plain (median of %d rounds): put %.2fx, get %.2fx\n", a.rounds, Median(put_ratio),
              Median(get_ratio));
  for (Store& s : stores) s.store.reset();
  if (own_dir) std::filesystem::remove_all(dir);
  if (!a.json.empty()) {
    if (Status written = WriteTextFile(a.json, ResultJson(a, dir, rounds)); !written.ok()) {
      std::fprintf(stderr, "memkv-drive-crypt-bench: %s\n", written.ToString().c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace memkv::drive

int main(int argc, char** argv) { return memkv::drive::Main(argc, argv); }
