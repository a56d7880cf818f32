#include "preload/stats.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <atomic>
#include <set>

#include "base/mutex.h"
#include "preload/hooks.h"
#include "preload/memkv_preload.h"

namespace memkv::preload {
namespace {

struct Counters {
  std::atomic<uint64_t> puts{0};
  std::atomic<uint64_t> put_bytes{0};
  std::atomic<uint64_t> put_errors{0};
  std::atomic<uint64_t> put_errors_unreported{0};
  std::atomic<uint64_t> gets{0};
  std::atomic<uint64_t> get_bytes{0};
  std::atomic<uint64_t> get_errors{0};
};

// Constant-initialized: usable from any constructor or destructor, and
// never destroyed before the exit-time puts count.
constinit Counters counters;

uint64_t Load(const std::atomic<uint64_t>& counter) { return counter.load(std::memory_order_relaxed); }

void Add(std::atomic<uint64_t>& counter, uint64_t n) { counter.fetch_add(n, std::memory_order_relaxed); }

// Never freed: used by exit handlers and destructors until the end.
struct LostSet {
  Mutex mu;
  std::set<std::string> keys MEMKV_GUARDED_BY(mu);
};

LostSet& Lost() {
  static LostSet* lost = [] {
    auto* l = new LostSet();
    // pthread_atfork holds the lock across fork(): taken before, released
    // after in parent and child, which the analysis cannot follow.
    pthread_atfork([]() MEMKV_NO_THREAD_SAFETY_ANALYSIS { Lost().mu.lock(); },
                   []() MEMKV_NO_THREAD_SAFETY_ANALYSIS { Lost().mu.unlock(); },
                   []() MEMKV_NO_THREAD_SAFETY_ANALYSIS { Lost().mu.unlock(); });
    return l;
  }();
  return *lost;
}

}  // namespace

void NoteStored(const std::string& key) {
  LostSet& lost = Lost();
  MutexLock lock(lost.mu);
  lost.keys.erase(key);
}

void NoteLost(const std::string& key) {
  LostSet& lost = Lost();
  MutexLock lock(lost.mu);
  lost.keys.insert(key);
}

uint64_t LostKeys() {
  LostSet& lost = Lost();
  MutexLock lock(lost.mu);
  return lost.keys.size();
}

void CountPut(uint64_t bytes, int err) {
  Add(counters.puts, 1);
  if (err == 0) {
    Add(counters.put_bytes, bytes);
  } else {
    Add(counters.put_errors, 1);
  }
}

void CountGet(uint64_t bytes, int err) {
  Add(counters.gets, 1);
  if (err == 0) {
    Add(counters.get_bytes, bytes);
  } else if (err != ENOENT) {
    Add(counters.get_errors, 1);
  }
}

uint64_t CountUnreported() { return counters.put_errors_unreported.fetch_add(1, std::memory_order_relaxed) + 1; }

uint64_t UnreportedPutErrors() { return Load(counters.put_errors_unreported); }

std::string StatsLine() {
  return "puts " + std::to_string(Load(counters.puts)) + " (" + std::to_string(Load(counters.put_bytes)) +
         " bytes), put errors " + std::to_string(Load(counters.put_errors)) + " (" +
         std::to_string(Load(counters.put_errors_unreported)) + " unreported), gets " +
         std::to_string(Load(counters.gets)) + " (" + std::to_string(Load(counters.get_bytes)) +
         " bytes), get errors " + std::to_string(Load(counters.get_errors)) + ", keys lost " +
         std::to_string(LostKeys());
}

}  // namespace memkv::preload

MEMKV_PRELOAD_EXPORT size_t memkv_preload_stats(memkv_preload_stats_t* out, size_t size) {
  using memkv::preload::counters;
  using memkv::preload::Load;
  memkv_preload_stats_t stats{};
  stats.puts = Load(counters.puts);
  stats.put_bytes = Load(counters.put_bytes);
  stats.put_errors = Load(counters.put_errors);
  stats.put_errors_unreported = Load(counters.put_errors_unreported);
  stats.gets = Load(counters.gets);
  stats.get_bytes = Load(counters.get_bytes);
  stats.get_errors = Load(counters.get_errors);
  if (out != nullptr) memcpy(out, &stats, size < sizeof stats ? size : sizeof stats);
  return sizeof stats;
}
