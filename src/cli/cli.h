// The `memkv` command: one binary, one sub-command per verb (docs/cli.md).
//
// Exit codes (stable, scripts rely on them):
//   0 success            1 key not found / absent (admin status: a server unhealthy)
//   2 usage error        3 configuration error
//   4 server unavailable or timed out (admin status: a server could not be asked)
//   5 authentication failed  6 request refused or failed (other)
#ifndef MEMKV_CLI_CLI_H_
#define MEMKV_CLI_CLI_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/client_config.h"
#include "memkv/status.h"

namespace memkv::verbs {
class Provider;
}  // namespace memkv::verbs

namespace memkv::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitNotFound = 1,
  kExitUsage = 2,
  kExitConfig = 3,
  kExitUnavailable = 4,
  kExitAuth = 5,
  kExitFailed = 6,
};

// The exit code that reports a failed request with this status.
int ExitCodeFor(const Status& status);

// Process environment as seen by the CLI; main() fills it from getenv.
struct Environment {
  std::optional<std::string> Get(std::string_view name) const;
  std::vector<std::pair<std::string, std::string>> vars;
};

// The default data directory: $HOME/.memkv, else ./memkv-data.
std::string DefaultDataDir(const Environment& env);

// The client's view of the environment: the real one, plus the local
// defaults (127.0.0.1:9900 and the key in the default data directory) when
// neither a config file nor the variable provides a value.
config::EnvLookup ClientLookupWithDefaults(const Environment& env);

int RunStart(const std::vector<std::string>& args, const Environment& env);
int RunClientVerb(const std::string& verb, const std::vector<std::string>& args, const Environment& env);
// memkv doctor: exits 0 clean, 1 warnings only, 2 errors (docs/doctor.md).
int RunDoctor(const std::vector<std::string>& args, const Environment& env);
// memkv setup: formats drives and prints a config (setup.cc; exit codes in
// docs/cli.md). RDMA devices are detected through `rdma` (main passes
// verbs::SystemProvider(); tests a FakeFabric).
int RunSetup(const std::vector<std::string>& args, const Environment& env, verbs::Provider& rdma);
// memkv drive list|inspect|verify on a stopped server's drives (drive_cmd.cc).
int RunDrive(const std::vector<std::string>& args, const Environment& env);
// memkv admin status: running servers' /v1/status over their admin endpoints
// (admin_cmd.cc; exit codes in docs/cli.md).
int RunAdmin(const std::vector<std::string>& args, const Environment& env);
// memkv stats: the per (tenant, cache identity) counts of /v1/status summed
// over the servers (stats_cmd.cc; exit codes in docs/cli.md).
int RunStats(const std::vector<std::string>& args, const Environment& env);

}  // namespace memkv::cli

#endif  // MEMKV_CLI_CLI_H_
