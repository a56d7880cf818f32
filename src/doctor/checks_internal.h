// Shared by the check files of CheckHost (host_checks.cc orchestrates; each
// check_*.cc owns a group of finding ids). Not part of the doctor API.
#ifndef MEMKV_DOCTOR_CHECKS_INTERNAL_H_
#define MEMKV_DOCTOR_CHECKS_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "doctor/finding.h"
#include "doctor/host_checks.h"
#include "doctor/probe.h"

namespace memkv::doctor::internal {

// One CheckHost run: the probe, what was asked, what is known so far, and
// where findings go.
struct Ctx {
  HostProbe& probe;
  const DoctorOptions& options;
  HostState& state;
  Report& report;

  const config::RdmaConfig& rdma() const { return options.config.rdma; }
  // "enp1s0f0", or "<if>" where no netdev is known (fix lines stay commands).
  std::string ifname() const { return state.netdev.empty() ? "<if>" : state.netdev; }
};

Finding MakeFinding(std::string id, Layer layer, Severity severity, std::string check);

// check_link.cc: port.state, port.link_layer, mtu.netdev, mtu.active, mtu.client
void CheckPortState(Ctx& ctx);
void CheckMtus(Ctx& ctx);
// check_gid.cc: gid.table, memkv.gid_index
void CheckGids(Ctx& ctx);
// check_dcb.cc: dcb.read, dcb.trust, dcb.dscp_map, dcb.pfc, ecn.roce,
// memkv.marking; fills state.roce_dscp / roce_priority
void CheckDcb(Ctx& ctx);
void CheckEcn(Ctx& ctx);
void CheckMarking(Ctx& ctx);
// check_memory.cc: mem.memlock, mem.hugepages, mem.max_mr
void CheckMemory(Ctx& ctx);
// check_counters.cc: counters.read, counters.pause, counters.cnp,
// counters.discards, counters.retransmit
void CheckCounters(Ctx& ctx);
// check_switch.cc: switch.pfc, switch.dscp, switch.ecn, switch.mtu
void AddSwitchHints(Ctx& ctx);

// "0,0,0,1,0,0,0,0": mlnx_qos --pfc with PFC on `priority` only.
std::string PfcArg(uint8_t priority);
// "0x08".
std::string Hex8(uint8_t v);
// "3" / "3, 4" / "none" for a PFC mask.
std::string PriorityList(uint8_t mask);
// A size for people: "64 GiB", "unlimited".
std::string Bytes(uint64_t bytes);

}  // namespace memkv::doctor::internal

#endif  // MEMKV_DOCTOR_CHECKS_INTERNAL_H_
