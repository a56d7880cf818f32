// memkv-bench: block-size x connections sweep of put and get against MemKV
// over TCP, beside a raw TCP reference measured the same way in the same run
// (and Redis with --peer redis; an SVG of it with --plot);
// with --fill, the pool's bytes per value byte against Redis (bench/fill.h);
// with --fresh, put on a never-written pool against a warmed one
// (bench/fresh.h). See bench/options.h for the flags and docs/benchmarks.md
// for how to read the output.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <optional>

#include "base/units.h"
#include "bench/auth_cost.h"
#include "bench/fill.h"
#include "bench/fresh.h"
#include "bench/memkv_server.h"
#include "bench/memkv_target.h"
#include "bench/options.h"
#include "bench/peers.h"
#include "bench/plot.h"
#include "bench/process.h"
#include "bench/raw_reference.h"
#include "bench/redis_cells.h"
#include "bench/redis_reference.h"
#include "bench/replay.h"
#include "bench/report.h"
#include "bench/sweep.h"

#ifndef MEMKV_BINARY_FALLBACK
#define MEMKV_BINARY_FALLBACK ""
#endif
#ifndef MEMKV_BUILD_TYPE
#define MEMKV_BUILD_TYPE ""
#endif
#ifndef MEMKV_SOURCE_DIR
#define MEMKV_SOURCE_DIR "."
#endif

namespace memkv::bench {
namespace {

constexpr uint32_t kWarmThreads = 4;

// --memkv, else `memkv` beside this binary, else the one this tree built.
std::string ResolveMemkvBinary(const std::string& flag) {
  if (!flag.empty()) return flag;
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::string sibling = (self.parent_path() / "memkv").string();
    if (::access(sibling.c_str(), X_OK) == 0) return sibling;
  }
  return MEMKV_BINARY_FALLBACK;
}

// Returns the number of errors (0 or 1).
uint64_t WarmUp(const MemkvTarget& target, uint64_t pool_bytes) {
  if (::isatty(STDERR_FILENO))
    std::fprintf(stderr, "warming the pool (%s)...\n", FormatSize(pool_bytes).c_str());
  Status s = target.WarmPool(pool_bytes, kWarmThreads);
  if (s.ok()) return 0;
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

// The servers to measure and their key: a spawned one, or --servers.
struct Target {
  std::unique_ptr<MemkvServer> spawned;
  std::vector<std::string> servers;
  std::string key_hex;
  std::string description;
};

std::string TempBase() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp ? tmp : "/tmp";
}

Result<Target> SetUpTarget(const BenchOptions& o) {
  Target t;
  if (!o.servers.empty()) {
    const char* key = std::getenv("MEMKV_AUTH_KEY");
    if (key == nullptr || *key == '\0')
      return InvalidArgument("--servers needs MEMKV_AUTH_KEY (64 hex characters)");
    t.servers = o.servers;
    t.key_hex = key;
    for (const std::string& s : o.servers) t.description += (t.description.empty() ? "" : ",") + s;
    return t;
  }
  MEMKV_ASSIGN_OR_RETURN(t.key_hex, RandomAuthKeyHex());
  const std::string binary = ResolveMemkvBinary(o.memkv_path);
  const MemkvServerConfig config = SpawnConfigOf(o);
  MEMKV_ASSIGN_OR_RETURN(t.spawned, MemkvServer::Start(binary, config, t.key_hex, TempBase()));
  t.servers = {t.spawned->address()};
  t.description = "spawned " + binary + " at " + t.spawned->address();
  return t;
}

// The peers the sweep runs beside memkv: redis-server (--peer redis) and
// gnuplot (--plot), installed first with --install-peers.
struct SweepPeers {
  std::string redis;          // empty without --peer redis
  std::string gnuplot;        // empty: none (or no --plot)
  std::string gnuplot_why;    // why there is none, with --plot
};

Result<SweepPeers> FindSweepPeers(const BenchOptions& o) {
  const char* path = std::getenv("PATH");
  const std::string path_env = path != nullptr ? path : "";
  SweepPeers peers;
  if (o.peer_redis) {
    std::string why;
    peers.redis = FindPeer(kRedisProgram, o.redis_path, o.install_peers, path_env, &why);
    if (peers.redis.empty()) return FailedPrecondition("--peer redis: " + why);
  }
  if (!o.plot_path.empty()) {
    peers.gnuplot = FindPeer(kGnuplotProgram, "", o.install_peers, path_env, &peers.gnuplot_why);
  }
  return peers;
}

// Stops a spawned server after the sweep; 1 when it did not exit cleanly.
template <typename Server>
uint64_t StopServer(Server* server, const char* what) {
  if (server == nullptr) return 0;
  const int rc = server->Stop();
  if (rc == 0) return 0;
  std::fprintf(stderr, "error: %s exited with status %d after SIGTERM\n", what, rc);
  return 1;
}

void Plot(const BenchOptions& o, const SweepPeers& peers, const RunFacts& facts, const std::vector<Row>& rows,
          bool redis, uint64_t* errors) {
  const std::string title = "memkv-bench " + facts.commit + "  " + facts.started_utc +
                            (o.batch > 1 ? "  batch " + std::to_string(o.batch) : "");
  std::string note;
  Status s = WritePlot(rows, o.plot_path, title, redis, peers.gnuplot, &note);
  if (!s.ok()) {
    std::fprintf(stderr, "error: --plot: %s\n", s.ToString().c_str());
    ++*errors;
    return;
  }
  if (peers.gnuplot.empty()) std::printf("plot: %s\n", peers.gnuplot_why.c_str());
  std::printf("plot: %s\n", note.c_str());
}

int RunSweepMode(const BenchOptions& o) {
  ::signal(SIGPIPE, SIG_IGN);
  Result<SweepPeers> peers = FindSweepPeers(o);
  if (!peers.ok()) {
    std::fprintf(stderr, "memkv-bench: %s\n", peers.status().message().c_str());
    return 1;
  }
  uint64_t max_size = *std::max_element(o.sizes_bytes.begin(), o.sizes_bytes.end());
  if (o.auth_cost) max_size = std::max(max_size, kAuthCostSizeBytes);
  // First, while this process has one thread: the reference server forks.
  Result<std::unique_ptr<RawReferenceServer>> raw = RawReferenceServer::Start(max_size);
  Result<Target> target = raw.ok() ? SetUpTarget(o) : Result<Target>(raw.status());
  Result<std::string> tag = RandomAuthKeyHex();
  if (!target.ok() || !tag.ok()) {
    std::fprintf(stderr, "memkv-bench: %s\n",
                 (target.ok() ? tag.status() : target.status()).ToString().c_str());
    return 1;
  }
  std::unique_ptr<RedisServer> redis_server;
  if (o.peer_redis) {
    Result<std::unique_ptr<RedisServer>> started = RedisServer::Start(peers->redis, TempBase(), o.redis_appendfsync);
    if (!started.ok()) {
      std::fprintf(stderr, "memkv-bench: --peer redis: %s\n", started.status().ToString().c_str());
      return 1;
    }
    redis_server = std::move(started).value();
  }
  RunFacts facts = GatherFacts(MEMKV_SOURCE_DIR, MEMKV_BUILD_TYPE);
  facts.target = target->description;
  facts.pool_bytes = o.pool_bytes;
  std::string storage = o.storage;
  if (o.storage == "file") {
    storage = "file, sync " + o.sync;
    if (o.flush_on_loop_us != 0) storage += ", flush_on_loop_us " + std::to_string(o.flush_on_loop_us);
  }
  facts.storage = o.servers.empty() ? storage : "of the servers given";
  facts.seconds_per_cell = o.seconds;
  facts.repeat = o.repeat;
  facts.pool_warmed = o.warm_pool && target->spawned != nullptr;
  facts.prefault = o.prefault;
  facts.batch = o.batch;
  if (redis_server) {
    facts.redis_version = redis_server->version();
    facts.redis = peers->redis + " at 127.0.0.1:" + std::to_string(redis_server->port());
    if (!o.redis_appendfsync.empty()) facts.redis_persistence = "--appendonly yes --appendfsync " + o.redis_appendfsync;
  }
  PrintFacts(stdout, facts);
  std::fflush(stdout);

  const MemkvTarget memkv(target->servers, target->key_hex, tag->substr(0, 8));
  std::optional<RedisTarget> redis;
  if (redis_server) redis.emplace(redis_server->port(), redis_server->pid());
  const uint64_t warm_errors = facts.pool_warmed ? WarmUp(memkv, o.pool_bytes) : 0;
  SweepTargets targets;
  targets.memkv = &memkv;
  targets.memkv_pid = target->spawned ? target->spawned->pid() : 0;
  targets.raw_port = (*raw)->port();
  targets.raw_pid = (*raw)->pid();
  targets.redis = redis ? &*redis : nullptr;
  Sweep sweep = RunSweep(o, targets);
  sweep.errors += warm_errors;
  PrintTables(stdout, sweep.rows, redis.has_value());
  std::vector<AuthCostRow> auth_cost;
  AuthCpuCost auth_cpu;
  if (o.auth_cost) {
    auth_cost = RunAuthCost(o, (*raw)->port(), &sweep.errors);
    auth_cpu = MeasureAuthCpuCost();
    PrintAuthCost(stdout, auth_cost, auth_cpu);
  }
  sweep.errors += StopServer(target->spawned.get(), "memkv server");
  sweep.errors += StopServer(redis_server.get(), "redis-server");
  Status written = WriteJson(o.json_path, facts, sweep.rows, AuthCostJson(auth_cost, auth_cpu), sweep.errors);
  if (!written.ok()) std::fprintf(stderr, "memkv-bench: %s\n", written.ToString().c_str());
  if (!o.plot_path.empty()) Plot(o, *peers, facts, sweep.rows, redis.has_value(), &sweep.errors);
  std::printf("\n%s; results in %s\n",
              sweep.errors == 0 ? "no errors, every value read back byte-exact" : "ERRORS: see stderr",
              o.json_path.c_str());
  return sweep.errors == 0 && written.ok() ? 0 : 1;
}

// --replay: the access log against the target, then the report and its JSON.
int RunReplayMode(const BenchOptions& o) {
  ::signal(SIGPIPE, SIG_IGN);
  std::ifstream in(o.replay_path);
  if (!in) {
    std::fprintf(stderr, "memkv-bench: --replay %s: cannot read it\n", o.replay_path.c_str());
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  Result<AccessLogFile> log = ParseAccessLog(text.str());
  if (!log.ok()) {
    std::fprintf(stderr, "memkv-bench: --replay %s: %s\n", o.replay_path.c_str(), log.status().message().c_str());
    return 1;
  }
  Result<Target> target = SetUpTarget(o);
  Result<std::string> tag = RandomAuthKeyHex();
  if (!target.ok() || !tag.ok()) {
    std::fprintf(stderr, "memkv-bench: %s\n", (target.ok() ? tag.status() : target.status()).ToString().c_str());
    return 1;
  }
  RunFacts facts = GatherFacts(MEMKV_SOURCE_DIR, MEMKV_BUILD_TYPE);
  facts.target = target->description;
  PrintMachine(stdout, "memkv-bench --replay", facts);
  std::printf("target: %s; pool %s; log %s (%zu calls); speed %g; %u threads\n\n", target->description.c_str(),
              o.servers.empty() ? FormatSize(o.pool_bytes).c_str() : "of the servers given", o.replay_path.c_str(),
              log->calls.size(), o.replay_speed, o.conns.front());
  std::fflush(stdout);
  const MemkvTarget memkv(target->servers, target->key_hex, tag->substr(0, 8));
  Result<std::unique_ptr<Client>> client = memkv.Connect(o.conns.front());
  if (!client.ok()) {
    std::fprintf(stderr, "memkv-bench: %s\n", client.status().ToString().c_str());
    return 1;
  }
  ReplayPlan plan;
  plan.speed = o.replay_speed;
  plan.threads = o.conns.front();
  plan.key_prefix = "memkv-replay/" + tag->substr(0, 8);
  const ReplayResult result = RunReplay(**client, *log, plan);
  client->reset();
  PrintReplay(stdout, result);
  uint64_t errors = result.errors + StopServer(target->spawned.get(), "memkv server");
  JsonWriter w;
  w.BeginObject();
  WriteMachineJson(w, facts);
  w.Key("log").String(o.replay_path).Key("speed").Number(o.replay_speed).Key("threads").Number(uint64_t{o.conns.front()});
  w.EndObject();
  std::string json = w.text();
  json.pop_back();
  json += "," + ReplayJson(result) + "}\n";
  Status written = WriteTextFile(o.json_path, json);
  if (!written.ok()) std::fprintf(stderr, "memkv-bench: %s\n", written.ToString().c_str());
  std::printf("\n%s; results in %s\n", errors == 0 ? "no errors" : "ERRORS: see stderr", o.json_path.c_str());
  return errors == 0 && written.ok() ? 0 : 1;
}

int Run(const BenchOptions& o) {
  if (o.mode == BenchMode::kSweep) return RunSweepMode(o);
  if (o.mode == BenchMode::kReplay) return RunReplayMode(o);
  const char* path = std::getenv("PATH");
  const SpawnEnv env{ResolveMemkvBinary(o.memkv_path), TempBase(), path != nullptr ? path : ""};
  const RunFacts machine = GatherFacts(MEMKV_SOURCE_DIR, MEMKV_BUILD_TYPE);
  return o.mode == BenchMode::kFill ? RunFill(o, env, machine) : RunFresh(o, env, machine);
}

}  // namespace
}  // namespace memkv::bench

int main(int argc, char** argv) {
  bool help = false;
  std::string error;
  std::optional<memkv::bench::BenchOptions> options =
      memkv::bench::ParseOptions(std::vector<std::string>(argv + 1, argv + argc), &help, &error);
  if (!options) {
    std::fprintf(stderr, "memkv-bench: %s; see 'memkv-bench --help'\n", error.c_str());
    return 2;
  }
  if (help) {
    std::fputs(memkv::bench::kUsage, stdout);
    return 0;
  }
  return memkv::bench::Run(*options);
}
