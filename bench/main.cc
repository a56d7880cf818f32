// memkv-bench: block-size x connections sweep of put and get against MemKV
// over TCP, beside a raw TCP reference measured the same way in the same run;
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
#include <memory>

#include "base/units.h"
#include "bench/auth_cost.h"
#include "bench/fill.h"
#include "bench/fresh.h"
#include "bench/memkv_server.h"
#include "bench/memkv_target.h"
#include "bench/options.h"
#include "bench/process.h"
#include "bench/raw_reference.h"
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
  const MemkvServerConfig config{o.pool_bytes, o.prefault};
  MEMKV_ASSIGN_OR_RETURN(t.spawned, MemkvServer::Start(binary, config, t.key_hex, TempBase()));
  t.servers = {t.spawned->address()};
  t.description = "spawned " + binary + " at " + t.spawned->address();
  return t;
}

int RunSweepMode(const BenchOptions& o) {
  ::signal(SIGPIPE, SIG_IGN);
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
  RunFacts facts = GatherFacts(MEMKV_SOURCE_DIR, MEMKV_BUILD_TYPE);
  facts.target = target->description;
  facts.pool_bytes = o.pool_bytes;
  facts.seconds_per_cell = o.seconds;
  facts.repeat = o.repeat;
  facts.pool_warmed = o.warm_pool && target->spawned != nullptr;
  facts.prefault = o.prefault;
  PrintFacts(stdout, facts);
  std::fflush(stdout);

  const MemkvTarget memkv(target->servers, target->key_hex, tag->substr(0, 8));
  const uint64_t warm_errors = facts.pool_warmed ? WarmUp(memkv, o.pool_bytes) : 0;
  Sweep sweep = RunSweep(o, memkv, (*raw)->port());
  sweep.errors += warm_errors;
  PrintTables(stdout, sweep.rows);
  std::vector<AuthCostRow> auth_cost;
  AuthCpuCost auth_cpu;
  if (o.auth_cost) {
    auth_cost = RunAuthCost(o, (*raw)->port(), &sweep.errors);
    auth_cpu = MeasureAuthCpuCost();
    PrintAuthCost(stdout, auth_cost, auth_cpu);
  }
  if (target->spawned) {
    if (int rc = target->spawned->Stop(); rc != 0) {
      std::fprintf(stderr, "error: memkv server exited with status %d after SIGTERM\n", rc);
      ++sweep.errors;
    }
  }
  Status written = WriteJson(o.json_path, facts, sweep.rows, AuthCostJson(auth_cost, auth_cpu), sweep.errors);
  if (!written.ok()) std::fprintf(stderr, "memkv-bench: %s\n", written.ToString().c_str());
  std::printf("\n%s; results in %s\n",
              sweep.errors == 0 ? "no errors, every value read back byte-exact" : "ERRORS: see stderr",
              o.json_path.c_str());
  return sweep.errors == 0 && written.ok() ? 0 : 1;
}

int Run(const BenchOptions& o) {
  if (o.mode == BenchMode::kSweep) return RunSweepMode(o);
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
