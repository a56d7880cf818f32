// memkv start: the checks made before anything is created (start_preflight.cc).
//
// One list for both `memkv start` and `memkv start --check`, so a config the
// check passes is one start does not refuse for a reason that was knowable
// without serving: the TLS files, the pool against this host's memory and
// hugepages, the auth key file, the drives (CheckDrivesBeforeOpen). What only
// serving can tell (the port is free, the drives' locks, their contents) is
// left to start. Reads files; creates and changes nothing.
#ifndef MEMKV_CLI_START_PREFLIGHT_H_
#define MEMKV_CLI_START_PREFLIGHT_H_

#include <string>

#include "config/server_config.h"
#include "memkv/status.h"

namespace memkv::cli {

struct PreflightOptions {
  std::string data_dir;        // where auth.key is when the config has no key
  // Why the pool must be hugetlb ("RDMA device mlx5_0 registers it"); empty
  // when it need not be.
  std::string pin_reason;
  // --check. Only then are hugepages counted (start learns it by mapping the
  // pool), and fewer free than the pool needs is a warning unless the host
  // has fewer in all, as a running server about to be restarted may hold them.
  bool check_only = false;
};

// Ok, or every reason start would refuse, one line each naming the field
// and the fix (the status code is the first one's).
// Degraded-but-serving cases (a missing drive of several) are WARN log lines.
Status Preflight(const config::ServerConfig& config, const PreflightOptions& options);

// start only (not --check, which runs beside the server it checks): the data
// port and the admin port (port + 1) can be bound now. Checked before the
// auth key or any drive file is created, so a start on a busy port leaves
// nothing behind. Unavailable naming the address and the errno text.
Status CheckPortsFree(const config::NetworkConfig& network);

// This host's physical memory; 0 when unknown.
uint64_t PhysicalMemoryBytes();

}  // namespace memkv::cli

#endif  // MEMKV_CLI_START_PREFLIGHT_H_
