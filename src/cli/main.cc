// memkv: entry point. Dispatches to the sub-commands.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/version.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "verbs/verbs.h"

extern char** environ;

namespace memkv::cli {
namespace {


constexpr const char* kUsage = R"(memkv: a store for LLM KV-cache blocks

Usage: memkv <command> [options]

Server:
  start [--config PATH] [--data-dir DIR] [--log-level LEVEL] [--workers N]
        [--handshake-timeout-ms N] [--write-stall-timeout-ms N]
        [--address HOST:PORT | --port N] [--check]
                              run a server (default config /etc/memkv/config.yaml
                              if present, else the embedded single-node default);
                              SIGINT and SIGTERM drain and stop it; SIGHUP
                              re-reads the config file and applies only its
                              credentials (network.auth_key, tenants); other
                              settings need a restart (memkv start --help)

Drives:
  setup --drives PATH... [--address HOST:PORT] [--rdma DEV] [--block-size SIZE]
        [--file-size SIZE] [--journal-size SIZE] [--encryption-key-file PATH]
        [--force] [--idempotent]
                              format drives for MemKV and print a working
                              config.yaml on standard output
  drive list|inspect|verify [--config PATH | --drives PATH...] [--json]
        [--allow-degraded]
                              examine a stopped server's drives; verify reads
                              every value back and checks its checksums

Fleet administration (ADDR: a server's HOST:PORT, or its admin URL):
  admin status [--json] [--timeout-ms N] [--insecure | --cacert FILE] [ADDR...]
                              health, uptime, capacity, hit ratio, ops/s and
                              transport of running servers, from their admin
                              endpoints; without ADDR, also whether each of the
                              client's servers takes the client's key (exit 1 a
                              server unhealthy, 4 a server unreachable, 5 a
                              server refuses the key)
  admin reload [--key-file FILE] [--timeout-ms N] [--insecure | --cacert FILE]
        [--server ADDR | ADDR...]
                              each server re-reads its config file (signed with
                              the administrator key)
  admin drain [same options as reload]
                              each server stops taking new keys
  admin undrain [same options as reload]
                              each server takes new keys again
  stats [--json] [--timeout-ms N] [--insecure | --cacert FILE]
        [--server ADDR | ADDR...]
                              per tenant and cache identity, summed over the
                              servers: lookups, found, fetched, restores in
                              time and late, hit % and in-time %, stores, shed
                              and evictions (exit 4 a server unreadable)

Diagnostics:
  doctor [--config PATH] [--device DEV] [--netdev IF] [--port N]
         [--interval-ms N] [--peer HOST:PORT] [--peer-blocks N] [--json]
                              check this host against the RoCEv2 runbook and
                              name the fix of each problem (exit 0 clean,
                              1 warnings, 2 errors)

Client (servers from MEMKV_CONFIG / MEMKV_SERVERS, key from MEMKV_AUTH_KEY;
without them: 127.0.0.1:9900 and the key in ~/.memkv/auth.key):
  put [--ttl T] [--retention R] [--parent KEY] KEY [FILE|-]
                              store FILE (or standard input) under KEY, with a
                              lifetime, a retention class, a parent key; stops
                              reading at the server's value limit
  get KEY [-o FILE | --output FILE]
                              write the value of KEY to standard output or FILE
  del KEY                     delete KEY
  exists KEY...               print which keys are present
  match-prefix KEY...         print how many keys, from the first, are stored
                              without a gap, and the first missing one
  ls [--by-identity] [PREFIX]
                              list the keys that start with PREFIX (exit 4 when
                              a server could not be listed: it is named);
                              --by-identity: one line per identity segment
                              ("@<tag>/", or "none") with its key count

  memkv <command> --help      options of one command
  "--name=value" equals "--name value", and is how a value that begins
  with '-' is given (--data-dir=-dir): "--data-dir --check" is refused;
  "--" ends the options (keys that begin with '-': memkv get -- -key)
  memkv --version             print the version

Exit codes: 0 ok, 1 not found, 2 usage, 3 configuration, 4 unavailable or
timed out, 5 authentication failed, 6 request failed.
)";

Environment ReadEnvironment() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr) continue;
    env.vars.emplace_back(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  return env;
}

}  // namespace
}  // namespace memkv::cli

int main(int argc, char** argv) {
  using namespace memkv::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version" || args[0] == "-V" || args[0] == "version") {
    std::printf("memkv %s (wire protocol 1)\n", memkv::kMemkvVersion);
    return kExitOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (FindCommand(command) == nullptr) {
    std::fprintf(stderr, "memkv: unknown command '%s'; run 'memkv --help' for the list\n", command.c_str());
    return kExitUsage;
  }
  Environment env = ReadEnvironment();
  if (command == "start") return RunStart(args, env);
  if (command == "doctor") return RunDoctor(args, env);
  if (command == "setup") return RunSetup(args, env, memkv::verbs::SystemProvider());
  if (command == "drive") return RunDrive(args, env);
  if (command == "admin") return RunAdmin(args, env);
  if (command == "stats") return RunStats(args, env);
  // The client verbs: put, get, del, exists, match-prefix, ls.
  return RunClientVerb(command, args, env);
}
