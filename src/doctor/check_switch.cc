// switch.*: what every switch on the path must match, from the host's own
// settings (the runbook's "Switch configuration", Cumulus Linux syntax).
// doctor cannot see switches, so these are hints (info), never verdicts.
#include "doctor/checks_internal.h"
#include "doctor/sysfs.h"

namespace memkv::doctor::internal {

void AddSwitchHints(Ctx& ctx) {
  const HostState& s = ctx.state;
  const std::string prio = std::to_string(s.roce_priority);
  const std::string dscp = std::to_string(s.roce_dscp);
  const std::string assumed = s.priority_known ? "" : " (assumed: the runbook's convention)";

  Finding pfc = MakeFinding("switch.pfc", Layer::kSwitch, Severity::kInfo, "PFC on priority " + prio + " on every switch");
  pfc.observed = "host: DSCP " + dscp + " -> priority " + prio + assumed;
  pfc.expected = "PFC enabled on priority " + prio + " fabric-wide";
  pfc.message = "One hop without PFC on priority " + prio + " makes the whole path lossy.";
  pfc.fix = {"nv set qos pfc default-global pfc-priority " + prio, "nv set qos pfc default-global state enable",
             "nv config apply"};
  ctx.report.Add(std::move(pfc));

  Finding mark = MakeFinding("switch.dscp", Layer::kSwitch, Severity::kInfo, "DSCP trust and classification");
  mark.observed = "host: DSCP " + dscp + assumed;
  mark.expected = "trust dscp; DSCP " + dscp + " -> switch-priority " + prio;
  mark.message = "A hop that rewrites or ignores the DSCP puts RoCE traffic on a best-effort queue.";
  mark.fix = {"nv set qos mapping default-global trust dscp",
              "nv set qos mapping default-global dscp " + dscp + " switch-priority " + prio, "nv config apply"};
  ctx.report.Add(std::move(mark));

  Finding ecn = MakeFinding("switch.ecn", Layer::kSwitch, Severity::kInfo, "ECN marking on traffic class " + prio);
  ecn.observed = "host: priority " + prio + assumed;
  ecn.expected = "ECN (WRED) on traffic class " + prio;
  ecn.message = "Switches mark ECN so receivers send CNPs and DCQCN slows senders before PFC has to pause.";
  ecn.fix = {"nv set qos congestion-control default-global congestion-mode ecn",
             "nv set qos congestion-control default-global traffic-class " + prio, "nv config apply"};
  ctx.report.Add(std::move(ecn));

  Result<std::string> mtu = ctx.probe.ReadFile("/sys/class/net/" + ctx.ifname() + "/mtu");
  Finding m = MakeFinding("switch.mtu", Layer::kSwitch, Severity::kInfo, "MTU of every RoCE-facing switch port");
  m.observed = "host: netdev MTU " + (mtu.ok() ? FirstLine(*mtu) : std::string("unknown")) + ", rdma.mtu " +
               std::to_string(s.mtu);
  m.expected = "port MTU >= " + std::to_string(s.mtu + kRoceHeaderBytes) + " on every hop (9216 in practice)";
  m.message = "A hop with a smaller MTU drops every full-size RDMA packet: retry exhaustion (IBV_WC_RETRY_EXC_ERR) "
              "and a fallback to TCP, only across nodes.";
  m.fix = {"nv set interface swp1-swp32 link mtu 9216", "nv config apply"};
  ctx.report.Add(std::move(m));
}

}  // namespace memkv::doctor::internal
