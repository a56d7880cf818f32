// dcb.read, dcb.trust, dcb.dscp_map, dcb.pfc, ecn.roce, memkv.marking: the
// runbook's "Host (NIC) configuration" (mlnx_qos --trust / --dscp2prio /
// --pfc, ECN in sysfs) and whether MemKV's marking lands on the lossless
// priority.
#include <map>

#include "doctor/checks_internal.h"
#include "doctor/sysfs.h"

namespace memkv::doctor::internal {
namespace {

std::optional<uint8_t> PriorityOf(const verbs::DcbConfig& dcb, uint32_t dscp) {
  for (const auto& [d, p] : dcb.dscp_to_priority) {
    if (d == dscp) return p;
  }
  return std::nullopt;
}

bool Lossless(const verbs::DcbConfig& dcb, uint8_t prio) { return prio < 8 && (dcb.pfc_enabled & (1u << prio)) != 0; }

// "0-7 -> 0, 8-15 -> 1, 26 -> 3": DSCPs in order, runs of consecutive DSCPs
// on one priority folded into a range.
std::string FormatDscpMap(const verbs::DcbConfig& dcb) {
  std::map<uint8_t, uint8_t> sorted;
  for (const auto& [d, p] : dcb.dscp_to_priority) sorted.emplace(d, p);
  std::string out;
  auto it = sorted.begin();
  while (it != sorted.end()) {
    uint8_t first = it->first, last = it->first, prio = it->second;
    auto next = std::next(it);
    while (next != sorted.end() && next->first == last + 1 && next->second == prio) {
      last = next->first;
      ++next;
    }
    out += (out.empty() ? "" : ", ") + std::to_string(first) + (first == last ? "" : "-" + std::to_string(last)) +
           " -> " + std::to_string(prio);
    it = next;
  }
  return out.empty() ? "empty" : out;
}

bool IsStayZeroWarning(const std::string& w) {
  return w.find(" stay 0: ") != std::string::npos || w.find(" stays 0: ") != std::string::npos;
}

void DcbUnreadable(Ctx& ctx) {
  const config::RdmaConfig& r = ctx.rdma();
  HostState& s = ctx.state;
  s.roce_dscp = r.traffic_class != 0 ? static_cast<uint8_t>(r.traffic_class >> 2) : kRunbookDscp;
  s.roce_priority = r.service_level != 0 ? static_cast<uint8_t>(r.service_level) : kRunbookPriority;
  const bool pinned = r.traffic_class != 0 && r.service_level != 0;
  Finding f = MakeFinding("dcb.read", Layer::kHostNic, pinned ? Severity::kInfo : Severity::kWarning,
                          "DCB configuration of " + ctx.ifname() + " (dcbnl)");
  f.observed = s.dcb.status().message();
  f.expected = "the DSCP map and PFC configuration (mlx5: mlnx_qos -i " + ctx.ifname() + ")";
  f.message = pinned ? "MemKV uses the pinned traffic_class and service_level; doctor cannot verify that priority " +
                           std::to_string(s.roce_priority) + " is lossless on this NIC."
                     : "MemKV's auto-detect cannot pick the lossless DSCP here (see memkv.marking), and doctor "
                       "cannot check DSCP trust, the DSCP map or PFC.";
  f.fix = {"mlnx_qos -i " + ctx.ifname()};
  ctx.report.Add(std::move(f));
}

}  // namespace

void CheckDcb(Ctx& ctx) {
  HostState& s = ctx.state;
  if (!s.dcb.ok()) {
    DcbUnreadable(ctx);
    return;
  }
  const verbs::DcbConfig& dcb = *s.dcb;
  const std::string nd = ctx.ifname();

  Finding r = MakeFinding("dcb.read", Layer::kHostNic, Severity::kOk, "DCB configuration of " + nd + " (dcbnl)");
  r.observed = std::to_string(dcb.dscp_to_priority.size()) + " DSCP entries, " +
               (dcb.has_pfc ? "PFC mask " + Hex8(dcb.pfc_enabled) : std::string("no PFC configuration"));
  r.expected = "readable";
  ctx.report.Add(std::move(r));

  // The DSCP MemKV's traffic carries: resolved or pinned; when auto-detect
  // found none, the runbook's 26 if the NIC maps it (to say where it lands).
  std::string dscp_source;
  if (s.path.traffic_class != 0) {
    s.roce_dscp = static_cast<uint8_t>(s.path.traffic_class >> 2);
    s.dscp_known = true;
    dscp_source = ctx.rdma().traffic_class != 0 ? "rdma.traffic_class " + std::to_string(ctx.rdma().traffic_class)
                                                : "auto-detect";
  } else if (PriorityOf(dcb, kRunbookDscp)) {
    s.roce_dscp = kRunbookDscp;
    s.dscp_known = true;
    dscp_source = "the runbook's DSCP";
  }
  if (s.dscp_known) {
    if (std::optional<uint8_t> p = PriorityOf(dcb, s.roce_dscp)) {
      s.roce_priority = *p;
      s.priority_known = true;
      s.priority_lossless = Lossless(dcb, *p);
    }
  }
  if (!s.priority_known && ctx.rdma().service_level != 0) s.roce_priority = static_cast<uint8_t>(ctx.rdma().service_level);

  // Trust: mlx5 under MLNX_OFED shows qos/trust; elsewhere the DSCP
  // application entries exist only when the NIC trusts DSCP.
  Finding t = MakeFinding("dcb.trust", Layer::kHostNic, Severity::kOk, "DSCP trust of " + nd);
  t.expected = "dscp";
  Result<std::string> trust = ctx.probe.ReadFile("/sys/class/net/" + nd + "/qos/trust");
  bool trusts = false;
  if (trust.ok()) {
    std::string v = FirstLine(*trust);
    trusts = v == "dscp";
    t.observed = v + " (/sys/class/net/" + nd + "/qos/trust)";
  } else {
    trusts = !dcb.dscp_to_priority.empty();
    t.observed = trusts ? "dscp (inferred: the NIC lists " + std::to_string(dcb.dscp_to_priority.size()) +
                              " DSCP application entries)"
                        : "not dscp (no DSCP application entries)";
  }
  if (!trusts) {
    t.severity = Severity::kError;
    t.message = "The NIC does not classify by DSCP, so MemKV's DSCP marking does not select the lossless priority.";
    t.fix = {"mlnx_qos -i " + nd + " --trust dscp", "mlnx_qos -i " + nd + " --dscp2prio set,26,3"};
  }
  ctx.report.Add(std::move(t));

  if (!dcb.dscp_to_priority.empty()) {
    Finding m = MakeFinding("dcb.dscp_map", Layer::kHostNic, Severity::kOk, "DSCP -> priority map of " + nd);
    m.observed = FormatDscpMap(dcb);
    if (s.priority_known) {
      m.expected = "DSCP " + std::to_string(s.roce_dscp) + " (" + dscp_source + ") mapped to a priority";
      m.observed += "; DSCP " + std::to_string(s.roce_dscp) + " -> priority " + std::to_string(s.roce_priority);
    } else {
      const uint8_t want = s.dscp_known ? s.roce_dscp : kRunbookDscp;
      const uint8_t prio = ctx.rdma().service_level != 0 ? static_cast<uint8_t>(ctx.rdma().service_level) : kRunbookPriority;
      m.expected = "DSCP " + std::to_string(want) + " mapped to a priority";
      m.severity = Severity::kError;
      m.message = s.dscp_known ? "DSCP " + std::to_string(want) + " (" + dscp_source + ") is not in the DSCP map of " + nd +
                                     ", so the NIC does not put it on the lossless priority."
                               : "No DSCP maps to a PFC-enabled priority and the runbook's DSCP 26 is not mapped.";
      m.fix = {"mlnx_qos -i " + nd + " --dscp2prio set," + std::to_string(want) + "," + std::to_string(prio)};
    }
    ctx.report.Add(std::move(m));
  }

  Finding p = MakeFinding("dcb.pfc", Layer::kHostNic, Severity::kOk, "PFC (lossless priorities) of " + nd);
  p.observed = dcb.has_pfc ? "mask " + Hex8(dcb.pfc_enabled) + ": priority " + PriorityList(dcb.pfc_enabled)
                           : "no PFC configuration reported";
  if (s.priority_known) {
    p.expected = "PFC on priority " + std::to_string(s.roce_priority) + " (where DSCP " + std::to_string(s.roce_dscp) +
                 " lands)";
    std::optional<uint8_t> runbook_prio = PriorityOf(dcb, kRunbookDscp);
    if (s.priority_lossless && ctx.rdma().traffic_class == 0 && s.roce_dscp != kRunbookDscp && runbook_prio &&
        !Lossless(dcb, *runbook_prio)) {
      // Auto-detect found another lossless pairing; the fabric was most
      // likely set up for the runbook's.
      p.severity = Severity::kWarning;
      p.message = "Auto-detect marks DSCP " + std::to_string(s.roce_dscp) + " -> priority " +
                  std::to_string(s.roce_priority) + " because the runbook's DSCP 26 lands on priority " +
                  std::to_string(*runbook_prio) + ", which has no PFC. Unless every switch treats DSCP " +
                  std::to_string(s.roce_dscp) + " as lossless on priority " + std::to_string(s.roce_priority) +
                  ", make priority " + std::to_string(*runbook_prio) + " lossless instead.";
      p.fix = {"mlnx_qos -i " + nd + " --pfc " + PfcArg(*runbook_prio)};
    } else if (!s.priority_lossless) {
      p.severity = Severity::kError;
      p.message = "DSCP " + std::to_string(s.roce_dscp) + " lands on priority " + std::to_string(s.roce_priority) +
                  ", which has no PFC: the marking puts RoCE traffic on a lossy priority (PFC is on priority " +
                  PriorityList(dcb.pfc_enabled) + ").";
      p.fix = {"mlnx_qos -i " + nd + " --pfc " + PfcArg(s.roce_priority)};
    }
  } else {
    p.expected = "PFC on the priority MemKV's DSCP lands on";
    if (dcb.pfc_enabled == 0) {
      p.severity = Severity::kError;
      p.message = "No priority is lossless.";
      p.fix = {"mlnx_qos -i " + nd + " --pfc " + PfcArg(s.roce_priority)};
    } else {
      p.severity = Severity::kInfo;
      p.message = "doctor cannot tell which priority MemKV's traffic lands on (dcb.dscp_map).";
    }
  }
  ctx.report.Add(std::move(p));
}

void CheckEcn(Ctx& ctx) {
  const HostState& s = ctx.state;
  const std::string nd = ctx.ifname();
  const std::string prio = std::to_string(s.roce_priority);
  const std::string dir = "/sys/class/net/" + nd + "/ecn";
  Finding f = MakeFinding("ecn.roce", Layer::kHostNic, Severity::kOk, "RoCE ECN (DCQCN) for priority " + prio + " on " + nd);
  f.expected = "roce_np and roce_rp enabled (1) for priority " + prio;
  const std::string assumed = s.priority_known ? "" : " (priority " + prio + " assumed: the DCB map cannot tell)";
  Result<std::vector<std::string>> listed = ctx.probe.ListDir(dir);
  if (!listed.ok()) {
    f.severity = Severity::kInfo;
    f.observed = "no " + dir + assumed;
    f.message = "This driver exposes no RoCE ECN settings; doctor cannot verify ECN on this NIC.";
    ctx.report.Add(std::move(f));
    return;
  }
  for (const char* side : {"roce_np", "roce_rp"}) {
    const std::string path = dir + "/" + side + "/enable/" + prio;
    Result<std::string> v = ctx.probe.ReadFile(path);
    std::string value = v.ok() ? FirstLine(*v) : "missing";
    f.observed += (f.observed.empty() ? "" : ", ") + std::string(side) + " " + value;
    if (value != "1") f.fix.push_back("echo 1 > " + path);
  }
  f.observed += assumed;
  if (!f.fix.empty()) {
    f.severity = Severity::kWarning;
    f.message = "ECN is off for priority " + prio + ": congestion is signalled only by PFC pauses, without "
                "DCQCN's rate reduction (CNPs).";
  }
  ctx.report.Add(std::move(f));
}

void CheckMarking(Ctx& ctx) {
  const HostState& s = ctx.state;
  const config::RdmaConfig& r = ctx.rdma();
  const verbs::ResolvedPath& path = s.path;
  const std::string nd = ctx.ifname();
  auto how = [](uint32_t configured) { return configured != 0 ? "pinned" : "auto"; };
  Finding f = MakeFinding("memkv.marking", Layer::kMemkv, Severity::kOk,
                          "traffic_class and service_level MemKV stamps on every QP");
  f.observed = "traffic_class " + std::to_string(path.traffic_class) + " (" + how(r.traffic_class) + ", DSCP " +
               std::to_string(path.dscp) + "), service_level " + std::to_string(path.service_level) + " (" +
               how(r.service_level) + ")";
  f.expected = s.priority_known ? "traffic_class " + std::to_string(s.roce_dscp << 2) + " (DSCP " +
                                      std::to_string(s.roce_dscp) + "), service_level " +
                                      std::to_string(s.roce_priority) + ", a lossless priority"
                                : "the DSCP of a lossless priority, and that priority as service_level";

  std::vector<std::string> stay_zero;
  for (const std::string& w : path.warnings) {
    if (IsStayZeroWarning(w)) stay_zero.push_back(w);
  }
  if (r.service_level != 0 && s.dcb.ok()) {
    const uint8_t sl = static_cast<uint8_t>(r.service_level);
    const uint8_t mask = s.dcb->pfc_enabled;
    if (s.priority_known && sl != s.roce_priority) {
      f.severity = Severity::kError;
      f.message = "service_level " + std::to_string(sl) + " (pinned) does not match priority " +
                  std::to_string(s.roce_priority) + ", where DSCP " + std::to_string(s.roce_dscp) +
                  " lands: mlx5 schedules egress by the SL, so the traffic leaves on another queue even with the "
                  "right DSCP.";
      f.fix = {"rdma.service_level: " + std::to_string(s.roce_priority)};
    } else if (!Lossless(*s.dcb, sl)) {
      f.severity = Severity::kError;
      f.message = "service_level " + std::to_string(sl) + " (pinned) is not a lossless priority (PFC on priority " +
                  PriorityList(mask) + ").";
      f.fix = {s.priority_known ? "mlnx_qos -i " + nd + " --pfc " + PfcArg(sl)
                                : "rdma.service_level: " + std::to_string(s.roce_priority)};
    }
  }
  if (f.severity == Severity::kOk && !stay_zero.empty()) {
    f.severity = Severity::kWarning;
    for (const std::string& w : stay_zero) f.message += (f.message.empty() ? "" : " ") + w;
    if (!s.dcb.ok()) {
      // The runbook: pin them when auto-detect cannot see the DCB config.
      if (r.traffic_class == 0) f.fix.push_back("rdma.traffic_class: " + std::to_string(s.roce_dscp << 2));
      if (r.service_level == 0) f.fix.push_back("rdma.service_level: " + std::to_string(s.roce_priority));
    } else if (s.priority_known && !s.priority_lossless) {
      // Pinning would not help: the priority the DSCP lands on is lossy.
      f.message += ". Pinning alone does not help here: DSCP " + std::to_string(s.roce_dscp) + " lands on priority " +
                   std::to_string(s.roce_priority) + ", which has no PFC (dcb.pfc).";
      f.fix.push_back("mlnx_qos -i " + nd + " --pfc " + PfcArg(s.roce_priority));
    } else {
      f.fix.push_back("mlnx_qos -i " + nd + " --dscp2prio set," + std::to_string(s.roce_dscp) + "," +
                      std::to_string(s.roce_priority));
      f.fix.push_back("mlnx_qos -i " + nd + " --pfc " + PfcArg(s.roce_priority));
    }
  }
  ctx.report.Add(std::move(f));
}

}  // namespace memkv::doctor::internal
