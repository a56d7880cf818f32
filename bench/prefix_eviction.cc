// memkv-prefix-eviction-bench: how much of a prefix-chained working set the
// DRAM pool keeps reachable under pressure, with prefix-aware eviction (puts
// name their parent block) against plain LRU (the same puts without parent
// keys), in one process and one run (docs/benchmarks.md, "Prefix-aware
// eviction").
//
// The workload is an inference engine's KV cache: `chains` prompts of
// `blocks` blocks each, reused with Zipf popularity, until the bytes put
// reach `rounds` times the pool. Two models of a request's lookup:
//   - engine (the default): the engine keeps its own prefix cache (an LRU
//     of `local_blocks` blocks, one per engine; requests go round-robin to
//     `engines` engines). It takes the leading run of the chain it holds
//     locally, asks MemKV for a prefix match of the whole chain (Match: an
//     index lookup, no LRU refresh), reads with Get (which refreshes) only
//     the matched blocks it lacks locally, computes the rest, and puts every
//     block past the matched run. A head hot in an engine's own cache is
//     thus never read from MemKV by it, and plain LRU ages it out.
//   - walk (--lookup=walk): Get from the head until the first miss, no local
//     cache: each block is refreshed just before its child.
// Then, for each run, averaged over samples taken after each batch of the
// last round (the last pool's worth of puts), so one unlucky instant does
// not decide:
//   - whole-prefix fraction: of the blocks stored, those whose every
//     ancestor is stored too (a block without its prefix is dead weight:
//     no lookup can reach it);
//   - reachable blocks: the sum over chains of the leading stored run (what
//     a prefix match can serve now);
// and over the whole run the blocks the requests took from their engine's
// own cache, read from MemKV, and computed.
// --json=PATH also writes the flags, both runs' figures and the ratios to
// PATH as one JSON object.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/checksum.h"
#include "base/json.h"
#include "base/text_file.h"
#include "memkv/put_options.h"
#include "storage/memory_store.h"

namespace memkv {
namespace {

enum class LookupMode { kEngine, kWalk };

struct Params {
  uint64_t chains = 200;
  uint64_t blocks = 64;          // per chain
  uint64_t block_bytes = 4096;
  uint64_t pool_blocks = 3200;   // a quarter of 200 x 64
  double zipf_s = 1.0;
  uint64_t rounds = 3;           // bytes put = rounds x pool
  uint64_t seed = 42;
  // Requests in flight together: their lookups run first, then their
  // missing blocks are put position by position across the requests, as an
  // engine computing a batch stores them. 1: one request at a time.
  uint64_t batch = 1;
  LookupMode lookup = LookupMode::kEngine;
  uint64_t engines = 1;
  // Each engine's own prefix cache, in blocks; unset: a quarter of the pool.
  uint64_t local_blocks = UINT64_MAX;
  std::string json;  // --json=PATH; empty: no JSON
};

// Sums over the samples (one after each batch of the last round), and
// counts over the whole run.
struct Outcome {
  uint64_t samples = 0;
  uint64_t stored = 0;
  uint64_t whole_prefix = 0;
  uint64_t reachable = 0;
  uint64_t lookups = 0;
  uint64_t local_hits = 0;  // blocks an engine held itself
  uint64_t memkv_hits = 0;  // blocks read from MemKV
  uint64_t computed = 0;
  uint64_t puts = 0;
  uint64_t evictions = 0;
  double fraction() const { return stored == 0 ? 0.0 : static_cast<double>(whole_prefix) / static_cast<double>(stored); }
  double Mean(uint64_t sum) const { return samples == 0 ? 0.0 : static_cast<double>(sum) / static_cast<double>(samples); }
  uint64_t hits() const { return local_hits + memkv_hits; }
};

// An engine's own prefix cache (GPU/CPU blocks): an LRU of block ids.
class LocalCache {
 public:
  explicit LocalCache(uint64_t capacity) : capacity_(capacity) {}
  bool Contains(uint64_t id) const { return where_.contains(id); }
  // Inserts or refreshes `id`, evicting the least recently used past capacity.
  void Touch(uint64_t id) {
    if (capacity_ == 0) return;
    auto it = where_.find(id);
    if (it != where_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    order_.push_front(id);
    where_[id] = order_.begin();
    if (order_.size() > capacity_) {
      where_.erase(order_.back());
      order_.pop_back();
    }
  }

 private:
  uint64_t capacity_;
  std::list<uint64_t> order_;  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where_;
};

// One request of a batch: its chain, its engine, and the first block it puts.
struct Request {
  uint64_t chain = 0;
  size_t engine = 0;
  uint64_t first_put = 0;
};

std::string BlockKey(uint64_t chain, uint64_t block) {
  return "c" + std::to_string(chain) + "/b" + std::to_string(block);
}

uint64_t BlockId(const Params& p, uint64_t chain, uint64_t block) { return chain * p.blocks + block; }

bool ParseFlag(std::string_view arg, std::string_view name, uint64_t* out) {
  const std::string prefix = "--" + std::string(name) + "=";
  if (!arg.starts_with(prefix)) return false;
  *out = std::strtoull(std::string(arg.substr(prefix.size())).c_str(), nullptr, 10);
  return true;
}

// --json=PATH; false if `arg` is not --json, exits on an empty path.
bool ParseJsonPath(std::string_view arg, std::string* out) {
  constexpr std::string_view kPrefix = "--json=";
  if (!arg.starts_with(kPrefix)) return false;
  *out = std::string(arg.substr(kPrefix.size()));
  if (out->empty()) {
    std::fprintf(stderr, "--json= needs a path\n");
    std::exit(2);
  }
  return true;
}

// --lookup=engine|walk; false if `arg` is not --lookup, exits on a bad value.
bool ParseLookup(std::string_view arg, LookupMode* out) {
  constexpr std::string_view kPrefix = "--lookup=";
  if (!arg.starts_with(kPrefix)) return false;
  const std::string_view value = arg.substr(kPrefix.size());
  if (value == "engine") {
    *out = LookupMode::kEngine;
  } else if (value == "walk") {
    *out = LookupMode::kWalk;
  } else {
    std::fprintf(stderr, "--lookup='%.*s': allowed: engine, walk\n", static_cast<int>(value.size()), value.data());
    std::exit(2);
  }
  return true;
}

bool ParseArgs(int argc, char** argv, Params* p) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (ParseFlag(a, "chains", &p->chains) || ParseFlag(a, "blocks", &p->blocks) ||
        ParseFlag(a, "block-bytes", &p->block_bytes) || ParseFlag(a, "pool-blocks", &p->pool_blocks) ||
        ParseFlag(a, "rounds", &p->rounds) || ParseFlag(a, "seed", &p->seed) || ParseFlag(a, "batch", &p->batch) ||
        ParseFlag(a, "engines", &p->engines) || ParseFlag(a, "local-blocks", &p->local_blocks) ||
        ParseLookup(a, &p->lookup) || ParseJsonPath(a, &p->json)) {
      continue;
    }
    std::fprintf(stderr,
                 "unknown argument '%s'; allowed: --chains=N --blocks=N --block-bytes=N --pool-blocks=N "
                 "--rounds=N --seed=N --batch=N --lookup=engine|walk --engines=N --local-blocks=N --json=PATH\n",
                 argv[i]);
    return false;
  }
  if (p->chains == 0 || p->blocks == 0 || p->block_bytes == 0 || p->pool_blocks == 0 || p->rounds == 0 ||
      p->batch == 0 || p->engines == 0) {
    std::fprintf(stderr, "every figure but --local-blocks must be above 0\n");
    return false;
  }
  if (p->local_blocks == UINT64_MAX) p->local_blocks = p->pool_blocks / 4;
  return true;
}

// Chain ranks with probability proportional to 1 / rank^s.
std::discrete_distribution<uint64_t> Zipf(uint64_t n, double s) {
  std::vector<double> weights(n);
  for (uint64_t k = 0; k < n; ++k) weights[k] = 1.0 / std::pow(static_cast<double>(k + 1), s);
  return std::discrete_distribution<uint64_t>(weights.begin(), weights.end());
}

// Reads blocks [from, to) of the chain with Get; returns the first not served.
uint64_t GetRun(storage::MemoryStore& store, uint64_t chain, uint64_t from, uint64_t to) {
  for (uint64_t b = from; b < to; ++b) {
    if (!store.Get(BlockKey(chain, b)).ok()) return b;
  }
  return to;
}

// Walk: Get from the head until the first miss. Returns the first block to put.
uint64_t WalkLookup(storage::MemoryStore& store, const Params& p, uint64_t chain, Outcome* out) {
  const uint64_t got = GetRun(store, chain, 0, p.blocks);
  out->memkv_hits += got;
  out->computed += p.blocks - got;
  return got;
}

// The leading run of the chain that `pred(block)` holds.
template <typename Pred>
uint64_t LeadingRun(const Params& p, Pred pred) {
  uint64_t b = 0;
  while (b < p.blocks && pred(b)) ++b;
  return b;
}

// Engine: the local prefix hit, a prefix match in MemKV (no refresh), then
// Get of the matched blocks the engine lacks. Returns the first block to
// put: past MemKV's leading run, every block the engine now holds.
uint64_t EngineLookup(storage::MemoryStore& store, const Params& p, const LocalCache& local, uint64_t chain,
                      Outcome* out) {
  const uint64_t held = LeadingRun(p, [&](uint64_t b) { return local.Contains(BlockId(p, chain, b)); });
  const uint64_t matched = LeadingRun(p, [&](uint64_t b) { return store.Match(BlockKey(chain, b)); });
  const uint64_t got = matched > held ? GetRun(store, chain, held, matched) : held;
  out->local_hits += held;
  out->memkv_hits += got - held;
  out->computed += p.blocks - got;
  return std::min(matched, got);
}

void PutBlock(storage::MemoryStore& store, uint64_t chain, uint64_t b, bool aware, const std::string& bytes,
              uint64_t checksum) {
  PutOptions options;
  if (aware && b > 0) options.parent_key = BlockKey(chain, b - 1);
  auto put = store.BeginPut(bytes.size());
  if (!put.ok()) {
    std::fprintf(stderr, "BeginPut: %s\n", put.status().ToString().c_str());
    std::exit(1);
  }
  storage::PendingPut pending = std::move(put).value();
  const char* in = bytes.data();
  for (const iovec& v : pending.iov()) {
    std::memcpy(v.iov_base, in, v.iov_len);
    in += v.iov_len;
  }
  Status committed = store.CommitPut(std::move(pending), BlockKey(chain, b), checksum, options);
  if (!committed.ok()) {
    std::fprintf(stderr, "CommitPut: %s\n", committed.ToString().c_str());
    std::exit(1);
  }
}

// The batch's blocks to put, position by position across its requests.
void Refill(storage::MemoryStore& store, const Params& p, const std::vector<Request>& batch, bool aware,
            const std::string& bytes, uint64_t checksum, Outcome* out) {
  for (uint64_t b = 0; b < p.blocks; ++b) {
    for (const Request& r : batch) {
      if (b < r.first_put) continue;
      PutBlock(store, r.chain, b, aware, bytes, checksum);
      ++out->puts;
    }
  }
}

// The engine now holds the whole chain. Tail first, so that its own cache
// drops a chain's tail before its head (as vLLM frees a request's blocks).
void HoldLocally(const Params& p, const Request& r, LocalCache* local) {
  for (uint64_t b = p.blocks; b-- > 0;) local->Touch(BlockId(p, r.chain, b));
}

// Adds one sample of what is stored now to `out`.
void Sample(storage::MemoryStore& store, const Params& p, Outcome* out) {
  for (uint64_t c = 0; c < p.chains; ++c) {
    bool prefix_whole = true;
    for (uint64_t b = 0; b < p.blocks; ++b) {
      const bool stored = store.Exists(BlockKey(c, b));
      if (stored) {
        ++out->stored;
        if (prefix_whole) {
          ++out->whole_prefix;
          ++out->reachable;
        }
      }
      prefix_whole = prefix_whole && stored;
    }
  }
  ++out->samples;
}

std::unique_ptr<storage::MemoryStore> MakeStore(const Params& p) {
  storage::MemoryStoreOptions options;
  options.block_size_bytes = p.block_bytes;
  options.max_size_bytes = p.pool_blocks * p.block_bytes;
  options.hugepages = storage::HugePagePolicy::kNever;
  auto created = storage::MemoryStore::Create(options);
  if (!created.ok()) {
    std::fprintf(stderr, "MemoryStore: %s\n", created.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(created).value();
}

Outcome Run(const Params& p, bool aware) {
  std::unique_ptr<storage::MemoryStore> store = MakeStore(p);
  const std::string bytes(p.block_bytes, 'k');
  const uint64_t checksum = Checksum(bytes.data(), bytes.size());
  std::mt19937_64 rng(p.seed);  // the same chain sequence for both runs
  auto zipf = Zipf(p.chains, p.zipf_s);
  std::vector<LocalCache> engines(p.engines, LocalCache(p.local_blocks));
  Outcome out;
  const uint64_t pool_bytes = p.pool_blocks * p.block_bytes;
  const uint64_t budget = p.rounds * pool_bytes;
  std::vector<Request> batch;
  uint64_t next_engine = 0;
  while (out.puts * p.block_bytes < budget) {
    batch.clear();
    for (uint64_t r = 0; r < p.batch; ++r) {
      Request req;
      req.chain = zipf(rng);
      // One request per chain in a batch: a second would find the first's blocks.
      if (std::any_of(batch.begin(), batch.end(), [&](const Request& o) { return o.chain == req.chain; })) continue;
      req.engine = next_engine++ % p.engines;
      req.first_put = p.lookup == LookupMode::kWalk ? WalkLookup(*store, p, req.chain, &out)
                                                    : EngineLookup(*store, p, engines[req.engine], req.chain, &out);
      ++out.lookups;
      batch.push_back(req);
    }
    Refill(*store, p, batch, aware, bytes, checksum, &out);
    if (p.lookup == LookupMode::kEngine) {
      for (const Request& r : batch) HoldLocally(p, r, &engines[r.engine]);
    }
    // The last round, once the pool has long been full: a steady state.
    if (out.puts * p.block_bytes >= budget - pool_bytes) Sample(*store, p, &out);
  }
  out.evictions = store->Stats().evictions;
  return out;
}

void PrintRow(const char* name, const Outcome& o) {
  std::printf("%-14s %10.1f %10.1f %14.4f %10.1f %11llu %11llu %10llu %10llu\n", name, o.Mean(o.stored),
              o.Mean(o.whole_prefix), o.fraction(), o.Mean(o.reachable), static_cast<unsigned long long>(o.local_hits),
              static_cast<unsigned long long>(o.memkv_hits), static_cast<unsigned long long>(o.computed),
              static_cast<unsigned long long>(o.evictions));
}

double Ratio(double a, double b) { return b == 0 ? 0.0 : a / b; }

void PrintHeader(const Params& p) {
  std::printf("prefix eviction: %llu chains x %llu blocks of %llu B, pool %llu blocks, Zipf s=%.2f, seed %llu, "
              "puts up to %llux the pool, %llu requests per batch\n",
              static_cast<unsigned long long>(p.chains), static_cast<unsigned long long>(p.blocks),
              static_cast<unsigned long long>(p.block_bytes), static_cast<unsigned long long>(p.pool_blocks), p.zipf_s,
              static_cast<unsigned long long>(p.seed), static_cast<unsigned long long>(p.rounds),
              static_cast<unsigned long long>(p.batch));
  if (p.lookup == LookupMode::kWalk) {
    std::printf("lookup: walk (Get from the head until the first miss, no engine cache)\n");
  } else {
    std::printf("lookup: engine (own cache, then prefix match, then Get of the rest), %llu engines, "
                "%llu blocks cached by each\n",
                static_cast<unsigned long long>(p.engines), static_cast<unsigned long long>(p.local_blocks));
  }
}

// One run's figures (PrintRow's columns, each name with its unit) as the
// next element of the array `w` is in.
void WriteRunJson(JsonWriter& w, const char* policy, const Outcome& o) {
  w.BeginObject()
      .Key("policy").String(policy)
      .Key("samples").Number(o.samples)
      .Key("stored_blocks_mean").Number(o.Mean(o.stored))
      .Key("whole_prefix_blocks_mean").Number(o.Mean(o.whole_prefix))
      .Key("whole_prefix_fraction").Number(o.fraction())
      .Key("reachable_blocks_mean").Number(o.Mean(o.reachable))
      .Key("lookups").Number(o.lookups)
      .Key("local_hit_blocks").Number(o.local_hits)
      .Key("memkv_hit_blocks").Number(o.memkv_hits)
      .Key("computed_blocks").Number(o.computed)
      .Key("put_blocks").Number(o.puts)
      .Key("evictions").Number(o.evictions)
      .EndObject();
}

// The flags, both runs and the ratios main prints, as one object.
std::string ResultJson(const Params& p, const Outcome& aware, const Outcome& lru) {
  JsonWriter w;
  w.BeginObject()
      .Key("chains").Number(p.chains)
      .Key("blocks_per_chain").Number(p.blocks)
      .Key("block_bytes").Number(p.block_bytes)
      .Key("pool_blocks").Number(p.pool_blocks)
      .Key("zipf_s").Number(p.zipf_s)
      .Key("rounds").Number(p.rounds)
      .Key("seed").Number(p.seed)
      .Key("batch").Number(p.batch)
      .Key("lookup").String(p.lookup == LookupMode::kWalk ? "walk" : "engine")
      .Key("engines").Number(p.engines)
      .Key("local_blocks").Number(p.local_blocks);
  w.Key("runs").BeginArray();
  WriteRunJson(w, "prefix_aware", aware);
  WriteRunJson(w, "plain_lru", lru);
  w.EndArray();
  const double reach_ratio = Ratio(aware.Mean(aware.reachable), lru.Mean(lru.reachable));
  const auto count_ratio = [](uint64_t a, uint64_t b) { return Ratio(static_cast<double>(a), static_cast<double>(b)); };
  w.Key("reachable_aware_over_lru_ratio").Number(reach_ratio)
      .Key("reachable_target_met").Bool(reach_ratio >= 1.5)
      .Key("whole_prefix_fraction_target_met").Bool(aware.fraction() >= 0.95)
      .Key("hits_aware_over_lru_ratio").Number(count_ratio(aware.hits(), lru.hits()))
      .Key("memkv_hits_aware_over_lru_ratio").Number(count_ratio(aware.memkv_hits, lru.memkv_hits))
      .Key("computed_aware_over_lru_ratio").Number(count_ratio(aware.computed, lru.computed))
      .EndObject();
  return w.text() + "\n";
}

}  // namespace
}  // namespace memkv

int main(int argc, char** argv) {
  using namespace memkv;
  Params p;
  if (!ParseArgs(argc, argv, &p)) return 2;
  PrintHeader(p);
  const Outcome aware = Run(p, true);
  const Outcome lru = Run(p, false);
  std::printf("%-14s %10s %10s %14s %10s %11s %11s %10s %10s\n", "run", "stored", "whole", "whole/stored",
              "reachable", "local hits", "memkv hits", "computed", "evictions");
  PrintRow("prefix-aware", aware);
  PrintRow("plain LRU", lru);
  std::printf("samples: %llu aware, %llu LRU (after each batch of the last pool's worth of puts)\n",
              static_cast<unsigned long long>(aware.samples), static_cast<unsigned long long>(lru.samples));
  const double reach_ratio = Ratio(aware.Mean(aware.reachable), lru.Mean(lru.reachable));
  std::printf("reachable aware / LRU: %.2fx (target >= 1.5x: %s)\n", reach_ratio, reach_ratio >= 1.5 ? "met" : "not met");
  std::printf("whole-prefix fraction, aware: %.4f (target >= 0.95: %s)\n", aware.fraction(),
              aware.fraction() >= 0.95 ? "met" : "not met");
  std::printf("lookup hits (local + MemKV) aware / LRU: %.2fx; MemKV hits: %.2fx; computed: %.2fx\n",
              Ratio(static_cast<double>(aware.hits()), static_cast<double>(lru.hits())),
              Ratio(static_cast<double>(aware.memkv_hits), static_cast<double>(lru.memkv_hits)),
              Ratio(static_cast<double>(aware.computed), static_cast<double>(lru.computed)));
  if (!p.json.empty()) {
    const Status written = WriteTextFile(p.json, ResultJson(p, aware, lru));
    if (!written.ok()) {
      std::fprintf(stderr, "%s\n", written.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
