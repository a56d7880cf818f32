// HostProbe: the seam between doctor's checks and the host they examine.
//
// Everything a check knows about the host comes through this interface, so
// the same checks run against the live system (SystemProbe, system_probe.h)
// and against a recorded host (FixtureProbe, fixture_probe.h: a directory
// holding a sysfs/procfs subtree, the dcbnl reply and ethtool statistics).
// A later check (the path check to a peer) reads its counter deltas through
// ReadCounters the same way.
//
// Paths are absolute as on the host ("/sys/class/net/eth0/mtu"); an
// implementation maps them onto its root. One thread uses a probe at a time.
#ifndef MEMKV_DOCTOR_PROBE_H_
#define MEMKV_DOCTOR_PROBE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "memkv/status.h"
#include "verbs/detect.h"
#include "verbs/verbs.h"

namespace memkv::doctor {

// RLIMIT_MEMLOCK of this process, and whether it may lock memory beyond it.
struct MemlockLimit {
  bool unlimited = false;
  uint64_t soft_bytes = 0;     // meaningful when !unlimited
  bool cap_ipc_lock = false;   // CAP_IPC_LOCK in the effective set
};

// The trouble-revealing counters of one RDMA port and its netdev, at one
// moment. A source that cannot be read is empty, with the reason in its
// status; the other is still filled.
struct CounterSnapshot {
  std::map<std::string, uint64_t> hw;       // /sys/class/infiniband/<dev>/ports/<p>/hw_counters/*
  Status hw_status;
  std::map<std::string, uint64_t> ethtool;  // ethtool -S <netdev> (ETHTOOL_GSTRINGS / ETHTOOL_GSTATS)
  Status ethtool_status;
};

class HostProbe {
 public:
  virtual ~HostProbe() = default;

  // RDMA device names (ibv_get_device_list). None at all is an empty vector.
  virtual Result<std::vector<std::string>> Devices() = 0;
  // `device` port `port` as verbs reports it: state, active and max MTU,
  // link layer, netdev, the GID table (types, netdevs) and max_mr_size.
  // NotFound naming the devices present when `device` is not one of them.
  virtual Result<verbs::PortInfo> Port(const std::string& device, uint8_t port) = 0;
  // The netdev's DCB configuration (dcbnl over rtnetlink). Unavailable with
  // verbs::ReadDcb's wording ("cannot read the DCB configuration of eth0:
  // Operation not supported (EOPNOTSUPP)") when it cannot be read.
  virtual Result<verbs::DcbConfig> Dcb(const std::string& netdev) = 0;
  // A sysfs/procfs file's contents. NotFound when it does not exist.
  virtual Result<std::string> ReadFile(const std::string& path) = 0;
  // The names in a directory, sorted. NotFound when it does not exist.
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;
  virtual Result<MemlockLimit> Memlock() = 0;
  // The counters now. Call it before and after what is being watched and
  // diff the two (counters.h); a fixture answers its k-th call with its k-th
  // recorded snapshot.
  virtual CounterSnapshot ReadCounters(const std::string& device, uint8_t port, const std::string& netdev) = 0;
  // Lets `ms` pass (the counter interval). A fixture returns at once.
  virtual void Wait(uint32_t ms) = 0;
};

}  // namespace memkv::doctor

#endif  // MEMKV_DOCTOR_PROBE_H_
