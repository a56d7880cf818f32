// memkv-bench command line: what to sweep and against which servers.
//
// Plain values; ParseOptions is pure (no environment, no I/O) so main decides
// where MEMKV_AUTH_KEY and the default memkv path come from.
#ifndef MEMKV_BENCH_OPTIONS_H_
#define MEMKV_BENCH_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memkv::bench {

struct BenchOptions {
  std::vector<uint64_t> sizes_bytes;             // value sizes swept, in order
  std::vector<uint32_t> conns;                   // connection (= thread) counts swept
  double seconds = 1.0;                          // time budget of one timed cell
  uint32_t repeat = 1;                           // repetitions of every cell; the median is shown
  std::string json_path = "bench-results.json";  // every cell and the run's facts
  uint64_t pool_bytes = 4ULL << 30;              // memory.max_size of the spawned server
  std::string memkv_path;                        // empty: beside memkv-bench, then the build tree
  std::vector<std::string> servers;              // non-empty: use these instead of spawning
  bool put = true;                               // --ops
  bool get = true;
  bool warm_pool = true;                         // touch a spawned server's pool before the sweep
  bool auth_cost = true;                         // measure authentication's cost (auth_cost.h)
  bool prefault = true;                          // memory.prefault of every spawned server
};

inline constexpr const char* kUsage = R"(Usage: memkv-bench [options]

Sweeps value sizes x connection counts for put and get against MemKV over TCP,
and runs the same sweep against a raw TCP request/response stream (a reference
server in a child process) in the same run. Prints the machine, a table per
op with the memkv/raw throughput ratio and latency percentiles, and writes
every cell as JSON.

Options:
  --sizes LIST      value sizes; a size may add bytes: 2MiB+1 (default
                    4KiB,64KiB,256KiB,1MiB,2MiB,4MiB,16MiB)
  --conns LIST      connection counts; N connections = N client threads sharing
                    one client with num_connections = N (default 1,4,16,64)
  --seconds S       time budget of each timed cell (default 1.0)
  --repeat N        run every cell N times, memkv and raw alternating, and
                    show the median-throughput repetition (default 1); use 3
                    or more on a machine that is not quiet
  --ops LIST        put,get (default both; get alone fills the keys untimed)
  --json PATH       results file (default bench-results.json)
  --pool SIZE       memory.max_size of the spawned server (default 4GiB); the
                    keys of a cell cycle over min(pool/2/footprint, 1024) keys
  --memkv PATH      memkv binary to spawn (default: next to memkv-bench)
  --no-prefault     spawn the server with memory.prefault: false (pages are
                    faulted in by the first values written there)
  --cold            do not warm the spawned server's pool first (by default
                    every block is written once, untimed, so the sweep sees a
                    server in steady state rather than first-touch page faults)
  --servers LIST    host:port,... of running servers instead of spawning one
                    (never warmed); the key comes from MEMKV_AUTH_KEY; --pool
                    is then taken as their pool size when sizing working sets
  --no-auth-cost    skip the authentication-cost cells (2 MiB at 1 and 4
                    connections: the raw stream with and without memkv's
                    per-request header HMAC and payload checksums)
  --help            this text

Exit status: 0 when every operation succeeded and every value read back was
byte-exact, 1 when any failed, 2 on a usage error.
)";

// Parses argv[1..]. On a usage error returns nullopt and sets *error; --help
// sets *help and returns the defaults.
std::optional<BenchOptions> ParseOptions(const std::vector<std::string>& args, bool* help,
                                         std::string* error);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_OPTIONS_H_
