// memkv-prefix-eviction-bench: how much of a prefix-chained working set the
// DRAM pool keeps reachable under pressure, with prefix-aware eviction (puts
// name their parent block) against plain LRU (the same puts without parent
// keys), in one process and one run (docs/benchmarks.md, "Prefix-aware
// eviction").
//
// The workload is an inference engine's KV cache: `chains` prompts of
// `blocks` blocks each, reused with Zipf popularity. Each step picks a
// chain, looks it up from the head (Get until the first miss, as a prefix
// match does) and puts back the blocks from the first miss on, until the
// bytes put reach `rounds` times the pool. Then, for each run:
// Both are averaged over samples taken after each step of the last round
// (the last pool's worth of puts), so one unlucky instant does not decide.
//   - whole-prefix fraction: of the blocks stored, those whose every
//     ancestor is stored too (a block without its prefix is dead weight:
//     no lookup can reach it);
//   - reachable blocks: the sum over chains of the leading stored run (what
//     a prefix match can serve now);
//   - lookup hits: blocks served by the lookups during the run.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/checksum.h"
#include "memkv/put_options.h"
#include "storage/memory_store.h"

namespace memkv {
namespace {

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
};

// Sums over the samples (one after each batch of the last round).
struct Outcome {
  uint64_t samples = 0;
  uint64_t stored = 0;
  uint64_t whole_prefix = 0;
  uint64_t reachable = 0;
  uint64_t lookups = 0;
  uint64_t lookup_hits = 0;
  uint64_t puts = 0;
  uint64_t evictions = 0;
  double fraction() const { return stored == 0 ? 0.0 : static_cast<double>(whole_prefix) / static_cast<double>(stored); }
  double Mean(uint64_t sum) const { return samples == 0 ? 0.0 : static_cast<double>(sum) / static_cast<double>(samples); }
};

std::string BlockKey(uint64_t chain, uint64_t block) {
  return "c" + std::to_string(chain) + "/b" + std::to_string(block);
}

bool ParseFlag(std::string_view arg, std::string_view name, uint64_t* out) {
  const std::string prefix = "--" + std::string(name) + "=";
  if (!arg.starts_with(prefix)) return false;
  *out = std::strtoull(std::string(arg.substr(prefix.size())).c_str(), nullptr, 10);
  return true;
}

bool ParseArgs(int argc, char** argv, Params* p) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (ParseFlag(a, "chains", &p->chains) || ParseFlag(a, "blocks", &p->blocks) ||
        ParseFlag(a, "block-bytes", &p->block_bytes) || ParseFlag(a, "pool-blocks", &p->pool_blocks) ||
        ParseFlag(a, "rounds", &p->rounds) || ParseFlag(a, "seed", &p->seed) || ParseFlag(a, "batch", &p->batch)) {
      continue;
    }
    std::fprintf(stderr,
                 "unknown argument '%s'; allowed: --chains=N --blocks=N --block-bytes=N --pool-blocks=N "
                 "--rounds=N --seed=N --batch=N\n",
                 argv[i]);
    return false;
  }
  if (p->chains == 0 || p->blocks == 0 || p->block_bytes == 0 || p->pool_blocks == 0 || p->rounds == 0 ||
      p->batch == 0) {
    std::fprintf(stderr, "every figure must be above 0\n");
    return false;
  }
  return true;
}

// Chain ranks with probability proportional to 1 / rank^s.
std::discrete_distribution<uint64_t> Zipf(uint64_t n, double s) {
  std::vector<double> weights(n);
  for (uint64_t k = 0; k < n; ++k) weights[k] = 1.0 / std::pow(static_cast<double>(k + 1), s);
  return std::discrete_distribution<uint64_t>(weights.begin(), weights.end());
}

// Looks the chain up from its head; returns the first block not served.
uint64_t Lookup(storage::MemoryStore& store, const Params& p, uint64_t chain) {
  for (uint64_t b = 0; b < p.blocks; ++b) {
    if (!store.Get(BlockKey(chain, b)).ok()) return b;
  }
  return p.blocks;
}

void PutBlock(storage::MemoryStore& store, const Params& p, uint64_t chain, uint64_t b, bool aware,
              const std::string& bytes, uint64_t checksum) {
  PutOptions options;
  if (aware && b > 0) options.parent_key = BlockKey(chain, b - 1);
  (void)p;
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

// The batch's missing blocks, position by position across its requests.
void Refill(storage::MemoryStore& store, const Params& p, const std::vector<uint64_t>& chains,
            const std::vector<uint64_t>& first_miss, bool aware, const std::string& bytes, uint64_t checksum,
            Outcome* out) {
  for (uint64_t b = 0; b < p.blocks; ++b) {
    for (size_t r = 0; r < chains.size(); ++r) {
      if (b < first_miss[r]) continue;
      PutBlock(store, p, chains[r], b, aware, bytes, checksum);
      ++out->puts;
    }
  }
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

Outcome Run(const Params& p, bool aware) {
  storage::MemoryStoreOptions options;
  options.block_size_bytes = p.block_bytes;
  options.max_size_bytes = p.pool_blocks * p.block_bytes;
  options.hugepages = storage::HugePagePolicy::kNever;
  auto created = storage::MemoryStore::Create(options);
  if (!created.ok()) {
    std::fprintf(stderr, "MemoryStore: %s\n", created.status().ToString().c_str());
    std::exit(1);
  }
  storage::MemoryStore& store = **created;
  const std::string bytes(p.block_bytes, 'k');
  const uint64_t checksum = Checksum(bytes.data(), bytes.size());
  std::mt19937_64 rng(p.seed);  // the same chain sequence for both runs
  auto zipf = Zipf(p.chains, p.zipf_s);
  Outcome out;
  const uint64_t budget = p.rounds * options.max_size_bytes;
  std::vector<uint64_t> chains;
  std::vector<uint64_t> first_miss;
  while (out.puts * p.block_bytes < budget) {
    chains.clear();
    first_miss.clear();
    for (uint64_t r = 0; r < p.batch; ++r) {
      const uint64_t chain = zipf(rng);
      // One request per chain in a batch: a second would find the first's blocks.
      if (std::find(chains.begin(), chains.end(), chain) != chains.end()) continue;
      chains.push_back(chain);
      first_miss.push_back(Lookup(store, p, chain));
      ++out.lookups;
      out.lookup_hits += first_miss.back();
    }
    Refill(store, p, chains, first_miss, aware, bytes, checksum, &out);
    // The last round, once the pool has long been full: a steady state.
    if (out.puts * p.block_bytes >= budget - options.max_size_bytes) Sample(store, p, &out);
  }
  out.evictions = store.Stats().evictions;
  return out;
}

void PrintRow(const char* name, const Outcome& o) {
  std::printf("%-14s %10.1f %10.1f %14.4f %10.1f %12llu %10llu\n", name, o.Mean(o.stored), o.Mean(o.whole_prefix),
              o.fraction(), o.Mean(o.reachable), static_cast<unsigned long long>(o.lookup_hits),
              static_cast<unsigned long long>(o.evictions));
}

}  // namespace
}  // namespace memkv

int main(int argc, char** argv) {
  using namespace memkv;
  Params p;
  if (!ParseArgs(argc, argv, &p)) return 2;
  std::printf("prefix eviction: %llu chains x %llu blocks of %llu B, pool %llu blocks, Zipf s=%.2f, seed %llu, "
              "puts up to %llux the pool, %llu requests per batch\n",
              static_cast<unsigned long long>(p.chains), static_cast<unsigned long long>(p.blocks),
              static_cast<unsigned long long>(p.block_bytes), static_cast<unsigned long long>(p.pool_blocks), p.zipf_s,
              static_cast<unsigned long long>(p.seed), static_cast<unsigned long long>(p.rounds),
              static_cast<unsigned long long>(p.batch));
  const Outcome aware = Run(p, true);
  const Outcome lru = Run(p, false);
  std::printf("%-14s %10s %10s %14s %10s %12s %10s\n", "run", "stored", "whole", "whole/stored", "reachable",
              "lookup hits", "evictions");
  PrintRow("prefix-aware", aware);
  PrintRow("plain LRU", lru);
  const double reach_ratio = lru.reachable == 0 ? 0.0 : aware.Mean(aware.reachable) / lru.Mean(lru.reachable);
  const double hit_ratio =
      lru.lookup_hits == 0 ? 0.0 : static_cast<double>(aware.lookup_hits) / static_cast<double>(lru.lookup_hits);
  std::printf("reachable aware / LRU: %.2fx (target >= 1.5x: %s)\n", reach_ratio, reach_ratio >= 1.5 ? "met" : "not met");
  std::printf("whole-prefix fraction, aware: %.4f (target >= 0.95: %s)\n", aware.fraction(),
              aware.fraction() >= 0.95 ? "met" : "not met");
  std::printf("lookup hits aware / LRU: %.2fx\n", hit_ratio);
  return 0;
}
