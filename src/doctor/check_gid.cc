// gid.table and memkv.gid_index: the runbook's "Confirm a routable RoCEv2
// GID exists" (show_gids) and which index MemKV sources from.
#include "doctor/checks_internal.h"

namespace memkv::doctor::internal {
namespace {

const verbs::GidEntry* FindGid(const verbs::PortInfo& port, uint32_t index) {
  for (const verbs::GidEntry& e : port.gids) {
    if (e.index == index) return &e;
  }
  return nullptr;
}

// "3 RoCE v2 10.0.0.1" / "1 RoCE v2 fe80:...:0301", with the netdev when it
// is not the port's own.
std::string DescribeEntry(const verbs::GidEntry& e, const verbs::PortInfo& port) {
  std::string ip = verbs::GidIpv4(e.gid);
  std::string text = std::to_string(e.index) + " " + verbs::GidTypeName(e.type) + " " +
                     (ip.empty() ? verbs::GidToString(e.gid) : ip);
  if (!e.netdev.empty() && e.netdev != port.netdev) text += " (" + e.netdev + ")";
  return text;
}

bool IsRoutableV2(const verbs::GidEntry& e) {
  return e.type == verbs::GidType::kRoceV2 && verbs::GidIsIpv4Mapped(e.gid);
}

// The ResolvePath line about the GID ("gid_index 3 (auto): ...").
std::string GidNote(const verbs::ResolvedPath& path) {
  for (const std::string& n : path.notes) {
    if (n.rfind("gid_index ", 0) == 0) return n;
  }
  return "gid_index " + std::to_string(path.gid_index);
}

}  // namespace

void CheckGids(Ctx& ctx) {
  const verbs::PortInfo& port = ctx.state.port;
  const std::string show_gids = "show_gids " + port.device;

  Finding t = MakeFinding("gid.table", Layer::kHostNic, Severity::kOk,
                          "GID table of " + port.device + " port " + std::to_string(port.port_num));
  t.expected = "a RoCE v2 entry with an IPv4 address (::ffff:a.b.c.d)";
  bool any_v2 = false, routable = false;
  for (const verbs::GidEntry& e : port.gids) {
    t.observed += (t.observed.empty() ? "" : "; ") + DescribeEntry(e, port);
    any_v2 = any_v2 || e.type == verbs::GidType::kRoceV2;
    routable = routable || IsRoutableV2(e);
  }
  if (t.observed.empty()) t.observed = "empty";
  if (!routable) {
    t.severity = Severity::kWarning;
    t.message = any_v2 ? "The only RoCE v2 entries are link-local: no IPv4 address on " + ctx.ifname() +
                             ", so RoCE traffic cannot be routed beyond its subnet."
                       : "No RoCE v2 entry: MemKV falls back to gid_index 0 (RoCE v1, no IP header, no DSCP).";
    t.fix = {"ip addr add <address>/<prefix> dev " + ctx.ifname(), show_gids};
  }
  ctx.report.Add(std::move(t));

  const uint32_t pinned = ctx.rdma().gid_index;
  const verbs::ResolvedPath& path = ctx.state.path;
  Finding g = MakeFinding("memkv.gid_index", Layer::kMemkv, Severity::kOk, "the GID MemKV sources from");
  g.observed = GidNote(path);
  g.expected = "a RoCE v2 entry with an IPv4 address";
  std::optional<uint32_t> auto_pick = verbs::PickRoceV2Gid(port);
  if (pinned == 0) {
    if (!auto_pick) {
      g.severity = Severity::kWarning;
      for (const std::string& w : path.warnings) {
        if (w.rfind("no RoCEv2 GID found", 0) == 0) g.message = w;
      }
      g.fix = {"ip addr add <address>/<prefix> dev " + ctx.ifname(), show_gids};
    }
    ctx.report.Add(std::move(g));
    return;
  }
  const verbs::GidEntry* e = FindGid(port, pinned);
  const std::string better = auto_pick ? "rdma.gid_index: " + std::to_string(*auto_pick) : "rdma.gid_index: 0";
  if (e == nullptr || e->type != verbs::GidType::kRoceV2) {
    g.severity = Severity::kError;
    for (const std::string& w : path.warnings) {
      if (w.rfind("gid_index " + std::to_string(pinned) + " (pinned)", 0) == 0) g.message = w;
    }
    if (g.message.empty()) {
      g.message = "gid_index " + std::to_string(pinned) + " (pinned) is not a RoCE v2 entry; MemKV's traffic cannot "
                  "carry a DSCP from it.";
    }
    if (g.message.back() != '.') g.message += ".";
    if (auto_pick) g.message += " Auto-detect (rdma.gid_index: 0) would pick " + std::to_string(*auto_pick) + ".";
    g.fix = {better};
  } else if (!verbs::GidIsIpv4Mapped(e->gid)) {
    g.severity = Severity::kWarning;
    g.message = "gid_index " + std::to_string(pinned) + " (pinned) is a link-local RoCE v2 entry: its traffic "
                "cannot be routed beyond the subnet.";
    if (auto_pick && *auto_pick != pinned) {
      g.fix = {better};
    } else {
      g.fix = {"ip addr add <address>/<prefix> dev " + ctx.ifname(), show_gids};
    }
  }
  ctx.report.Add(std::move(g));
}

}  // namespace memkv::doctor::internal
