// Auto-detection of the RoCEv2 path attributes (detect.h). Everything but
// ReadDcb is a pure function of PortInfo and DcbConfig; ReadDcb asks the
// kernel over rtnetlink (dcbnl), the same request `dcb app show` and
// `mlnx_qos` make.
#include "verbs/detect.h"

#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "base/errno_text.h"
#include "base/unique_fd.h"

namespace memkv::verbs {

namespace {

constexpr int kDcbReplyTimeoutMs = 1000;
constexpr uint8_t kPreferredDscp = 26;
constexpr uint8_t kPreferredPriority = 3;

// "Operation not supported (EOPNOTSUPP)".
std::string Hex8(uint8_t v) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02x", v);
  return buf;
}

// One netlink attribute inside [data, data + size).
struct Attr {
  uint16_t type = 0;  // NLA_F_* flags masked off
  std::span<const uint8_t> payload;
};

// Splits a run of netlink attributes. ProtocolError when an attribute header
// or length points outside the run.
Result<std::vector<Attr>> SplitAttrs(std::span<const uint8_t> run, const char* where) {
  std::vector<Attr> attrs;
  size_t off = 0;
  while (off < run.size()) {
    if (run.size() - off < NLA_HDRLEN) {
      return ProtocolError(std::string("malformed dcbnl reply: truncated attribute header in ") + where);
    }
    nlattr hdr;
    std::memcpy(&hdr, run.data() + off, sizeof(hdr));
    if (hdr.nla_len < NLA_HDRLEN || hdr.nla_len > run.size() - off) {
      return ProtocolError(std::string("malformed dcbnl reply: attribute length ") + std::to_string(hdr.nla_len) +
                           " out of bounds in " + where);
    }
    attrs.push_back({static_cast<uint16_t>(hdr.nla_type & NLA_TYPE_MASK),
                     run.subspan(off + NLA_HDRLEN, hdr.nla_len - NLA_HDRLEN)});
    off += NLA_ALIGN(hdr.nla_len);
  }
  return attrs;
}

Status ParseAppTable(std::span<const uint8_t> run, DcbConfig* out) {
  MEMKV_ASSIGN_OR_RETURN(std::vector<Attr> apps, SplitAttrs(run, "DCB_ATTR_IEEE_APP_TABLE"));
  for (const Attr& a : apps) {
    if (a.type != DCB_ATTR_IEEE_APP) continue;  // e.g. DCB_ATTR_DCB_APP (PCP selector)
    if (a.payload.size() < sizeof(dcb_app)) {
      return ProtocolError("malformed dcbnl reply: DCB_ATTR_IEEE_APP of " + std::to_string(a.payload.size()) +
                           " bytes");
    }
    dcb_app app;
    std::memcpy(&app, a.payload.data(), sizeof(app));
    if (app.selector != IEEE_8021QAZ_APP_SEL_DSCP) continue;
    if (app.protocol > 63 || app.priority > 7) continue;  // not a DSCP / 802.1p priority
    out->dscp_to_priority.emplace_back(static_cast<uint8_t>(app.protocol), app.priority);
  }
  return Status::Ok();
}

Status ParseIeee(std::span<const uint8_t> run, DcbConfig* out) {
  MEMKV_ASSIGN_OR_RETURN(std::vector<Attr> attrs, SplitAttrs(run, "DCB_ATTR_IEEE"));
  for (const Attr& a : attrs) {
    if (a.type == DCB_ATTR_IEEE_PFC) {
      constexpr size_t kNeed = offsetof(ieee_pfc, pfc_en) + 1;
      if (a.payload.size() < kNeed) {
        return ProtocolError("malformed dcbnl reply: DCB_ATTR_IEEE_PFC of " + std::to_string(a.payload.size()) +
                             " bytes");
      }
      out->pfc_enabled = a.payload[offsetof(ieee_pfc, pfc_en)];
      out->has_pfc = true;
    } else if (a.type == DCB_ATTR_IEEE_APP_TABLE) {
      MEMKV_RETURN_IF_ERROR(ParseAppTable(a.payload, out));
    }
  }
  return Status::Ok();
}

// The lossless (PFC-enabled) DSCP entry to use: DSCP 26 -> priority 3 when
// present, else DSCP 26 on any lossless priority, else the first lossless
// entry in the NIC's order. `want_priority` >= 0 restricts to that priority
// (a pinned service_level).
std::optional<std::pair<uint8_t, uint8_t>> PickLosslessDscp(const DcbConfig& dcb, int want_priority) {
  std::optional<std::pair<uint8_t, uint8_t>> first, dscp26;
  for (const auto& [dscp, prio] : dcb.dscp_to_priority) {
    if (prio > 7 || (dcb.pfc_enabled & (1u << prio)) == 0) continue;
    if (want_priority >= 0 && prio != want_priority) continue;
    if (dscp == kPreferredDscp && prio == kPreferredPriority) return std::make_pair(dscp, prio);
    if (dscp == kPreferredDscp && !dscp26) dscp26 = std::make_pair(dscp, prio);
    if (!first) first = std::make_pair(dscp, prio);
  }
  return dscp26 ? dscp26 : first;
}

std::string PfcNote(const DcbConfig& dcb, uint8_t prio) {
  bool on = prio < 8 && (dcb.pfc_enabled & (1u << prio)) != 0;
  return std::string(on ? "PFC enabled on priority " : "PFC not enabled on priority ") + std::to_string(prio);
}

// "traffic_class and service_level stay 0: <reason>. RoCE traffic will ride
// the best-effort queue; pin ..." naming only the auto values.
std::string StayZeroWarning(bool tc, bool sl, const std::string& reason) {
  std::string subject = tc && sl ? "traffic_class and service_level stay 0"
                        : tc     ? "traffic_class stays 0"
                                 : "service_level stays 0";
  std::string pin_tc = "rdma.traffic_class (DSCP << 2, e.g. 104 for DSCP 26)";
  std::string pin_sl = "rdma.service_level (the lossless priority, e.g. 3)";
  std::string pin = tc && sl ? pin_tc + " and " + pin_sl : tc ? pin_tc : pin_sl;
  return subject + ": " + reason + ". RoCE traffic will ride the best-effort queue; pin " + pin;
}

std::string NetdevOr(const std::string& netdev, const char* fallback) {
  return netdev.empty() ? fallback : netdev;
}

const GidEntry* FindGid(const PortInfo& port, uint32_t index) {
  for (const GidEntry& e : port.gids) {
    if (e.index == index) return &e;
  }
  return nullptr;
}

// "RoCE v2, 10.0.0.1 on enp1s0f0".
std::string DescribeGid(const GidEntry& e, const PortInfo& port) {
  std::string ip = GidIpv4(e.gid);
  std::string text = std::string(GidTypeName(e.type)) + ", " + (ip.empty() ? GidToString(e.gid) : ip);
  const std::string& nd = e.netdev.empty() ? port.netdev : e.netdev;
  if (!nd.empty()) text += " on " + nd;
  return text;
}

void ResolveGid(const PortInfo& port, uint32_t pinned, ResolvedPath* out) {
  std::string idx;
  if (pinned != 0) {
    out->gid_index = pinned;
    idx = "gid_index " + std::to_string(pinned) + " (pinned)";
    const GidEntry* e = FindGid(port, pinned);
    if (e == nullptr) {
      out->warnings.push_back(idx + " is not a valid GID entry of " + port.device + " port " +
                              std::to_string(port.port_num) + "; connecting will fail (see show_gids " + port.device +
                              ")");
      out->notes.push_back(idx);
    } else {
      out->notes.push_back(idx + ": " + DescribeGid(*e, port));
      if (e->type == GidType::kRoceV1) {
        out->warnings.push_back(idx + " is a RoCE v1 entry: it carries no IP header, so no DSCP, and cannot reach "
                                      "the lossless queue. Pin rdma.gid_index to a RoCEv2 entry (see show_gids " +
                                port.device + ")");
      }
    }
    return;
  }
  std::optional<uint32_t> picked = PickRoceV2Gid(port);
  if (!picked) {
    out->gid_index = 0;
    std::string nd = NetdevOr(port.netdev, "unknown");
    out->warnings.push_back("no RoCEv2 GID found on " + port.device + " port " + std::to_string(port.port_num) +
                            " (netdev " + nd + "); using gid_index 0. Pin rdma.gid_index to a RoCEv2 entry (see "
                            "show_gids " + port.device + ") or give " + NetdevOr(port.netdev, "its netdev") +
                            " an IPv4 address");
    out->notes.push_back("gid_index 0 (auto): no RoCE v2 entry");
    return;
  }
  out->gid_index = *picked;
  out->notes.push_back("gid_index " + std::to_string(*picked) + " (auto): " + DescribeGid(*FindGid(port, *picked), port));
}

}  // namespace

Result<DcbConfig> ParseDcbReply(std::span<const uint8_t> message) {
  if (message.size() < sizeof(nlmsghdr)) {
    return ProtocolError("malformed dcbnl reply: " + std::to_string(message.size()) + " bytes, shorter than a netlink header");
  }
  nlmsghdr nlh;
  std::memcpy(&nlh, message.data(), sizeof(nlh));
  if (nlh.nlmsg_len < sizeof(nlmsghdr) || nlh.nlmsg_len > message.size()) {
    return ProtocolError("malformed dcbnl reply: nlmsg_len " + std::to_string(nlh.nlmsg_len) + " of a " +
                         std::to_string(message.size()) + "-byte message");
  }
  static_assert(NLMSG_HDRLEN == sizeof(nlmsghdr));
  auto body = message.subspan(NLMSG_HDRLEN, nlh.nlmsg_len - NLMSG_HDRLEN);
  if (nlh.nlmsg_type == NLMSG_ERROR) {
    if (body.size() < sizeof(int)) return ProtocolError("malformed dcbnl reply: truncated NLMSG_ERROR");
    int error = 0;
    std::memcpy(&error, body.data(), sizeof(error));
    if (error == 0) return ProtocolError("no DCB reply: the kernel only acknowledged the request");
    // The kernel sends a negated errno; anything else (positive, or too
    // negative to negate) is a malformed reply.
    if (error > 0 || error < -4095) {
      return ProtocolError("malformed dcbnl reply: NLMSG_ERROR code " + std::to_string(error));
    }
    return Unavailable(ErrnoText(-error));
  }
  if (nlh.nlmsg_type != RTM_GETDCB) {
    return ProtocolError("unexpected netlink message type " + std::to_string(nlh.nlmsg_type) + " (want RTM_GETDCB)");
  }
  if (body.size() < sizeof(dcbmsg)) return ProtocolError("malformed dcbnl reply: truncated dcbmsg");
  dcbmsg dm;
  std::memcpy(&dm, body.data(), sizeof(dm));
  if (dm.cmd != DCB_CMD_IEEE_GET) {
    return ProtocolError("unexpected dcbnl command " + std::to_string(dm.cmd) + " (want DCB_CMD_IEEE_GET)");
  }
  size_t attrs_off = NLMSG_ALIGN(sizeof(dcbmsg));
  if (attrs_off > body.size()) attrs_off = body.size();
  MEMKV_ASSIGN_OR_RETURN(std::vector<Attr> attrs, SplitAttrs(body.subspan(attrs_off), "dcbmsg"));
  DcbConfig config;
  bool has_ieee = false;
  for (const Attr& a : attrs) {
    if (a.type != DCB_ATTR_IEEE) continue;
    has_ieee = true;
    MEMKV_RETURN_IF_ERROR(ParseIeee(a.payload, &config));
  }
  if (!has_ieee) return Unavailable("the reply carries no IEEE 802.1Qaz (DCB_ATTR_IEEE) configuration");
  return config;
}

Result<DcbConfig> ReadDcb(const std::string& netdev) {
  const std::string prefix = "cannot read the DCB configuration of " + netdev + ": ";
  if (netdev.empty()) return Unavailable("cannot read the DCB configuration: no netdev backs the RDMA port");
  if (netdev.size() >= IFNAMSIZ) return Unavailable(prefix + "not a netdev name");

  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) return Unavailable(prefix + "socket(NETLINK_ROUTE): " + ErrnoText(errno));

  // nlmsghdr | dcbmsg | DCB_ATTR_IFNAME "eth0\0", each 4-byte aligned.
  const uint32_t seq = static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::vector<uint8_t> req(NLMSG_SPACE(sizeof(dcbmsg)) + NLA_ALIGN(NLA_HDRLEN + netdev.size() + 1), 0);
  nlmsghdr nlh{};
  nlh.nlmsg_len = static_cast<uint32_t>(req.size());
  nlh.nlmsg_type = RTM_GETDCB;
  nlh.nlmsg_flags = NLM_F_REQUEST;
  nlh.nlmsg_seq = seq;
  std::memcpy(req.data(), &nlh, sizeof(nlh));
  dcbmsg dm{};
  dm.dcb_family = AF_UNSPEC;
  dm.cmd = DCB_CMD_IEEE_GET;
  std::memcpy(req.data() + NLMSG_HDRLEN, &dm, sizeof(dm));
  nlattr ifname{};
  ifname.nla_len = static_cast<uint16_t>(NLA_HDRLEN + netdev.size() + 1);
  ifname.nla_type = DCB_ATTR_IFNAME;
  uint8_t* attr = req.data() + NLMSG_SPACE(sizeof(dcbmsg));
  std::memcpy(attr, &ifname, sizeof(ifname));
  std::memcpy(attr + NLA_HDRLEN, netdev.data(), netdev.size());

  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd.get(), req.data(), req.size(), 0, reinterpret_cast<const sockaddr*>(&kernel), sizeof(kernel)) < 0) {
    return Unavailable(prefix + "sendto(RTM_GETDCB): " + ErrnoText(errno));
  }

  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kDcbReplyTimeoutMs);
  std::vector<uint8_t> buf(64 * 1024);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return Unavailable(prefix + "no reply from the kernel within " + std::to_string(kDcbReplyTimeoutMs) + " ms");
    }
    pollfd pfd{fd.get(), POLLIN, 0};
    int pr = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (pr < 0) {
      if (errno == EINTR) continue;
      return Unavailable(prefix + "poll: " + ErrnoText(errno));
    }
    if (pr == 0) continue;  // the deadline check above reports it
    ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Unavailable(prefix + "recv: " + ErrnoText(errno));
    }
    // One datagram may hold several messages; take the one answering `seq`.
    size_t off = 0;
    while (off + sizeof(nlmsghdr) <= static_cast<size_t>(n)) {
      nlmsghdr h;
      std::memcpy(&h, buf.data() + off, sizeof(h));
      if (h.nlmsg_len < sizeof(nlmsghdr) || h.nlmsg_len > static_cast<size_t>(n) - off) break;
      if (h.nlmsg_seq == seq) {
        Result<DcbConfig> r = ParseDcbReply(std::span<const uint8_t>(buf.data() + off, h.nlmsg_len));
        if (!r.ok()) return Unavailable(prefix + r.status().message());
        return r;
      }
      off += NLMSG_ALIGN(h.nlmsg_len);
    }
  }
}

std::optional<uint32_t> PickRoceV2Gid(const PortInfo& port) {
  std::optional<uint32_t> v4_any, v2_any;
  for (const GidEntry& e : port.gids) {
    if (e.type != GidType::kRoceV2) continue;
    bool v4 = GidIsIpv4Mapped(e.gid);
    bool own_netdev = port.netdev.empty() || e.netdev.empty() || e.netdev == port.netdev;
    if (v4 && own_netdev) return e.index;
    if (v4 && !v4_any) v4_any = e.index;
    if (!v2_any) v2_any = e.index;
  }
  return v4_any ? v4_any : v2_any;
}

ResolvedPath ResolvePath(const PortInfo& port, const Result<DcbConfig>& dcb, uint32_t gid_index,
                         uint32_t traffic_class, uint32_t service_level) {
  ResolvedPath out;
  ResolveGid(port, gid_index, &out);

  const bool tc_auto = traffic_class == 0;
  const bool sl_auto = service_level == 0;
  out.traffic_class = static_cast<uint8_t>(traffic_class);
  out.service_level = static_cast<uint8_t>(service_level);
  const std::string nd = NetdevOr(port.netdev, "the port's netdev");

  if (!tc_auto) out.notes.push_back("traffic_class " + std::to_string(traffic_class) + " (pinned)");
  if (!sl_auto) out.notes.push_back("service_level " + std::to_string(service_level) + " (pinned)");

  if (tc_auto || sl_auto) {
    if (!dcb.ok()) {
      out.warnings.push_back(StayZeroWarning(tc_auto, sl_auto, dcb.status().message()));
    } else if (tc_auto) {
      // The DSCP decides the priority: pick a lossless one (on the pinned
      // priority when service_level is pinned).
      auto pick = PickLosslessDscp(*dcb, sl_auto ? -1 : static_cast<int>(service_level));
      if (!pick) {
        std::string reason = sl_auto ? "no DSCP on " + nd + " maps to a PFC-enabled priority (PFC mask " +
                                           Hex8(dcb->pfc_enabled) + ")"
                                     : "no DSCP on " + nd + " maps to the pinned service_level " +
                                           std::to_string(service_level) + " with PFC enabled (PFC mask " +
                                           Hex8(dcb->pfc_enabled) + ")";
        out.warnings.push_back(StayZeroWarning(true, sl_auto, reason));
      } else {
        auto [dscp, prio] = *pick;
        out.traffic_class = static_cast<uint8_t>(dscp << 2);
        out.notes.push_back("traffic_class " + std::to_string(out.traffic_class) + " (auto): DSCP " +
                            std::to_string(dscp) + " -> priority " + std::to_string(prio) + ", " + PfcNote(*dcb, prio));
        if (sl_auto) {
          out.service_level = prio;
          out.notes.push_back("service_level " + std::to_string(prio) + " (auto): DSCP " + std::to_string(dscp) +
                              " -> priority " + std::to_string(prio));
        }
      }
    } else {
      // Pinned DSCP, auto SL: the priority the NIC maps that DSCP to.
      uint32_t dscp = traffic_class >> 2;
      std::optional<uint8_t> prio;
      for (const auto& [d, p] : dcb->dscp_to_priority) {
        if (d == dscp) {
          prio = p;
          break;
        }
      }
      if (!prio) {
        out.warnings.push_back(StayZeroWarning(false, true, "DSCP " + std::to_string(dscp) + " (traffic_class " +
                                                                std::to_string(traffic_class) +
                                                                ") is not in the DSCP map of " + nd));
      } else {
        out.service_level = *prio;
        out.notes.push_back("service_level " + std::to_string(*prio) + " (auto): DSCP " + std::to_string(dscp) +
                            " -> priority " + std::to_string(*prio) + ", " + PfcNote(*dcb, *prio));
      }
    }
  }
  out.dscp = out.traffic_class >> 2;
  return out;
}

Status CheckMtu(uint32_t mtu, const PortInfo& port, const std::string& setting_name) {
  if (!IsValidMtu(mtu)) {
    return InvalidArgument(setting_name + " " + std::to_string(mtu) +
                           " is not a RoCE path MTU: use 256, 512, 1024, 2048 or 4096");
  }
  if (port.active_mtu != 0 && mtu > port.active_mtu) {
    std::string nd = NetdevOr(port.netdev, "<netdev>");
    return FailedPrecondition(setting_name + " " + std::to_string(mtu) + " exceeds the active MTU " +
                              std::to_string(port.active_mtu) + " of " + port.device + " port " +
                              std::to_string(port.port_num) + " (netdev " + NetdevOr(port.netdev, "unknown") +
                              "): enable jumbo frames end to end (ip link set " + nd +
                              " mtu 9000) so the port negotiates " + std::to_string(mtu) + ", or set " + setting_name +
                              (setting_name.rfind("MEMKV_", 0) == 0 ? "=" : ": ") + std::to_string(port.active_mtu));
  }
  return Status::Ok();
}

}  // namespace memkv::verbs
