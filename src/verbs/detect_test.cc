// Auto-detection on fixtures: GID tables as mlx5 and rxe report them, DCB
// configurations, and dcbnl replies laid out byte for byte as the kernel's
// dcbnl_ieee_fill() writes them.
#include "verbs/detect.h"

#include <gtest/gtest.h>
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "base/bytes.h"

namespace memkv::verbs {
namespace {

// ---------------------------------------------------------------- fixtures

Gid V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}
Gid LinkLocal(uint8_t last) { return Gid{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x0a, 0x5c, 0x01, 0xff, 0xfe, 0x02, 0x03, last}; }

GidEntry Entry(uint32_t index, Gid gid, GidType type, std::string netdev) {
  GidEntry e;
  e.index = index;
  e.gid = gid;
  e.type = type;
  e.netdev = std::move(netdev);
  return e;
}

PortInfo BasePort(std::string device, std::string netdev) {
  PortInfo p;
  p.device = std::move(device);
  p.port_num = 1;
  p.active = true;
  p.state = "ACTIVE";
  p.active_mtu = 4096;
  p.max_mtu = 4096;
  p.ethernet = true;
  p.netdev = std::move(netdev);
  return p;
}

// A ConnectX port as show_gids lists it: RoCE v1 and v2 for the link-local
// address (0, 1), then v1 and v2 for the IPv4 address (2, 3).
PortInfo HealthyMlx5() {
  PortInfo p = BasePort("mlx5_0", "enp1s0f0");
  p.gids = {Entry(0, LinkLocal(1), GidType::kRoceV1, "enp1s0f0"), Entry(1, LinkLocal(1), GidType::kRoceV2, "enp1s0f0"),
            Entry(2, V4(10, 0, 0, 1), GidType::kRoceV1, "enp1s0f0"),
            Entry(3, V4(10, 0, 0, 1), GidType::kRoceV2, "enp1s0f0")};
  return p;
}

// The netdev has no IPv4 address: the only RoCE v2 entry is link-local.
PortInfo V2OnlyLinkLocal() {
  PortInfo p = BasePort("mlx5_0", "enp1s0f0");
  p.gids = {Entry(0, LinkLocal(1), GidType::kRoceV1, "enp1s0f0"), Entry(1, LinkLocal(1), GidType::kRoceV2, "enp1s0f0")};
  return p;
}

// RoCE v2 disabled (e.g. an old firmware setting): v1 entries only.
PortInfo NoV2() {
  PortInfo p = BasePort("mlx5_0", "enp1s0f0");
  p.gids = {Entry(0, LinkLocal(1), GidType::kRoceV1, "enp1s0f0"), Entry(1, V4(10, 0, 0, 1), GidType::kRoceV1, "enp1s0f0")};
  return p;
}

DcbConfig Dcb(std::vector<std::pair<uint8_t, uint8_t>> map, uint8_t pfc) {
  DcbConfig d;
  d.dscp_to_priority = std::move(map);
  d.pfc_enabled = pfc;
  d.has_pfc = true;
  return d;
}

Result<DcbConfig> Unreadable() {
  return Unavailable("cannot read the DCB configuration of enp1s0f0: Operation not supported (EOPNOTSUPP)");
}

const std::string kPinBoth =
    "RoCE traffic will ride the best-effort queue; pin rdma.traffic_class (DSCP << 2, e.g. 104 for DSCP 26) and "
    "rdma.service_level (the lossless priority, e.g. 3)";

bool HasNote(const ResolvedPath& r, const std::string& note) {
  for (const auto& n : r.notes) {
    if (n == note) return true;
  }
  return false;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// ---------------------------------------------------------- PickRoceV2Gid

TEST(PickRoceV2GidTest, HealthyMlx5PicksTheIpv4RoceV2Entry) {
  EXPECT_EQ(PickRoceV2Gid(HealthyMlx5()), 3u);
}

TEST(PickRoceV2GidTest, PrefersTheEntryOfThePortsOwnNetdev) {
  // A VLAN sub-interface's IPv4 GID sits at a lower index than the port's own.
  PortInfo p = HealthyMlx5();
  p.gids = {Entry(0, LinkLocal(1), GidType::kRoceV1, "enp1s0f0"),
            Entry(1, V4(192, 168, 5, 9), GidType::kRoceV2, "enp1s0f0.100"),
            Entry(2, LinkLocal(1), GidType::kRoceV2, "enp1s0f0"), Entry(5, V4(10, 0, 0, 1), GidType::kRoceV2, "enp1s0f0")};
  EXPECT_EQ(PickRoceV2Gid(p), 5u);
  // Without an IPv4 entry on its own netdev, any IPv4 RoCE v2 entry beats link-local.
  p.gids.pop_back();
  EXPECT_EQ(PickRoceV2Gid(p), 1u);
}

TEST(PickRoceV2GidTest, FallsBackToALinkLocalRoceV2Entry) {
  EXPECT_EQ(PickRoceV2Gid(V2OnlyLinkLocal()), 1u);
}

TEST(PickRoceV2GidTest, NeverPicksRoceV1OrIb) {
  EXPECT_EQ(PickRoceV2Gid(NoV2()), std::nullopt);
  PortInfo ib = BasePort("mlx5_2", "");
  ib.ethernet = false;
  ib.gids = {Entry(0, LinkLocal(7), GidType::kIb, "")};
  EXPECT_EQ(PickRoceV2Gid(ib), std::nullopt);
  EXPECT_EQ(PickRoceV2Gid(BasePort("rxe0", "eth0")), std::nullopt);  // empty table
}

// ------------------------------------------------------------ ResolvePath

TEST(ResolvePathTest, Dscp26OnLosslessPriority3) {
  ResolvedPath r = ResolvePath(HealthyMlx5(), Dcb({{26, 3}}, 0x08), 0, 0, 0);
  EXPECT_EQ(r.gid_index, 3u);
  EXPECT_EQ(r.traffic_class, 104);
  EXPECT_EQ(r.service_level, 3);
  EXPECT_EQ(r.dscp, 26u);
  EXPECT_TRUE(r.warnings.empty()) << Join(r.warnings);
  EXPECT_TRUE(HasNote(r, "gid_index 3 (auto): RoCE v2, 10.0.0.1 on enp1s0f0")) << Join(r.notes);
  EXPECT_TRUE(HasNote(r, "traffic_class 104 (auto): DSCP 26 -> priority 3, PFC enabled on priority 3")) << Join(r.notes);
  EXPECT_TRUE(HasNote(r, "service_level 3 (auto): DSCP 26 -> priority 3")) << Join(r.notes);
}

TEST(ResolvePathTest, SeveralDscpsPrefers26To3) {
  // mlx5 lists all 64 DSCPs once trust is dscp; 46 -> 5 is lossless too and
  // listed first, but the conventional pairing wins.
  ResolvedPath r = ResolvePath(HealthyMlx5(), Dcb({{0, 0}, {10, 1}, {46, 5}, {24, 3}, {26, 3}}, 0x28), 0, 0, 0);
  EXPECT_EQ(r.traffic_class, 104);
  EXPECT_EQ(r.service_level, 3);
  EXPECT_TRUE(r.warnings.empty()) << Join(r.warnings);
}

TEST(ResolvePathTest, AnotherLosslessPairingIsTakenWhen26IsNotLossless) {
  // DSCP 26 maps to a lossy priority; DSCP 24 -> 4 is the lossless one.
  ResolvedPath r = ResolvePath(HealthyMlx5(), Dcb({{26, 3}, {24, 4}}, 0x10), 0, 0, 0);
  EXPECT_EQ(r.traffic_class, 96);
  EXPECT_EQ(r.service_level, 4);
  EXPECT_EQ(r.dscp, 24u);
  EXPECT_TRUE(HasNote(r, "traffic_class 96 (auto): DSCP 24 -> priority 4, PFC enabled on priority 4")) << Join(r.notes);
}

TEST(ResolvePathTest, PfcOnTheWrongPriorityLeavesZeroWithAWarning) {
  ResolvedPath r = ResolvePath(HealthyMlx5(), Dcb({{26, 3}}, 0x10), 0, 0, 0);
  EXPECT_EQ(r.gid_index, 3u);
  EXPECT_EQ(r.traffic_class, 0);
  EXPECT_EQ(r.service_level, 0);
  ASSERT_EQ(r.warnings.size(), 1u) << Join(r.warnings);
  EXPECT_EQ(r.warnings[0],
            "traffic_class and service_level stay 0: no DSCP on enp1s0f0 maps to a PFC-enabled priority (PFC mask "
            "0x10). " + kPinBoth);
}

TEST(ResolvePathTest, NoPfcAtAllLeavesZeroWithAWarning) {
  DcbConfig d;
  d.dscp_to_priority = {{26, 3}};
  ResolvedPath r = ResolvePath(HealthyMlx5(), d, 0, 0, 0);
  EXPECT_EQ(r.traffic_class, 0);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("(PFC mask 0x00)"), std::string::npos) << r.warnings[0];
}

TEST(ResolvePathTest, DcbUnreadableLeavesZeroWithAWarningNamingTheReason) {
  ResolvedPath r = ResolvePath(HealthyMlx5(), Unreadable(), 0, 0, 0);
  EXPECT_EQ(r.gid_index, 3u);
  EXPECT_EQ(r.traffic_class, 0);
  EXPECT_EQ(r.service_level, 0);
  ASSERT_EQ(r.warnings.size(), 1u) << Join(r.warnings);
  EXPECT_EQ(r.warnings[0],
            "traffic_class and service_level stay 0: cannot read the DCB configuration of enp1s0f0: Operation not "
            "supported (EOPNOTSUPP). " + kPinBoth);
}

TEST(ResolvePathTest, PinnedValuesAreUsedAsGiven) {
  for (const Result<DcbConfig>& dcb : {Unreadable(), Result<DcbConfig>(Dcb({{46, 5}}, 0x20))}) {
    ResolvedPath r = ResolvePath(HealthyMlx5(), dcb, 1, 104, 3);
    EXPECT_EQ(r.gid_index, 1u);
    EXPECT_EQ(r.traffic_class, 104);
    EXPECT_EQ(r.service_level, 3);
    EXPECT_EQ(r.dscp, 26u);
    EXPECT_TRUE(r.warnings.empty()) << Join(r.warnings);
    EXPECT_TRUE(HasNote(r, "gid_index 1 (pinned): RoCE v2, fe80:0000:0000:0000:0a5c:01ff:fe02:0301 on enp1s0f0"))
        << Join(r.notes);
    EXPECT_TRUE(HasNote(r, "traffic_class 104 (pinned)")) << Join(r.notes);
    EXPECT_TRUE(HasNote(r, "service_level 3 (pinned)")) << Join(r.notes);
  }
}

TEST(ResolvePathTest, PinnedTrafficClassTakesTheServiceLevelOfItsDscp) {
  ResolvedPath r = ResolvePath(HealthyMlx5(), Dcb({{10, 1}, {26, 3}}, 0x08), 0, 104, 0);
  EXPECT_EQ(r.traffic_class, 104);
  EXPECT_EQ(r.service_level, 3);
  EXPECT_TRUE(r.warnings.empty()) << Join(r.warnings);
  EXPECT_TRUE(HasNote(r, "service_level 3 (auto): DSCP 26 -> priority 3, PFC enabled on priority 3")) << Join(r.notes);
}

TEST(ResolvePathTest, PinnedTrafficClassWithDcbUnreadableWarnsOnlyAboutServiceLevel) {
  ResolvedPath r = ResolvePath(HealthyMlx5(), Unreadable(), 0, 104, 0);
  EXPECT_EQ(r.traffic_class, 104);
  EXPECT_EQ(r.service_level, 0);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0],
            "service_level stays 0: cannot read the DCB configuration of enp1s0f0: Operation not supported "
            "(EOPNOTSUPP). RoCE traffic will ride the best-effort queue; pin rdma.service_level (the lossless "
            "priority, e.g. 3)");
}

TEST(ResolvePathTest, PinnedTrafficClassNotInTheMap) {
  ResolvedPath r = ResolvePath(HealthyMlx5(), Dcb({{26, 3}}, 0x08), 0, 184, 0);
  EXPECT_EQ(r.traffic_class, 184);
  EXPECT_EQ(r.service_level, 0);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].rfind("service_level stays 0: DSCP 46 (traffic_class 184) is not in the DSCP map of enp1s0f0. ", 0),
            0u)
      << r.warnings[0];
}

TEST(ResolvePathTest, PinnedServiceLevelTakesADscpOfThatPriority) {
  ResolvedPath r = ResolvePath(HealthyMlx5(), Dcb({{26, 3}, {46, 5}}, 0x28), 0, 0, 5);
  EXPECT_EQ(r.traffic_class, 46 << 2);
  EXPECT_EQ(r.service_level, 5);
  EXPECT_TRUE(r.warnings.empty()) << Join(r.warnings);

  ResolvedPath none = ResolvePath(HealthyMlx5(), Dcb({{26, 3}}, 0x08), 0, 0, 5);
  EXPECT_EQ(none.traffic_class, 0);
  EXPECT_EQ(none.service_level, 5);
  ASSERT_EQ(none.warnings.size(), 1u);
  EXPECT_EQ(none.warnings[0],
            "traffic_class stays 0: no DSCP on enp1s0f0 maps to the pinned service_level 5 with PFC enabled (PFC mask "
            "0x08). RoCE traffic will ride the best-effort queue; pin rdma.traffic_class (DSCP << 2, e.g. 104 for "
            "DSCP 26)");
}

TEST(ResolvePathTest, NoRoceV2GidWarnsAndUsesIndex0) {
  ResolvedPath r = ResolvePath(NoV2(), Dcb({{26, 3}}, 0x08), 0, 0, 0);
  EXPECT_EQ(r.gid_index, 0u);
  ASSERT_EQ(r.warnings.size(), 1u) << Join(r.warnings);
  EXPECT_EQ(r.warnings[0],
            "no RoCEv2 GID found on mlx5_0 port 1 (netdev enp1s0f0); using gid_index 0. Pin rdma.gid_index to a "
            "RoCEv2 entry (see show_gids mlx5_0) or give enp1s0f0 an IPv4 address");
  // The DCB part resolves independently of the GID.
  EXPECT_EQ(r.traffic_class, 104);
}

TEST(ResolvePathTest, LinkLocalRoceV2IsUsedAndNamed) {
  ResolvedPath r = ResolvePath(V2OnlyLinkLocal(), Unreadable(), 0, 0, 0);
  EXPECT_EQ(r.gid_index, 1u);
  EXPECT_TRUE(HasNote(r, "gid_index 1 (auto): RoCE v2, fe80:0000:0000:0000:0a5c:01ff:fe02:0301 on enp1s0f0"))
      << Join(r.notes);
}

TEST(ResolvePathTest, PinnedRoceV1OrMissingGidWarns) {
  ResolvedPath v1 = ResolvePath(HealthyMlx5(), Dcb({{26, 3}}, 0x08), 2, 0, 0);
  EXPECT_EQ(v1.gid_index, 2u);
  ASSERT_EQ(v1.warnings.size(), 1u);
  EXPECT_NE(v1.warnings[0].find("gid_index 2 (pinned) is a RoCE v1 entry"), std::string::npos) << v1.warnings[0];

  ResolvedPath missing = ResolvePath(HealthyMlx5(), Dcb({{26, 3}}, 0x08), 9, 0, 0);
  EXPECT_EQ(missing.gid_index, 9u);
  ASSERT_EQ(missing.warnings.size(), 1u);
  EXPECT_NE(missing.warnings[0].find("gid_index 9 (pinned) is not a valid GID entry of mlx5_0 port 1"),
            std::string::npos)
      << missing.warnings[0];
}

// --------------------------------------------------------------- CheckMtu

TEST(CheckMtuTest, RefusesAnMtuAboveTheActiveOne) {
  PortInfo p = BasePort("rxe0", "eth0");
  p.active_mtu = 1024;
  Status s = CheckMtu(4096, p, "rdma.mtu");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "rdma.mtu 4096 exceeds the active MTU 1024 of rxe0 port 1 (netdev eth0): enable jumbo frames end to end "
            "(ip link set eth0 mtu 9000) so the port negotiates 4096, or set rdma.mtu: 1024");
  Status client = CheckMtu(2048, p, "MEMKV_RDMA_MTU");
  EXPECT_EQ(client.message(),
            "MEMKV_RDMA_MTU 2048 exceeds the active MTU 1024 of rxe0 port 1 (netdev eth0): enable jumbo frames end "
            "to end (ip link set eth0 mtu 9000) so the port negotiates 2048, or set MEMKV_RDMA_MTU=1024");
}

TEST(CheckMtuTest, AcceptsAnMtuUpToTheActiveOne) {
  PortInfo p = BasePort("mlx5_0", "enp1s0f0");
  p.active_mtu = 4096;
  EXPECT_TRUE(CheckMtu(4096, p, "rdma.mtu").ok());
  EXPECT_TRUE(CheckMtu(1024, p, "rdma.mtu").ok());
  p.active_mtu = 1024;
  EXPECT_TRUE(CheckMtu(1024, p, "rdma.mtu").ok());
  EXPECT_TRUE(CheckMtu(256, p, "rdma.mtu").ok());
}

TEST(CheckMtuTest, RejectsValuesThatAreNoPathMtu) {
  PortInfo p = BasePort("mlx5_0", "enp1s0f0");
  for (uint32_t m : {0u, 1500u, 9000u}) {
    Status s = CheckMtu(m, p, "rdma.mtu");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << m;
    EXPECT_EQ(s.message(), "rdma.mtu " + std::to_string(m) + " is not a RoCE path MTU: use 256, 512, 1024, 2048 or 4096");
  }
}

// ----------------------------------------------------------- ParseDcbReply

// Appends netlink attributes the way the kernel's nla_put / nla_nest_start do.
class NlWriter {
 public:
  void Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  void Pad() { buf_.resize(NLA_ALIGN(buf_.size()), 0); }
  void Put(uint16_t type, const void* payload, size_t n) {
    nlattr a{static_cast<uint16_t>(NLA_HDRLEN + n), type};
    Raw(&a, sizeof(a));
    Raw(payload, n);
    Pad();
  }
  void PutU8(uint16_t type, uint8_t v) { Put(type, &v, 1); }
  void PutString(uint16_t type, const std::string& s) { Put(type, s.c_str(), s.size() + 1); }
  size_t BeginNest(uint16_t type) {
    size_t at = buf_.size();
    nlattr a{0, type};
    Raw(&a, sizeof(a));
    return at;
  }
  void EndNest(size_t at) {
    uint16_t len = static_cast<uint16_t>(buf_.size() - at);
    std::memcpy(buf_.data() + at, &len, sizeof(len));
  }
  std::vector<uint8_t>& bytes() { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

struct AppEntry {
  uint8_t selector;
  uint8_t priority;
  uint16_t protocol;
};

struct ReplySpec {
  std::optional<uint8_t> pfc_en = 0x08;
  std::vector<AppEntry> apps = {{IEEE_8021QAZ_APP_SEL_DSCP, 3, 26}};
  uint16_t nest_flags = 0;  // NLA_F_NESTED on newer encoders
};

// RTM_GETDCB / DCB_CMD_IEEE_GET reply for `ifname`, as dcbnl_ieee_fill lays
// it out: IFNAME, then the IEEE nest (ETS, PFC, APP_TABLE), then DCBX.
std::vector<uint8_t> BuildReply(const ReplySpec& spec, const std::string& ifname = "enp1s0f0") {
  NlWriter w;
  nlmsghdr h{};
  h.nlmsg_type = RTM_GETDCB;
  h.nlmsg_seq = 7;
  h.nlmsg_pid = 0;
  w.Raw(&h, sizeof(h));
  dcbmsg dm{};
  dm.dcb_family = AF_UNSPEC;
  dm.cmd = DCB_CMD_IEEE_GET;
  w.Raw(&dm, sizeof(dm));
  w.PutString(DCB_ATTR_IFNAME, ifname);
  size_t ieee = w.BeginNest(static_cast<uint16_t>(DCB_ATTR_IEEE | spec.nest_flags));
  ieee_ets ets{};
  ets.willing = 1;
  ets.ets_cap = 8;
  w.Put(DCB_ATTR_IEEE_ETS, &ets, sizeof(ets));
  if (spec.pfc_en) {
    ieee_pfc pfc{};
    pfc.pfc_cap = 8;
    pfc.pfc_en = *spec.pfc_en;
    pfc.delay = 0xffff;
    w.Put(DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc));
  }
  size_t table = w.BeginNest(static_cast<uint16_t>(DCB_ATTR_IEEE_APP_TABLE | spec.nest_flags));
  for (const AppEntry& e : spec.apps) {
    dcb_app app{e.selector, e.priority, e.protocol};
    w.Put(DCB_ATTR_IEEE_APP, &app, sizeof(app));
  }
  w.EndNest(table);
  w.EndNest(ieee);
  w.PutU8(DCB_ATTR_DCBX, DCB_CAP_DCBX_VER_IEEE | DCB_CAP_DCBX_HOST);
  std::vector<uint8_t> out = std::move(w.bytes());
  uint32_t len = static_cast<uint32_t>(out.size());
  std::memcpy(out.data(), &len, sizeof(len));
  return out;
}

std::vector<uint8_t> BuildError(int err) {
  NlWriter w;
  nlmsghdr h{};
  h.nlmsg_type = NLMSG_ERROR;
  h.nlmsg_seq = 7;
  w.Raw(&h, sizeof(h));
  nlmsgerr e{};
  e.error = -err;
  e.msg.nlmsg_type = RTM_GETDCB;  // the request's header is echoed back
  w.Raw(&e, sizeof(e));
  std::vector<uint8_t> out = std::move(w.bytes());
  uint32_t len = static_cast<uint32_t>(out.size());
  std::memcpy(out.data(), &len, sizeof(len));
  return out;
}

TEST(ParseDcbReplyTest, Mlx5StyleReply) {
  ReplySpec spec;
  spec.apps = {{IEEE_8021QAZ_APP_SEL_DSCP, 0, 0}, {IEEE_8021QAZ_APP_SEL_DSCP, 1, 10},
               {IEEE_8021QAZ_APP_SEL_DSCP, 3, 26}, {IEEE_8021QAZ_APP_SEL_DSCP, 5, 46}};
  spec.pfc_en = 0x08;
  Result<DcbConfig> r = ParseDcbReply(BuildReply(spec));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->has_pfc);
  EXPECT_EQ(r->pfc_enabled, 0x08);
  std::vector<std::pair<uint8_t, uint8_t>> want = {{0, 0}, {10, 1}, {26, 3}, {46, 5}};
  EXPECT_EQ(r->dscp_to_priority, want);

  ResolvedPath p = ResolvePath(HealthyMlx5(), r, 0, 0, 0);
  EXPECT_EQ(p.traffic_class, 104);
  EXPECT_EQ(p.service_level, 3);
}

TEST(ParseDcbReplyTest, NestedFlagIsIgnored) {
  ReplySpec spec;
  spec.nest_flags = NLA_F_NESTED;
  Result<DcbConfig> r = ParseDcbReply(BuildReply(spec));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->dscp_to_priority.size(), 1u);
}

TEST(ParseDcbReplyTest, OnlyDscpSelectorsAreKept) {
  ReplySpec spec;
  spec.apps = {{IEEE_8021QAZ_APP_SEL_ETHERTYPE, 3, 0x8915},  // RoCE v1 ethertype
               {IEEE_8021QAZ_APP_SEL_DGRAM, 3, 4791},        // RoCE v2 UDP port
               {IEEE_8021QAZ_APP_SEL_DSCP, 3, 26}};
  Result<DcbConfig> r = ParseDcbReply(BuildReply(spec));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<std::pair<uint8_t, uint8_t>> want = {{26, 3}};
  EXPECT_EQ(r->dscp_to_priority, want);
}

TEST(ParseDcbReplyTest, NoPfcAttribute) {
  ReplySpec spec;
  spec.pfc_en.reset();
  spec.apps.clear();
  Result<DcbConfig> r = ParseDcbReply(BuildReply(spec));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->has_pfc);
  EXPECT_EQ(r->pfc_enabled, 0);
  EXPECT_TRUE(r->dscp_to_priority.empty());
}

TEST(ParseDcbReplyTest, ErrorReplyNamesTheErrno) {
  // What the kernel answers for a netdev without dcbnl_ops (virtio, rxe's).
  Result<DcbConfig> r = ParseDcbReply(BuildError(EOPNOTSUPP));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "Operation not supported (EOPNOTSUPP)");
  Result<DcbConfig> nodev = ParseDcbReply(BuildError(ENODEV));
  EXPECT_EQ(nodev.status().message(), "No such device (ENODEV)");
  Result<DcbConfig> ack = ParseDcbReply(BuildError(0));
  EXPECT_FALSE(ack.ok());
}

TEST(ParseDcbReplyTest, WrongMessageTypeOrCommand) {
  std::vector<uint8_t> m = BuildReply({});
  nlmsghdr h;
  std::memcpy(&h, m.data(), sizeof(h));
  h.nlmsg_type = RTM_NEWLINK;
  std::memcpy(m.data(), &h, sizeof(h));
  EXPECT_FALSE(ParseDcbReply(m).ok());

  m = BuildReply({});
  m[NLMSG_HDRLEN + offsetof(dcbmsg, cmd)] = DCB_CMD_GSTATE;
  EXPECT_FALSE(ParseDcbReply(m).ok());
}

TEST(ParseDcbReplyTest, EveryTruncationIsAnErrorNotACrash) {
  std::vector<uint8_t> m = BuildReply({});
  for (size_t n = 0; n < m.size(); ++n) {
    Result<DcbConfig> r = ParseDcbReply(std::span<const uint8_t>(m.data(), n));
    EXPECT_FALSE(r.ok()) << n;
  }
  // A header that claims less than it carries cuts the attributes short.
  for (uint32_t len = 0; len < m.size(); ++len) {
    std::vector<uint8_t> c = m;
    std::memcpy(c.data(), &len, sizeof(len));
    (void)ParseDcbReply(c);
  }
}

TEST(ParseDcbReplyTest, BadAttributeLengthsAreErrors) {
  std::vector<uint8_t> m = BuildReply({});
  const size_t ifname_at = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(dcbmsg));
  for (uint16_t bad : {uint16_t{0}, uint16_t{3}, uint16_t{0xffff}}) {
    std::vector<uint8_t> c = m;
    std::memcpy(c.data() + ifname_at, &bad, sizeof(bad));
    Result<DcbConfig> r = ParseDcbReply(c);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kProtocolError) << bad;
  }
}

TEST(ParseDcbReplyTest, GarbageNeverCrashes) {
  std::mt19937 rng(1234);
  std::vector<uint8_t> valid = BuildReply({});
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> m;
    if (i % 2 == 0) {
      m.resize(rng() % 300);
      for (auto& b : m) b = static_cast<uint8_t>(rng());
    } else {
      // Flip a few bytes of a valid reply: deeper paths get exercised.
      m = valid;
      for (int k = 0; k < 3; ++k) m[rng() % m.size()] = static_cast<uint8_t>(rng());
    }
    (void)ParseDcbReply(m);
  }
}

// The recorded-style fixture under testdata/ (hex, one line): must stay
// byte-identical to what BuildReply produces for DSCP 26 -> 3, PFC on 3, so a
// change to either is noticed.
TEST(ParseDcbReplyTest, TestdataFixture) {
  auto path = std::filesystem::path(MEMKV_VERBS_TESTDATA) / "dcb_ieee_dscp26_prio3.hex";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string hex;
  for (char c : ss.str()) {
    if (!std::isspace(static_cast<unsigned char>(c))) hex += c;
  }
  auto bytes = HexDecode(hex);
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(*bytes, BuildReply({}));
  Result<DcbConfig> r = ParseDcbReply(*bytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->pfc_enabled, 0x08);
  std::vector<std::pair<uint8_t, uint8_t>> want = {{26, 3}};
  EXPECT_EQ(r->dscp_to_priority, want);
}

// ----------------------------------------------------------------- ReadDcb

TEST(ReadDcbTest, NetdevWithoutDcbIsUnavailableNamingIt) {
  // lo has no dcbnl_ops; the kernel answers EOPNOTSUPP. (In a sandbox without
  // rtnetlink the reason differs, but the prefix holds.)
  Result<DcbConfig> r = ReadDcb("lo");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message().rfind("cannot read the DCB configuration of lo: ", 0), 0u) << r.status().message();
}

TEST(ReadDcbTest, UnknownNetdev) {
  Result<DcbConfig> r = ReadDcb("memkvnope0");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("cannot read the DCB configuration of memkvnope0: ", 0), 0u)
      << r.status().message();
  EXPECT_FALSE(ReadDcb("").ok());
  EXPECT_FALSE(ReadDcb(std::string(40, 'x')).ok());
}

}  // namespace
}  // namespace memkv::verbs
