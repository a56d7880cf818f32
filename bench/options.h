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

#include "bench/memkv_server.h"

namespace memkv::bench {

// What the run measures (docs/benchmarks.md has a section on each).
enum class BenchMode {
  kSweep,  // sizes x connections, put and get, against a raw TCP stream
  kFill,   // --fill: fill a fresh pool; bytes held per value byte, against Redis
  kFresh,  // --fresh: put on a never-written pool against a warmed one
  kReplay, // --replay FILE: a client access log re-issued (bench/replay.h)
};

struct BenchOptions {
  BenchMode mode = BenchMode::kSweep;
  std::vector<uint64_t> sizes_bytes;             // value sizes, in order
  std::vector<uint32_t> conns;                   // connection (= thread) counts
  double seconds = 1.0;                          // time budget of a timed cell (--fresh: its cap)
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
  bool peer_redis = false;                       // --peer redis: the sweep measures Redis too
  // --storage: the spawned memkv server's storage.mode, memory or file (one
  // drive file of --drive-size in its directory, storage.sync --sync).
  std::string storage = "memory";
  std::string sync = "interval";
  uint32_t flush_on_loop_us = 0;                 // --flush-on-loop-us: storage.flush_on_loop_us; 0: unset
  uint64_t drive_bytes = 4ULL << 30;
  // --redis-appendfsync: Redis's AOF with this appendfsync (everysec,
  // always); empty: --appendonly no.
  std::string redis_appendfsync;
  uint32_t batch = 1;                            // values per call (memkv batch calls, pipelining)
  std::string plot_path;                         // --plot: an SVG of the sweep; empty: none
  // --fill's reference, and the sweep's with --peer redis.
  bool redis = true;                             // --no-redis: memkv alone (--fill)
  std::string redis_path;                        // empty: redis-server on PATH
  bool install_peers = false;                    // apt-get install the peers that are missing
  // --replay: the access log to re-issue, and how much faster than logged
  // (0: as fast as --conns threads go).
  std::string replay_path;
  double replay_speed = 1.0;
};

// The spawned servers' config: --pool, --no-prefault, --storage, --sync,
// --flush-on-loop-us, --drive-size.
MemkvServerConfig SpawnConfigOf(const BenchOptions& o);

inline constexpr const char* kUsage = R"(Usage: memkv-bench [options]
       memkv-bench --fill [options]
       memkv-bench --fresh [options]
       memkv-bench --replay FILE [options]

Sweeps value sizes x connection counts for put and get against MemKV over TCP,
and runs the same sweep against a raw TCP request/response stream (a reference
server in a child process) in the same run, and with --peer redis against a
spawned redis-server too. Prints the machine, a table per op with the
throughput ratios memkv/raw (and memkv/redis), CPU seconds per GiB moved and
latency percentiles, and writes every cell as JSON.

--fill: for each size, fills the pool of a freshly spawned server with
distinct keys until it evicts, and reports the pool bytes consumed per value
byte (target <= 1.10 at 4 KiB and 64 KiB, <= 1.05 at 2 MiB+1), fragmentation,
the server's RSS per value byte and the fill's ops/s and MiB/s; then stores
the same keys and values in a spawned redis-server and reports its
used_memory and RSS per value byte beside them.

--fresh: for each size x connection count, puts distinct keys on a freshly
spawned server whose pool was never written, then on one whose pool was
warmed (written whole once), alternating; reports both MiB/s and the ratio
fresh/warm (the median of each repetition's ratio; target >= 0.8). With
--no-prefault the servers do not fault their pool in at start, which shows
what the prefault removes.

--replay FILE: re-issues a client access log (access_log_path) against a
spawned server (or --servers): the same calls, keys (by their hash), value
sizes and pacing, over --conns threads (one count, default 4); reports
calls/s, keys/s, MiB/s, the hit rate beside the logged one, sheds, errors
and latency percentiles per op. Size --pool as the log's sample of the
fleet's memory (access_log_sample x fleet memory) to estimate the fleet's
hit rate at that size (docs/benchmarks.md, "Replay").

Options (all modes):
  --sizes LIST      value sizes; a size may add bytes: 2MiB+1 (default: sweep
                    4KiB,64KiB,256KiB,1MiB,2MiB,4MiB,16MiB; --fill
                    4KiB,64KiB,2MiB+1; --fresh 4KiB,2MiB)
  --conns LIST      connection counts; N connections = N client threads sharing
                    one client with num_connections = N + 1, of which stores
                    may hold N (default: sweep
                    1,4,16,64; --fill one count, 4; --fresh 1,16)
  --json PATH       results file (default bench-results.json; --fill
                    bench-fill.json; --fresh bench-fresh.json)
  --pool SIZE       memory.max_size of the spawned servers (default 4GiB;
                    --fill 1GiB; --fresh 2GiB); in the sweep the keys of a
                    cell cycle over min(pool/2/footprint, 1024) keys
  --memkv PATH      memkv binary to spawn (default: next to memkv-bench)
  --storage MODE    memory (default) or file: the spawned servers' storage.mode;
                    file gives each one drive file of --drive-size (default
                    4GiB) in its temporary directory ($TMPDIR)
  --sync POLICY     with --storage file: storage.sync, interval (default) or
                    always
  --flush-on-loop-us N
                    with --sync always: storage.flush_on_loop_us (the workers
                    flush their turns' puts while flushes take at most N us)
  --drive-size SIZE with --storage file: the drive file's size
  --no-prefault     spawn servers with memory.prefault: false (pages are
                    faulted in by the first values written there)
  --help            this text

Sweep and --fresh:
  --seconds S       time budget of each timed cell (default 1.0; --fresh: the
                    cap of a cell, which otherwise ends once it has written
                    15/16 of the pool, default 10)
  --repeat N        run every cell N times, memkv, raw and redis (--fresh:
                    fresh and warm) alternating, and show the median repetition
                    (default 1; --fresh 3); use 3 or more on a machine that
                    is not quiet

Sweep only:
  --ops LIST        put,get (default both; get alone fills the keys untimed)
  --cold            do not warm the spawned server's pool first (by default
                    every block is written once, untimed, so the sweep sees a
                    server in steady state rather than first-touch page faults)
  --servers LIST    host:port,... of running servers instead of spawning one
                    (never warmed); the key comes from MEMKV_AUTH_KEY; --pool
                    is then taken as their pool size when sizing working sets
  --no-auth-cost    skip the authentication-cost cells (2 MiB at 1 and 4
                    connections: the raw stream with and without memkv's
                    per-request header HMAC and payload checksums)
  --peer redis      also measure Redis cell by cell: a spawned redis-server
                    (--save '' --appendonly no), one RESP connection per
                    thread, the same keys, values and timing
  --redis-appendfsync POLICY
                    with --peer redis: Redis with its append-only file on
                    (--appendonly yes, in its temporary directory) and this
                    appendfsync: everysec (beside --sync interval) or always
  --batch N         values per call, 1 to 1024 (default 1): memkv BatchPut /
                    BatchGetInto of N distinct keys, N commands pipelined per
                    round trip to redis and to the raw stream; a call carries
                    at most 16 MiB (and no more keys than the working set),
                    so large values get smaller batches; throughput counts
                    every value, latency is per call
  --plot PATH       after the sweep, write an SVG of MiB/s against value size
                    (a panel per op and connection count) with gnuplot; the
                    data and the script are written beside PATH (.dat, .gp)
                    either way

--fill, and the sweep with --peer redis or --plot:
  --redis PATH      redis-server binary (default: redis-server on PATH)
  --install-peers   install what is missing first with apt-get install -y
                    (redis-server; gnuplot-nox for --plot; needs root).
                    Without it a missing redis-server is reported (--fill
                    then measures memkv alone; the sweep stops) and a
                    missing gnuplot leaves the plot to render by hand

--fill only:
  --no-redis        measure memkv alone

--replay only:
  --replay-speed X  issue calls X times as fast as logged (default 1; 0: as
                    fast as the threads go)
  --servers LIST    as in the sweep

Exit status: 0 when every operation succeeded and every value read back was
byte-exact, 1 when any failed, 2 on a usage error.
)";

// Parses argv[1..]. On a usage error returns nullopt and sets *error; --help
// sets *help and returns the defaults.
std::optional<BenchOptions> ParseOptions(const std::vector<std::string>& args, bool* help,
                                         std::string* error);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_OPTIONS_H_
