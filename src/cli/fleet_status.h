// The admin endpoints' /v1/status documents of a set of servers, asked all
// at once with the code of `memkv admin status` (admin_cmd.cc), for the
// commands that read them: admin status and stats. Each server is asked on a
// thread of its own; the call returns when all have answered or the deadline
// (plus a little grace for name resolution) has passed.
// Any thread; blocks for up to timeout_ms.
#ifndef MEMKV_CLI_FLEET_STATUS_H_
#define MEMKV_CLI_FLEET_STATUS_H_

#include <string>
#include <vector>

#include "base/json.h"
#include "cli/cli.h"
#include "memkv/status.h"

namespace memkv::cli {

struct FleetStatusOptions {
  // Data addresses HOST:PORT (admin endpoint on PORT+1) or admin URLs;
  // empty: the client's servers (MEMKV_CONFIG, MEMKV_SERVERS, else
  // 127.0.0.1:9900).
  std::vector<std::string> addresses;
  int timeout_ms = 3000;
  std::string ca_file;  // HTTPS, verifying against these CA certificates
  bool insecure = false;  // HTTPS without verifying
};

// What one server said, or why it said nothing useful.
struct ServerStatus {
  std::string address;  // as the user gave it
  bool reachable = false;
  std::string error;    // why not, when !reachable
  JsonValue status;     // the /v1/status document
};

// One answer per address, in order. InvalidArgument: an address that is not
// one (a usage error); FailedPrecondition: the client configuration (no
// addresses given) or the --cacert file could not be read.
Result<std::vector<ServerStatus>> AskFleetStatus(const FleetStatusOptions& options, const Environment& env);

}  // namespace memkv::cli

#endif  // MEMKV_CLI_FLEET_STATUS_H_
