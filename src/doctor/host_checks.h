// Host checks of `memkv doctor` (docs/doctor.md): what software can see on
// one host of the runbook's three layers, for one RDMA device and port.
//
//   HostProbe& probe (probe.h) -- CheckHost --> Findings appended to a Report
//                                           \-> HostState (what was resolved)
//
// A later check builds on the HostState: the path check to a peer uses
// `path` (GID index, traffic class, SL exactly as MemKV would stamp them),
// `mtu`, `roce_priority`, and reads its own counter snapshots through the
// same probe, diffing them with counters.h. It appends its own Findings (ids
// "path.*") to the same Report.
//
// Not thread-safe (the probe is used by one thread); no global state.
#ifndef MEMKV_DOCTOR_HOST_CHECKS_H_
#define MEMKV_DOCTOR_HOST_CHECKS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "config/server_config.h"
#include "doctor/finding.h"
#include "doctor/probe.h"
#include "verbs/detect.h"

namespace memkv::doctor {

// The device MemKV's embedded default config names (RdmaConfig{}.device).
inline const std::string kDefaultDevice = config::RdmaConfig{}.device;
// The runbook's conventional marking, assumed where the NIC cannot tell.
inline constexpr uint8_t kRunbookDscp = 26;
inline constexpr uint8_t kRunbookPriority = 3;

// RoCE headers the kernel takes off the netdev MTU before picking the IB path
// MTU (iboe_get_mtu: GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4).
inline constexpr uint32_t kRoceHeaderBytes = 96;
// The largest path MTU (256..4096) a netdev MTU leaves room for: 1500 ->
// 1024, 9000 -> 4096; 0 when not even 256 fits.
uint32_t ActiveMtuForNetdevMtu(uint32_t netdev_mtu);

struct DoctorOptions {
  std::string device;       // --device; "" = rdma.device of the config file, else the first device
  std::string netdev;       // --netdev; "" = the port's netdev
  uint8_t port = 1;
  config::ServerConfig config;  // the MemKV settings to check against
  std::string config_path;  // where `config` came from; "" = no config file (defaults)
  // MEMKV_RDMA_MTU as the environment has it (nullopt: unset, clients use 4096).
  std::optional<std::string> client_mtu;
  uint32_t interval_ms = 1000;  // how long the counters are watched
};

// What the host checks resolved, for checks that build on them.
struct HostState {
  verbs::PortInfo port;       // as the probe reported it, netdev replaced by --netdev
  std::string netdev;
  Result<verbs::DcbConfig> dcb = Unavailable("DCB not read");
  verbs::ResolvedPath path;   // gid_index, traffic_class, service_level as MemKV resolves them
  uint32_t mtu = 4096;        // rdma.mtu
  uint64_t pool_bytes = 0;    // memory.max_size (sized to the box when 0 in the config)
  // The DSCP MemKV's traffic carries and the priority the NIC maps it to.
  // `*_known` false: the DCB configuration could not tell, and the runbook's
  // DSCP 26 / priority 3 are assumed (for ECN and the switch hints).
  uint8_t roce_dscp = kRunbookDscp;
  uint8_t roce_priority = kRunbookPriority;
  bool dscp_known = false;
  bool priority_known = false;
  bool priority_lossless = false;  // PFC enabled on roce_priority (known only when priority_known)
  CounterSnapshot counters_before;
  CounterSnapshot counters_after;
};

// Runs every host check against `probe` and appends the findings to
// `report` (whose host, device, port, netdev, config and interval_ms it
// fills). nullopt when no device could be examined (no RDMA device, the
// device absent, the port unreadable); the report then says why.
std::optional<HostState> CheckHost(HostProbe& probe, const DoctorOptions& options, Report* report);

}  // namespace memkv::doctor

#endif  // MEMKV_DOCTOR_HOST_CHECKS_H_
