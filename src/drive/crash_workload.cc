#include "drive/crash_workload.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <thread>

#include "base/checksum.h"
#include "base/parse_number.h"

namespace memkv::drive {
namespace {

void Emit(const CrashLogLine& line) {
  std::string text = FormatCrashLine(line);
  ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());  // one write: whole line or nothing
  (void)n;
}

bool ParseU64(std::string_view s, uint64_t* out) {
  std::optional<uint64_t> v = ParseDecimal(s);
  if (v) *out = *v;
  return v.has_value();
}

}  // namespace

std::string FormatCrashLine(const CrashLogLine& line) {
  const char* phase = line.phase == CrashLogLine::Phase::kBegin ? "begin"
                      : line.phase == CrashLogLine::Phase::kAck ? "ack"
                                                                : "fail";
  return std::string(phase) + (line.put ? " put " : " del ") + line.key + " " + std::to_string(line.seed) + " " +
         std::to_string(line.size) + "\n";
}

bool ParseCrashLine(std::string_view text, CrashLogLine* out) {
  std::vector<std::string_view> f;
  size_t start = 0;
  while (start <= text.size()) {
    size_t sp = text.find(' ', start);
    if (sp == std::string_view::npos) sp = text.size();
    f.push_back(text.substr(start, sp - start));
    start = sp + 1;
  }
  if (f.size() != 5) return false;
  if (f[0] == "begin") out->phase = CrashLogLine::Phase::kBegin;
  else if (f[0] == "ack") out->phase = CrashLogLine::Phase::kAck;
  else if (f[0] == "fail") out->phase = CrashLogLine::Phase::kFail;
  else return false;
  if (f[1] != "put" && f[1] != "del") return false;
  out->put = f[1] == "put";
  out->key = std::string(f[2]);
  return !out->key.empty() && ParseU64(f[3], &out->seed) && ParseU64(f[4], &out->size);
}

std::vector<uint8_t> CrashValue(uint64_t seed, uint64_t size) {
  std::vector<uint8_t> v(size);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<uint8_t>(x >> 32);
  }
  return v;
}

namespace {

// Up to three puts to distinct keys through PutManyIov, each logged as begun
// before the call and acknowledged (or failed) after it. *i advances by the
// puts made.
void PutBatch(ExtentStore& store, const CrashWorkloadOptions& o, int th, std::mt19937_64& rng, uint64_t* i,
              uint64_t max_bytes) {
  std::vector<CrashLogLine> lines;
  const int n = 1 + int(rng() % 3);
  for (int j = 0; j < n; ++j) {
    CrashLogLine line;
    line.key = "t" + std::to_string(th) + "-" + std::to_string(rng() % uint64_t(o.keys_per_thread));
    if (std::any_of(lines.begin(), lines.end(), [&](const CrashLogLine& l) { return l.key == line.key; })) continue;
    line.put = true;
    line.seed = (o.round << 40) | (uint64_t(th) << 32) | (*i)++;
    line.size = rng() % 4 == 0 ? rng() % 100 : rng() % (max_bytes + 1);
    lines.push_back(line);
  }
  std::vector<std::vector<uint8_t>> values;
  std::vector<iovec> iovs;
  values.reserve(lines.size());
  for (const CrashLogLine& l : lines) {
    values.push_back(CrashValue(l.seed, l.size));
    Emit(l);
  }
  for (std::vector<uint8_t>& v : values) iovs.push_back(iovec{v.data(), v.size()});
  std::vector<ExtentStore::IovPut> puts;
  for (size_t j = 0; j < lines.size(); ++j) {
    puts.push_back({lines[j].key, std::span<const iovec>(&iovs[j], 1), Checksum(values[j].data(), values[j].size())});
  }
  const std::vector<Status> statuses = store.PutManyIov(puts);
  for (size_t j = 0; j < lines.size(); ++j) {
    lines[j].phase = statuses[j].ok() ? CrashLogLine::Phase::kAck : CrashLogLine::Phase::kFail;
    Emit(lines[j]);
  }
}

}  // namespace

void RunCrashWorkload(ExtentStore& store, const CrashWorkloadOptions& o) {
  const uint64_t max_bytes = o.max_value_bytes != 0 ? o.max_value_bytes : 3 * store.block_size_bytes();
  std::vector<std::thread> threads;
  for (int th = 0; th < o.threads; ++th) {
    threads.emplace_back([&, th] {
      std::mt19937_64 rng(o.round * 1000 + uint64_t(th));
      for (uint64_t i = 0; i < o.ops_per_thread; ++i) {
        if (rng() % 8 == 0) {  // a batch of puts to distinct keys, one group commit
          PutBatch(store, o, th, rng, &i, max_bytes);
          continue;
        }
        CrashLogLine line;
        line.key = "t" + std::to_string(th) + "-" + std::to_string(rng() % uint64_t(o.keys_per_thread));
        line.put = rng() % 5 != 0;  // 80 % puts (most of them overwrites), 20 % deletes
        if (line.put) {
          line.seed = (o.round << 40) | (uint64_t(th) << 32) | i;
          line.size = rng() % 4 == 0 ? rng() % 100 : rng() % (max_bytes + 1);
        }
        Emit(line);
        Status s;
        if (line.put) {
          s = store.Put(line.key, CrashValue(line.seed, line.size));
        } else {
          s = store.Delete(line.key);
          if (s.code() == StatusCode::kNotFound) s = Status::Ok();
        }
        line.phase = s.ok() ? CrashLogLine::Phase::kAck : CrashLogLine::Phase::kFail;
        Emit(line);
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace memkv::drive
