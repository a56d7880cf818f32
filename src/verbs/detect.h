// Auto-detection of the RoCEv2 path attributes (runbook, "MemKV
// configuration"): which GID to source from, which DSCP / traffic class and
// service level to stamp on every QP, and the MTU check `start` refuses on.
//
// The decisions are pure functions of what the NIC reports (PortInfo, the
// DCB configuration), so recorded fixtures test them; ReadDcb is the only
// part that talks to the kernel (rtnetlink, dcbnl).
#ifndef MEMKV_VERBS_DETECT_H_
#define MEMKV_VERBS_DETECT_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memkv/status.h"
#include "verbs/verbs.h"

namespace memkv::verbs {

// The NIC's DCB configuration as dcbnl reports it (IEEE 802.1Qaz).
struct DcbConfig {
  // DSCP -> priority application entries (IEEE_8021QAZ_APP_SEL_DSCP), in
  // the order the NIC lists them.
  std::vector<std::pair<uint8_t, uint8_t>> dscp_to_priority;
  uint8_t pfc_enabled = 0;  // bit p set: PFC (lossless) on priority p
  bool has_pfc = false;     // the NIC reported a PFC configuration at all
};

// Reads the DCB configuration of `netdev` over rtnetlink (RTM_GETDCB,
// DCB_CMD_IEEE_GET). Unavailable naming the reason when the netdev has no DCB
// support (virtual NICs, rxe's virtio) or the request fails.
Result<DcbConfig> ReadDcb(const std::string& netdev);

// Parses one RTM_GETDCB / DCB_CMD_IEEE_GET reply (the netlink message, header
// included), as the kernel sends it. For ReadDcb and for recorded fixtures.
Result<DcbConfig> ParseDcbReply(std::span<const uint8_t> message);

// The RoCEv2 GID auto-detect picks: a RoCE v2 entry with an IPv4-mapped
// address on the port's netdev, else any RoCE v2 entry with an IPv4-mapped
// address, else any RoCE v2 entry; never a RoCE v1 or IB entry. nullopt when
// there is none.
std::optional<uint32_t> PickRoceV2Gid(const PortInfo& port);

// What the server (or a client) applies to its QPs, and how it got there.
struct ResolvedPath {
  uint32_t gid_index = 0;
  uint8_t traffic_class = 0;
  uint8_t service_level = 0;
  uint32_t dscp = 0;                   // traffic_class >> 2
  std::vector<std::string> warnings;   // exact texts of docs/rdma.md, one line each
  std::vector<std::string> notes;      // how each value was chosen (info lines)
};

// Resolves gid_index, traffic_class and service_level: a pinned (non-zero)
// value is used as given; 0 means auto:
//   gid_index     -> PickRoceV2Gid; none: warning "no RoCEv2 GID found ..."
//                    and index 0
//   traffic_class -> from `dcb`: a DSCP whose priority has PFC enabled,
//   service_level    preferring DSCP 26 -> priority 3; traffic_class =
//                    DSCP << 2, service_level = that priority. DCB unreadable
//                    (`dcb` not ok) or no lossless DSCP: both stay 0 with a
//                    warning naming what to pin.
ResolvedPath ResolvePath(const PortInfo& port, const Result<DcbConfig>& dcb, uint32_t gid_index,
                         uint32_t traffic_class, uint32_t service_level);

// FailedPrecondition when `mtu` exceeds the port's active MTU, naming both
// values, the device, the netdev and the two fixes; InvalidArgument when
// `mtu` is not one of 256/512/1024/2048/4096.
Status CheckMtu(uint32_t mtu, const PortInfo& port, const std::string& setting_name);

}  // namespace memkv::verbs

#endif  // MEMKV_VERBS_DETECT_H_
