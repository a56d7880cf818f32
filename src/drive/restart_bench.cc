// memkv-drive-restart-bench: how long an extent store takes to reopen
// (re-adopt every value from the journal, no data read) with many small
// values, and what they cost on the drives (data-area bytes per value byte,
// from the store's own figures). A program, not a test (docs/storage.md and
// docs/benchmarks.md have the figures).
//
//   memkv-drive-restart-bench [--blocks N] [--value-bytes B] [--block-size B]
//       [--drives N] [--threads N] [--repeat N] [--dir DIR] [--reuse] [--json PATH]
//
// Formats --drives files under --dir (a fresh directory under /tmp by
// default, removed at the end), writes --blocks values with --threads
// writers, then reopens the store --repeat times, first with the journal as
// written and then after a checkpoint. The reference, measured in the same
// run: reading the same journal bytes with plain O_DIRECT pread, i.e. the
// I/O part of a replay; the ratio shows what parsing and indexing add.
// --json PATH also writes every printed figure to PATH as one JSON object.
#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/bytes.h"
#include "base/json.h"
#include "base/log.h"
#include "base/text_file.h"
#include "base/units.h"
#include "drive/aligned_buffer.h"
#include "drive/drive_file.h"
#include "drive/extent_store.h"
#include "drive/format.h"

#ifndef MEMKV_BUILD_TYPE
#define MEMKV_BUILD_TYPE ""
#endif
#ifndef MEMKV_SOURCE_DIR
#define MEMKV_SOURCE_DIR "."
#endif

namespace memkv::drive {
namespace {

struct Args {
  uint64_t blocks = 100000;
  uint64_t value_bytes = 4096;
  uint64_t block_size = 4096;
  int drives = 2;
  int threads = 32;
  int repeat = 5;
  std::string dir;
  std::string json;
  bool reuse = false;  // the store under --dir exists: only reopen it
};

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[256];
  while (fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "?";
}

// Keys like the ones inference engines use: hex digests of token prefixes.
std::string Key(uint64_t i) {
  uint8_t b[16];
  uint64_t x = i * 0x9E3779B97F4A7C15ull + 0x1234;
  for (int k = 0; k < 16; ++k) {
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    b[k] = uint8_t(x >> 40);
  }
  return HexEncode(b, sizeof(b));
}

std::vector<uint8_t> Value(uint64_t i, uint64_t size) {
  std::vector<uint8_t> v(size);
  for (uint64_t k = 0; k < size; ++k) v[k] = uint8_t((i * 131 + k * 7) >> 3);
  return v;
}

struct Sample {
  double min_ms = 0, median_ms = 0, max_ms = 0;
};

// The data area after the writes, from the store's own figures.
struct Space {
  uint64_t used = 0, usable = 0, value = 0;
  double Ratio() const { return value == 0 ? 0.0 : double(used) / double(value); }
  double UsedPercent() const { return 100.0 * double(used) / double(std::max<uint64_t>(usable, 1)); }
};

// What the first lines print.
struct Facts {
  std::string commit, cpu_model, kernel, fstype;
  unsigned cores = 0;
  uint64_t file_bytes = 0;
};

// The write phase as printed; all zero with --reuse, which writes nothing.
struct Written {
  uint64_t values = 0;
  double seconds = 0;
  uint64_t journal_commits = 0;
  Space space;
};

void WriteSample(JsonWriter& w, const char* name, const Sample& s, uint64_t journal_bytes) {
  w.BeginObject()
      .Key("row").String(name)
      .Key("min_ms").Number(s.min_ms)
      .Key("median_ms").Number(s.median_ms)
      .Key("max_ms").Number(s.max_ms)
      .Key("journal_bytes").Number(journal_bytes)
      .EndObject();
}

// Every printed figure as one object; the write phase's are null with --reuse.
std::string ResultJson(const Args& a, const Facts& f, const std::string& engine, const Written& wr,
                       const Sample (&samples)[3], const uint64_t (&journal)[3]) {
  JsonWriter w;
  w.BeginObject()
      .Key("bench").String("memkv-drive-restart-bench")
      .Key("commit").String(f.commit)
      .Key("build_type").String(MEMKV_BUILD_TYPE)
      .Key("cpu_model").String(f.cpu_model)
      .Key("cores").Number(uint64_t{f.cores})
      .Key("kernel").String(f.kernel)
      .Key("dir").String(a.dir)
      .Key("fstype").String(f.fstype)
      .Key("drives").Number(int64_t{a.drives})
      .Key("file_bytes").Number(f.file_bytes)
      .Key("blocks").Number(a.blocks)
      .Key("value_bytes").Number(a.value_bytes)
      .Key("block_size_bytes").Number(a.block_size)
      .Key("threads").Number(int64_t{a.threads})
      .Key("repeat").Number(int64_t{a.repeat})
      .Key("reuse").Bool(a.reuse)
      .Key("io_engine").String(engine);
  const double puts = double(a.blocks);
  const std::pair<const char*, double> write_figures[] = {
      {"values_written", double(wr.values)},
      {"write_seconds", wr.seconds},
      {"puts_per_s", puts / wr.seconds},
      {"puts_per_journal_commit", puts / double(std::max<uint64_t>(wr.journal_commits, 1))},
      {"data_area_used_bytes", double(wr.space.used)},
      {"value_bytes_stored", double(wr.space.value)},
      {"drive_bytes_per_value_byte", wr.space.Ratio()},
      {"data_area_used_percent", wr.space.UsedPercent()},
  };
  for (const auto& [key, value] : write_figures) {
    w.Key(key);
    a.reuse ? w.Null() : w.Number(value);
  }
  w.Key("rows").BeginArray();
  WriteSample(w, "journal_as_written", samples[0], journal[0]);
  WriteSample(w, "after_checkpoint", samples[1], journal[1]);
  WriteSample(w, "reference_pread_journal", samples[2], journal[2]);
  w.EndArray();
  w.Key("reopen_over_reference_median_ratio").Number(samples[1].median_ms / std::max(samples[2].median_ms, 0.001));
  w.EndObject();
  return w.text() + "\n";
}

Sample Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

// Reopens the store `repeat` times; wall time of ExtentStore::Open each.
Sample TimeOpens(const ExtentStoreOptions& o, int repeat, uint64_t want_keys, uint64_t* journal_bytes) {
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    auto store = ExtentStore::Open(o);
    auto t1 = std::chrono::steady_clock::now();
    if (!store.ok()) {
      std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
      std::exit(1);
    }
    ExtentStoreStats st = (*store)->Stats();
    if (st.keys != want_keys) {
      std::fprintf(stderr, "reopened with %llu keys, expected %llu\n", (unsigned long long)st.keys,
                   (unsigned long long)want_keys);
      std::exit(1);
    }
    *journal_bytes = 0;
    for (const DriveStats& d : st.drives) *journal_bytes += d.journal_used_bytes;
    ms.push_back(Ms(t1 - t0));
  }
  return Summarize(ms);
}

}  // namespace
}  // namespace memkv::drive

int main(int argc, char** argv) {
  using namespace memkv;
  using namespace memkv::drive;
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto size = [&](uint64_t* out) {
      auto r = ParseSize(v != nullptr ? v : "");
      if (!r.ok()) {
        std::fprintf(stderr, "%s: %s\n", k.c_str(), r.status().message().c_str());
        std::exit(2);
      }
      *out = *r;
      ++i;
    };
    if (k == "--blocks" && v) a.blocks = std::strtoull(v, nullptr, 10), ++i;
    else if (k == "--value-bytes" && v) size(&a.value_bytes);
    else if (k == "--block-size" && v) size(&a.block_size);
    else if (k == "--drives" && v) a.drives = std::atoi(v), ++i;
    else if (k == "--threads" && v) a.threads = std::atoi(v), ++i;
    else if (k == "--repeat" && v) a.repeat = std::max(1, std::atoi(v)), ++i;
    else if (k == "--dir" && v) a.dir = v, ++i;
    else if (k == "--json" && v) a.json = v, ++i;
    else if (k == "--reuse") a.reuse = true;
    else {
      std::fprintf(stderr,
                   "usage: memkv-drive-restart-bench [--blocks N] [--value-bytes B] [--block-size B] [--drives N] "
                   "[--threads N] [--repeat N] [--dir DIR] [--reuse] [--json PATH]\n");
      return 2;
    }
  }
  SetLogLevel(LogLevel::kWarn);
  bool own_dir = a.dir.empty();
  if (own_dir) {
    char tmpl[] = "/tmp/memkv-restart-bench-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return 1;
    a.dir = tmpl;
  }
  std::vector<std::string> paths;
  for (int d = 0; d < a.drives; ++d) paths.push_back(a.dir + "/drive" + std::to_string(d));

  // Room for the values (10 % spare) and a journal that holds their records
  // (about 112 bytes each with these 32-byte keys; a quarter of an area is
  // kept for appends).
  const uint64_t units = std::max<uint64_t>(1, UnitsFor(a.value_bytes));
  const uint64_t data_bytes = (a.blocks * units * 11 / 10 / uint64_t(a.drives) + 16) * kDriveUnitBytes +
                              std::max<uint64_t>(a.block_size, 16ull << 20);
  const uint64_t journal_area = (a.blocks * 192 / (1 << 20) + 1) << 20;
  const uint64_t file_bytes = data_bytes + 2 * journal_area + (2ull << 20);

  utsname un{};
  uname(&un);
  Facts facts;
  facts.commit = Shell("git -C " MEMKV_SOURCE_DIR " rev-parse --short HEAD 2>/dev/null");
  facts.cpu_model = CpuModel();
  facts.cores = std::thread::hardware_concurrency();
  facts.kernel = std::string(un.sysname) + " " + un.release;
  facts.fstype = Shell("df --output=fstype " + a.dir + " | tail -1");
  facts.file_bytes = file_bytes;
  std::printf("memkv-drive-restart-bench  commit %s  build %s\n", facts.commit.c_str(), MEMKV_BUILD_TYPE);
  std::printf("cpu: %s, %u cores   kernel: %s %s\n", facts.cpu_model.c_str(), facts.cores, un.sysname, un.release);
  std::printf("drives: %d files of %s under %s (%s)\n", a.drives, FormatSize(file_bytes).c_str(), a.dir.c_str(),
              facts.fstype.c_str());
  std::printf("workload: %llu values of %s, block size %s, %d writer threads\n", (unsigned long long)a.blocks,
              FormatSize(a.value_bytes).c_str(), FormatSize(a.block_size).c_str(), a.threads);

  ExtentStoreOptions o;
  o.drives = paths;
  o.io_buffers = uint32_t(std::max(a.threads, 8));
  Written wr;
  std::string engine;
  if (a.reuse) {
    auto store = ExtentStore::Open(o);
    if (!store.ok()) {
      std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
      return 1;
    }
    a.blocks = (*store)->Stats().keys;
    engine = (*store)->Stats().io_engine;
    own_dir = false;
    std::printf("reusing the store under %s: %llu values\n\n", a.dir.c_str(), (unsigned long long)a.blocks);
  } else {
  DriveFormatOptions f;
  f.drives = paths;
  f.block_size_bytes = a.block_size;
  f.file_size_bytes = file_bytes;
  f.journal_area_bytes = journal_area;
  f.force = true;
  Status fs = ExtentStore::Format(f);
  if (!fs.ok()) {
    std::fprintf(stderr, "format: %s\n", fs.ToString().c_str());
    return 1;
  }
  {
    auto store = ExtentStore::Open(o);
    if (!store.ok()) {
      std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
      return 1;
    }
    engine = (*store)->Stats().io_engine;
    std::atomic<uint64_t> next{0};
    std::atomic<bool> failed{false};
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < a.threads; ++t) {
      threads.emplace_back([&] {
        for (uint64_t i; (i = next.fetch_add(1)) < a.blocks && !failed;) {
          Status s = (*store)->Put(Key(i), Value(i, a.value_bytes));
          if (!s.ok()) {
            std::fprintf(stderr, "put %llu: %s\n", (unsigned long long)i, s.ToString().c_str());
            failed = true;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    if (failed) return 1;
    wr.seconds = Ms(std::chrono::steady_clock::now() - t0) / 1000;
    const ExtentStoreStats st = (*store)->Stats();
    wr.journal_commits = st.journal_commits;
    wr.values = st.keys;
    for (const DriveStats& d : st.drives) {
      wr.space.used += d.used_bytes;
      wr.space.usable += d.usable_bytes;
    }
    wr.space.value = st.value_bytes;
  }
  std::printf("wrote %llu values in %.1f s (%.0f puts/s, %.1f puts per journal commit, %s)\n",
              (unsigned long long)wr.values, wr.seconds, double(a.blocks) / wr.seconds,
              double(a.blocks) / double(std::max<uint64_t>(wr.journal_commits, 1)), engine.c_str());
  std::printf("drive space: %llu bytes of data area hold %llu value bytes: %.4f drive bytes per value byte "
              "(%.1f%% of the data area used)\n\n",
              (unsigned long long)wr.space.used, (unsigned long long)wr.space.value, wr.space.Ratio(),
              wr.space.UsedPercent());
  }

  uint64_t journal_bytes = 0;
  Sample as_written = TimeOpens(o, a.repeat, a.blocks, &journal_bytes);
  uint64_t journal_as_written = journal_bytes;
  {
    auto store = ExtentStore::Open(o);
    if (!store.ok() || !(*store)->Checkpoint().ok()) return 1;
  }
  Sample checkpointed = TimeOpens(o, a.repeat, a.blocks, &journal_bytes);

  // Reference: read the same journal bytes with O_DIRECT pread.
  std::vector<double> raw_ms;
  auto buf = AlignedBuffer::Allocate(1 << 20);
  for (int r = 0; r < a.repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (const std::string& p : paths) {
      auto df = DriveFile::Open(p, {.writable = false, .create_bytes = 0, .lock = false});
      if (!df.ok()) return 1;
      uint64_t want = journal_bytes / paths.size();
      for (uint64_t off = 0; off < want; off += buf->size()) {
        uint64_t len = std::min<uint64_t>(buf->size(), (want - off + 4095) / 4096 * 4096);
        if (!df->ReadAt(4096 + off, std::span<uint8_t>(buf->data(), len)).ok()) return 1;
      }
    }
    raw_ms.push_back(Ms(std::chrono::steady_clock::now() - t0));
  }
  Sample raw = Summarize(raw_ms);

  std::printf("%-28s %10s %10s %10s %14s\n", "reopen (wall ms)", "min", "median", "max", "journal bytes");
  std::printf("%-28s %10.1f %10.1f %10.1f %14llu\n", "journal as written", as_written.min_ms, as_written.median_ms,
              as_written.max_ms, (unsigned long long)journal_as_written);
  std::printf("%-28s %10.1f %10.1f %10.1f %14llu\n", "after a checkpoint", checkpointed.min_ms, checkpointed.median_ms,
              checkpointed.max_ms, (unsigned long long)journal_bytes);
  std::printf("%-28s %10.1f %10.1f %10.1f %14llu\n", "reference: pread journal", raw.min_ms, raw.median_ms,
              raw.max_ms, (unsigned long long)journal_bytes);
  std::printf("\nratio reopen / reference read (median, after checkpoint): %.1fx\n",
              checkpointed.median_ms / std::max(raw.median_ms, 0.001));

  if (own_dir) {
    std::error_code ec;
    std::filesystem::remove_all(a.dir, ec);
  }
  if (!a.json.empty()) {
    const Sample samples[3] = {as_written, checkpointed, raw};
    const uint64_t journal[3] = {journal_as_written, journal_bytes, journal_bytes};
    if (Status written = WriteTextFile(a.json, ResultJson(a, facts, engine, wr, samples, journal)); !written.ok()) {
      std::fprintf(stderr, "%s\n", written.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
