// The host checks on recorded hosts (testdata/, README.md there): each
// fixture must produce exactly the expected set of (id, severity) findings,
// with the runbook's fix where something is wrong. Variants of a fixture are
// scratch copies with one file changed.
#include <gtest/gtest.h>
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "base/bytes.h"
#include "doctor/fixture_probe.h"
#include "doctor/host_checks.h"
#include "doctor/test_util.h"

namespace memkv::doctor {
namespace {

using testing::ScratchDir;

const std::string kTestdata = MEMKV_DOCTOR_TESTDATA;

std::string Fixture(const std::string& name) { return kTestdata + "/" + name; }

// id -> severity name: compared as a whole, so an extra or a missing finding
// fails as surely as a wrong severity.
using Expected = std::map<std::string, std::string>;

// A healthy mlx5 host: every check ok; the switch layer is hints (info).
Expected Healthy() {
  Expected e;
  for (const char* id : {"device.present", "port.state", "mtu.netdev", "mtu.active", "mtu.client", "gid.table",
                         "memkv.gid_index", "dcb.read", "dcb.trust", "dcb.dscp_map", "dcb.pfc", "ecn.roce",
                         "memkv.marking", "mem.memlock", "mem.hugepages", "mem.max_mr", "counters.read",
                         "counters.pause", "counters.cnp", "counters.discards", "counters.retransmit"}) {
    e[id] = "ok";
  }
  for (const char* id : {"switch.pfc", "switch.dscp", "switch.ecn", "switch.mtu"}) e[id] = "info";
  return e;
}

// `base` with ids set to a severity, or removed for "".
Expected With(Expected base, const Expected& changes) {
  for (const auto& [id, severity] : changes) {
    if (severity.empty()) {
      base.erase(id);
    } else {
      base[id] = severity;
    }
  }
  return base;
}

std::string Describe(const Report& r) {
  std::string out;
  for (const Finding& f : r.findings) {
    out += "  " + f.id + " " + SeverityName(f.severity) + ": " + f.observed + (f.message.empty() ? "" : " | " + f.message) + "\n";
  }
  return out;
}

void ExpectExactly(const Report& report, const Expected& want) {
  Expected got;
  for (const Finding& f : report.findings) {
    EXPECT_TRUE(got.emplace(f.id, SeverityName(f.severity)).second) << "finding " << f.id << " twice";
  }
  EXPECT_EQ(got, want) << Describe(report);
}

const Finding& Get(const Report& r, const std::string& id) {
  static const Finding kMissing;
  const Finding* f = r.Find(id);
  EXPECT_NE(f, nullptr) << id << " missing:\n" << Describe(r);
  return f != nullptr ? *f : kMissing;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct Outcome {
  Report report;
  std::optional<HostState> state;
  uint64_t waited_ms = 0;
  int counter_reads = 0;
};

// CheckHost on `dir` with its etc/memkv/config.yaml, after `tweak`.
Outcome Check(const std::string& dir, const std::function<void(DoctorOptions&)>& tweak = {}) {
  DoctorOptions o;
  o.config_path = dir + "/etc/memkv/config.yaml";
  Result<config::ServerConfig> config = config::LoadServerConfigFile(o.config_path);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  if (config.ok()) o.config = *config;
  if (tweak) tweak(o);
  FixtureProbe probe(dir);
  Outcome run;
  run.state = CheckHost(probe, o, &run.report);
  run.waited_ms = probe.waited_ms();
  run.counter_reads = probe.counter_reads();
  return run;
}

// ------------------------------------------------------- the five fixtures

TEST(FixtureTest, HealthyMlx5IsAllOk) {
  Outcome r = Check(Fixture("healthy-mlx5"));
  ExpectExactly(r.report, Healthy());
  EXPECT_EQ(ExitCode(r.report), 0);
  EXPECT_EQ(r.report.host, "gpu-node-1");
  EXPECT_EQ(r.report.device, "mlx5_0");
  EXPECT_EQ(r.report.netdev, "enp1s0f0");
  ASSERT_TRUE(r.state.has_value());
  EXPECT_EQ(r.state->path.gid_index, 3u);
  EXPECT_EQ(r.state->path.traffic_class, 104);
  EXPECT_EQ(r.state->path.service_level, 3);
  EXPECT_TRUE(r.state->priority_known && r.state->priority_lossless);
  // Counters read before and after the interval, which was asked for once.
  EXPECT_EQ(r.counter_reads, 2);
  EXPECT_EQ(r.waited_ms, 1000u);
  EXPECT_EQ(Get(r.report, "memkv.gid_index").observed, "gid_index 3 (auto): RoCE v2, 10.0.0.1 on enp1s0f0");
  EXPECT_EQ(Get(r.report, "dcb.pfc").observed, "mask 0x08: priority 3");
  EXPECT_EQ(Get(r.report, "mtu.netdev").observed, "9000 (leaves room for a RoCE path MTU of 4096)");
  // Pauses counted before the check are history, not a finding.
  EXPECT_TRUE(Contains(Get(r.report, "counters.pause").observed, "since last cleared: rx_prio3_pause 1520"));
}

TEST(FixtureTest, Mtu1500NamesBothMtusAndBothFixes) {
  Outcome r = Check(Fixture("mtu-1500"));
  ExpectExactly(r.report, With(Healthy(), {{"mtu.netdev", "error"}, {"mtu.active", "error"}}));
  EXPECT_EQ(ExitCode(r.report), 2);
  const Finding& active = Get(r.report, "mtu.active");
  EXPECT_EQ(active.layer, Layer::kMemkv);
  EXPECT_TRUE(Contains(active.message, "rdma.mtu 4096 exceeds the active MTU 1024 of mlx5_0 port 1 (netdev enp1s0f0)"))
      << active.message;
  EXPECT_EQ(active.fix, (std::vector<std::string>{"ip link set enp1s0f0 mtu 9000", "rdma.mtu: 1024"}));
  const Finding& netdev = Get(r.report, "mtu.netdev");
  EXPECT_EQ(netdev.layer, Layer::kHostNic);
  EXPECT_EQ(netdev.observed, "1500 (leaves room for a RoCE path MTU of 1024)");
  EXPECT_EQ(netdev.fix, (std::vector<std::string>{"ip link set enp1s0f0 mtu 9000"}));
}

TEST(FixtureTest, Mtu1500WithRdmaMtu1024IsFineButDefaultClientsAreNot) {
  Outcome r = Check(Fixture("mtu-1500"), [](DoctorOptions& o) { o.config.rdma.mtu = 1024; });
  ExpectExactly(r.report, With(Healthy(), {{"mtu.client", "warning"}}));
  EXPECT_EQ(Get(r.report, "mtu.client").fix, (std::vector<std::string>{"export MEMKV_RDMA_MTU=1024"}));

  Outcome agreed = Check(Fixture("mtu-1500"), [](DoctorOptions& o) {
    o.config.rdma.mtu = 1024;
    o.client_mtu = "1024";
  });
  ExpectExactly(agreed.report, Healthy());
}

TEST(FixtureTest, ClientMtuAboveTheActiveMtuOrDifferentFromTheServersIsAnError) {
  Outcome above = Check(Fixture("mtu-1500"), [](DoctorOptions& o) {
    o.config.rdma.mtu = 1024;
    o.client_mtu = "2048";
  });
  // The netdev cannot carry 2048 either.
  ExpectExactly(above.report, With(Healthy(), {{"mtu.client", "error"}, {"mtu.netdev", "error"}}));
  EXPECT_TRUE(Contains(Get(above.report, "mtu.client").message, "MEMKV_RDMA_MTU 2048 exceeds the active MTU 1024"));

  Outcome mismatch = Check(Fixture("healthy-mlx5"), [](DoctorOptions& o) { o.client_mtu = "2048"; });
  ExpectExactly(mismatch.report, With(Healthy(), {{"mtu.client", "error"}}));
  EXPECT_TRUE(Contains(Get(mismatch.report, "mtu.client").message, "RDMA MTU mismatch"));
  EXPECT_EQ(Get(mismatch.report, "mtu.client").fix, (std::vector<std::string>{"export MEMKV_RDMA_MTU=4096"}));

  Outcome garbage = Check(Fixture("healthy-mlx5"), [](DoctorOptions& o) { o.client_mtu = "jumbo"; });
  ExpectExactly(garbage.report, With(Healthy(), {{"mtu.client", "error"}}));
}

TEST(FixtureTest, Gid0RoceV1PinnedRoceV1EntryIsAnError) {
  // The fixture's config pins gid_index 2: the IPv4 address's RoCE v1 entry.
  Outcome r = Check(Fixture("gid0-rocev1"));
  ExpectExactly(r.report, With(Healthy(), {{"memkv.gid_index", "error"}}));
  const Finding& g = Get(r.report, "memkv.gid_index");
  EXPECT_EQ(g.observed, "gid_index 2 (pinned): RoCE v1, 10.0.0.1 on enp1s0f0");
  EXPECT_TRUE(Contains(g.message, "gid_index 2 (pinned) is a RoCE v1 entry")) << g.message;
  EXPECT_TRUE(Contains(g.message, "would pick 3")) << g.message;
  EXPECT_EQ(g.fix, (std::vector<std::string>{"rdma.gid_index: 3"}));
  EXPECT_EQ(Get(r.report, "gid.table").observed,
            "0 RoCE v1 fe80:0000:0000:0000:0a5c:01ff:fe02:0301; 1 RoCE v2 fe80:0000:0000:0000:0a5c:01ff:fe02:0301; "
            "2 RoCE v1 10.0.0.1; 3 RoCE v2 10.0.0.1");
}

TEST(FixtureTest, Gid0RoceV1AutoDetectPicksIndex3) {
  Outcome r = Check(Fixture("gid0-rocev1"), [](DoctorOptions& o) { o.config.rdma.gid_index = 0; });
  ExpectExactly(r.report, Healthy());
  ASSERT_TRUE(r.state.has_value());
  EXPECT_EQ(r.state->path.gid_index, 3u);
  EXPECT_EQ(Get(r.report, "memkv.gid_index").observed, "gid_index 3 (auto): RoCE v2, 10.0.0.1 on enp1s0f0");
}

TEST(FixtureTest, NoDcbWarnsThatTrafficClassStays0AndSaysWhatToPin) {
  Outcome r = Check(Fixture("no-dcb"));
  ExpectExactly(r.report, With(Healthy(), {{"dcb.read", "warning"},
                                           {"dcb.trust", ""},
                                           {"dcb.dscp_map", ""},
                                           {"dcb.pfc", ""},
                                           {"memkv.marking", "warning"}}));
  EXPECT_EQ(ExitCode(r.report), 1);
  EXPECT_EQ(Get(r.report, "dcb.read").observed,
            "cannot read the DCB configuration of enp1s0f0: Operation not supported (EOPNOTSUPP)");
  const Finding& m = Get(r.report, "memkv.marking");
  EXPECT_TRUE(Contains(m.message, "traffic_class and service_level stay 0: cannot read the DCB configuration of "
                                  "enp1s0f0: Operation not supported (EOPNOTSUPP)"))
      << m.message;
  EXPECT_EQ(m.fix, (std::vector<std::string>{"rdma.traffic_class: 104", "rdma.service_level: 3"}));
  // ECN is still checked, on the runbook's priority, and says so.
  EXPECT_TRUE(Contains(Get(r.report, "ecn.roce").observed, "priority 3 assumed")) << Get(r.report, "ecn.roce").observed;
}

TEST(FixtureTest, NoDcbWithPinnedMarkingIsCleanButUnverified) {
  Outcome r = Check(Fixture("no-dcb"), [](DoctorOptions& o) {
    o.config.rdma.traffic_class = 104;
    o.config.rdma.service_level = 3;
  });
  ExpectExactly(r.report, With(Healthy(), {{"dcb.read", "info"}, {"dcb.trust", ""}, {"dcb.dscp_map", ""}, {"dcb.pfc", ""}}));
  EXPECT_EQ(ExitCode(r.report), 0);
}

TEST(FixtureTest, PfcOnTheWrongPriorityIsAnErrorNamingTheLossyPriority) {
  Outcome r = Check(Fixture("pfc-wrong-priority"));
  ExpectExactly(r.report, With(Healthy(), {{"dcb.pfc", "error"},
                                           {"ecn.roce", "warning"},
                                           {"memkv.marking", "warning"},
                                           {"counters.discards", "warning"},
                                           {"counters.retransmit", "warning"}}));
  EXPECT_EQ(ExitCode(r.report), 2);
  const Finding& p = Get(r.report, "dcb.pfc");
  EXPECT_EQ(p.observed, "mask 0x10: priority 4");
  EXPECT_TRUE(Contains(p.message, "DSCP 26 lands on priority 3, which has no PFC")) << p.message;
  EXPECT_TRUE(Contains(p.message, "lossy priority")) << p.message;
  EXPECT_EQ(p.fix, (std::vector<std::string>{"mlnx_qos -i enp1s0f0 --pfc 0,0,0,1,0,0,0,0"}));
  // MemKV leaves the marking at 0; pinning would not help, PFC would.
  EXPECT_EQ(Get(r.report, "memkv.marking").fix, (std::vector<std::string>{"mlnx_qos -i enp1s0f0 --pfc 0,0,0,1,0,0,0,0"}));
  EXPECT_EQ(Get(r.report, "ecn.roce").fix,
            (std::vector<std::string>{"echo 1 > /sys/class/net/enp1s0f0/ecn/roce_np/enable/3",
                                      "echo 1 > /sys/class/net/enp1s0f0/ecn/roce_rp/enable/3"}));
  // Only what moved during the interval counts.
  EXPECT_EQ(Get(r.report, "counters.retransmit").observed, "local_ack_timeout_err +2, out_of_sequence +12 in 1000 ms");
  EXPECT_EQ(Get(r.report, "counters.discards").observed, "rx_discards_phy +57, rx_prio3_discards +57 in 1000 ms");
}

// ----------------------------------------------------- more of the checks

TEST(CheckTest, PinnedServiceLevelOffTheLosslessPriorityIsAnError) {
  Outcome both = Check(Fixture("healthy-mlx5"), [](DoctorOptions& o) {
    o.config.rdma.traffic_class = 104;
    o.config.rdma.service_level = 4;
  });
  ExpectExactly(both.report, With(Healthy(), {{"memkv.marking", "error"}}));
  const Finding& m = Get(both.report, "memkv.marking");
  EXPECT_TRUE(Contains(m.message, "service_level 4 (pinned) does not match priority 3, where DSCP 26 lands")) << m.message;
  EXPECT_EQ(m.fix, (std::vector<std::string>{"rdma.service_level: 3"}));

  // With traffic_class auto, no DSCP lands on priority 5 at all.
  Outcome sl_only = Check(Fixture("healthy-mlx5"), [](DoctorOptions& o) { o.config.rdma.service_level = 5; });
  ExpectExactly(sl_only.report, With(Healthy(), {{"memkv.marking", "error"}}));
  EXPECT_EQ(Get(sl_only.report, "memkv.marking").fix, (std::vector<std::string>{"rdma.service_level: 3"}));
}

TEST(CheckTest, PinnedTrafficClassOutsideTheDscpMapIsAnError) {
  Outcome r = Check(Fixture("pfc-wrong-priority"), [](DoctorOptions& o) {
    o.config.rdma.traffic_class = 18 << 2;  // DSCP 18: not in the fixture's sparse map
  });
  Expected want = With(Healthy(), {{"dcb.dscp_map", "error"},
                                   {"dcb.pfc", "info"},
                                   {"ecn.roce", "warning"},
                                   {"memkv.marking", "warning"},
                                   {"counters.discards", "warning"},
                                   {"counters.retransmit", "warning"}});
  ExpectExactly(r.report, want);
  EXPECT_EQ(Get(r.report, "dcb.dscp_map").fix, (std::vector<std::string>{"mlnx_qos -i enp1s0f0 --dscp2prio set,18,3"}));
}

// The byte layout of a dcbnl reply, as src/verbs/detect_test.cc builds it
// (dcbnl_ieee_fill: IFNAME, IEEE{ETS, PFC, APP_TABLE}, DCBX).
class NlWriter {
 public:
  void Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  void Put(uint16_t type, const void* payload, size_t n) {
    nlattr a{static_cast<uint16_t>(NLA_HDRLEN + n), type};
    Raw(&a, sizeof(a));
    Raw(payload, n);
    buf_.resize(NLA_ALIGN(buf_.size()), 0);
  }
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
  std::vector<uint8_t> Finish() {
    uint32_t len = static_cast<uint32_t>(buf_.size());
    std::memcpy(buf_.data(), &len, sizeof(len));
    return std::move(buf_);
  }

 private:
  std::vector<uint8_t> buf_;
};

std::vector<uint8_t> BuildReply(const std::vector<std::pair<uint8_t, uint8_t>>& dscp_map, uint8_t pfc_en) {
  NlWriter w;
  nlmsghdr h{};
  h.nlmsg_type = RTM_GETDCB;
  h.nlmsg_seq = 7;
  w.Raw(&h, sizeof(h));
  dcbmsg dm{};
  dm.dcb_family = AF_UNSPEC;
  dm.cmd = DCB_CMD_IEEE_GET;
  w.Raw(&dm, sizeof(dm));
  const std::string ifname = "enp1s0f0";
  w.Put(DCB_ATTR_IFNAME, ifname.c_str(), ifname.size() + 1);
  size_t ieee = w.BeginNest(DCB_ATTR_IEEE);
  ieee_ets ets{};
  ets.willing = 1;
  ets.ets_cap = 8;
  w.Put(DCB_ATTR_IEEE_ETS, &ets, sizeof(ets));
  ieee_pfc pfc{};
  pfc.pfc_cap = 8;
  pfc.pfc_en = pfc_en;
  pfc.delay = 0xffff;
  w.Put(DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc));
  size_t table = w.BeginNest(DCB_ATTR_IEEE_APP_TABLE);
  for (const auto& [dscp, prio] : dscp_map) {
    dcb_app app{IEEE_8021QAZ_APP_SEL_DSCP, prio, dscp};
    w.Put(DCB_ATTR_IEEE_APP, &app, sizeof(app));
  }
  w.EndNest(table);
  w.EndNest(ieee);
  uint8_t dcbx = DCB_CAP_DCBX_VER_IEEE | DCB_CAP_DCBX_HOST;
  w.Put(DCB_ATTR_DCBX, &dcbx, 1);
  return w.Finish();
}

std::vector<uint8_t> BuildError(int err) {
  NlWriter w;
  nlmsghdr h{};
  h.nlmsg_type = NLMSG_ERROR;
  h.nlmsg_seq = 7;
  w.Raw(&h, sizeof(h));
  nlmsgerr e{};
  e.error = -err;
  e.msg.nlmsg_type = RTM_GETDCB;
  w.Raw(&e, sizeof(e));
  return w.Finish();
}

std::vector<std::pair<uint8_t, uint8_t>> Mlx5DscpMap() {
  std::vector<std::pair<uint8_t, uint8_t>> map;
  for (uint8_t d = 0; d < 64; ++d) map.emplace_back(d, static_cast<uint8_t>(d >> 3));
  return map;
}

std::vector<uint8_t> ReadHex(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string hex;
  for (char c : ss.str()) {
    if (!std::isspace(static_cast<unsigned char>(c))) hex += c;
  }
  std::optional<std::vector<uint8_t>> bytes = HexDecode(hex);
  EXPECT_TRUE(bytes.has_value()) << path;
  return bytes.value_or(std::vector<uint8_t>{});
}

TEST(FixtureFilesTest, RecordedDcbRepliesHaveTheKernelsLayout) {
  const auto healthy = BuildReply(Mlx5DscpMap(), 0x08);
  for (const char* name : {"healthy-mlx5", "mtu-1500", "gid0-rocev1"}) {
    EXPECT_EQ(ReadHex(Fixture(name) + "/dcb/enp1s0f0.hex"), healthy) << name;
  }
  EXPECT_EQ(ReadHex(Fixture("pfc-wrong-priority") + "/dcb/enp1s0f0.hex"),
            BuildReply({{0, 0}, {10, 1}, {26, 3}, {46, 5}}, 0x10));
  EXPECT_EQ(ReadHex(Fixture("no-dcb") + "/dcb/enp1s0f0.hex"), BuildError(EOPNOTSUPP));
}

TEST(CheckTest, AutoDetectOffTheRunbooksPairingIsAWarning) {
  // A full mlx5 map with PFC on 4: auto-detect finds DSCP 32 -> 4 lossless
  // and marks that, while DSCP 26 lands on the lossy priority 3.
  ScratchDir scratch;
  std::string dir = scratch.CopyFixture(Fixture("healthy-mlx5"), "pfc4");
  std::vector<uint8_t> reply = BuildReply(Mlx5DscpMap(), 0x10);
  ScratchDir::Write(dir, "/dcb/enp1s0f0.hex", HexEncode(reply.data(), reply.size()));
  Outcome r = Check(dir);
  ExpectExactly(r.report, With(Healthy(), {{"dcb.pfc", "warning"}, {"ecn.roce", "warning"}}));
  ASSERT_TRUE(r.state.has_value());
  EXPECT_EQ(r.state->path.traffic_class, 128);
  EXPECT_EQ(r.state->path.service_level, 4);
  EXPECT_EQ(Get(r.report, "dcb.pfc").fix, (std::vector<std::string>{"mlnx_qos -i enp1s0f0 --pfc 0,0,0,1,0,0,0,0"}));
  // The switch hints follow what MemKV will actually send.
  EXPECT_EQ(Get(r.report, "switch.dscp").expected, "trust dscp; DSCP 32 -> switch-priority 4");
}

TEST(CheckTest, NoTrustDscpIsAnError) {
  ScratchDir scratch;
  std::string dir = scratch.CopyFixture(Fixture("healthy-mlx5"), "pcp");
  ScratchDir::Write(dir, "/sys/class/net/enp1s0f0/qos/trust", "pcp\n");
  Outcome r = Check(dir);
  ExpectExactly(r.report, With(Healthy(), {{"dcb.trust", "error"}}));
  EXPECT_EQ(Get(r.report, "dcb.trust").fix,
            (std::vector<std::string>{"mlnx_qos -i enp1s0f0 --trust dscp", "mlnx_qos -i enp1s0f0 --dscp2prio set,26,3"}));
}

TEST(CheckTest, PortDownIsAnError) {
  ScratchDir scratch;
  std::string dir = scratch.CopyFixture(Fixture("healthy-mlx5"), "down");
  ScratchDir::Write(dir, "/sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  Outcome r = Check(dir);
  ExpectExactly(r.report, With(Healthy(), {{"port.state", "error"}}));
  EXPECT_EQ(Get(r.report, "port.state").observed, "DOWN");
}

TEST(CheckTest, NoIpv4RoceV2GidWarns) {
  ScratchDir scratch;
  std::string dir = scratch.CopyFixture(Fixture("healthy-mlx5"), "noip");
  for (const char* i : {"2", "3"}) {
    ScratchDir::Write(dir, std::string("/sys/class/infiniband/mlx5_0/ports/1/gids/") + i,
                      "0000:0000:0000:0000:0000:0000:0000:0000\n");
  }
  Outcome r = Check(dir);
  ExpectExactly(r.report, With(Healthy(), {{"gid.table", "warning"}}));
  // Auto-detect then takes the link-local RoCE v2 entry.
  EXPECT_EQ(Get(r.report, "memkv.gid_index").observed,
            "gid_index 1 (auto): RoCE v2, fe80:0000:0000:0000:0a5c:01ff:fe02:0301 on enp1s0f0");
  EXPECT_EQ(Get(r.report, "gid.table").fix,
            (std::vector<std::string>{"ip addr add <address>/<prefix> dev enp1s0f0", "show_gids mlx5_0"}));
}

TEST(CheckTest, MemoryLimitsAgainstThePool) {
  ScratchDir scratch;
  std::string dir = scratch.CopyFixture(Fixture("healthy-mlx5"), "mem");
  std::ifstream in(dir + "/proc/self/limits");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string limits = ss.str();
  size_t at = limits.find("Max locked memory");
  limits.replace(at, limits.find('\n', at) - at, "Max locked memory         8388608              8388608              bytes     ");
  ScratchDir::Write(dir, "/proc/self/limits", limits);
  ScratchDir::Write(dir, "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "512\n");
  ScratchDir::Write(dir, "/verbs/mlx5_0/1", "active_mtu 4096\nmax_mtu 4096\nmax_mr_size 17179869184\n");
  Outcome r = Check(dir);
  ExpectExactly(r.report,
                With(Healthy(), {{"mem.memlock", "error"}, {"mem.hugepages", "error"}, {"mem.max_mr", "error"}}));
  EXPECT_EQ(Get(r.report, "mem.memlock").observed, "8 MiB");
  EXPECT_EQ(Get(r.report, "mem.memlock").fix,
            (std::vector<std::string>{"ulimit -l unlimited", "LimitMEMLOCK=infinity  # in the memkv systemd unit"}));
  EXPECT_EQ(Get(r.report, "mem.max_mr").fix, (std::vector<std::string>{"memory.max_size: 16 GiB"}));
  EXPECT_EQ(Get(r.report, "mem.hugepages").observed, "512 free 2 MiB hugepages (1 GiB)");
  EXPECT_EQ(Get(r.report, "mem.hugepages").fix,
            (std::vector<std::string>{"sysctl -w vm.nr_hugepages=32768  # plus what other programs hold",
                                      "echo 'vm.nr_hugepages = 32768' > /etc/sysctl.d/90-memkv.conf",
                                      "or lower memory.max_size"}));

  // CAP_IPC_LOCK lifts the limit; reserved hugepages cover the pool.
  ScratchDir::Write(dir, "/proc/self/status", "Name:\tmemkv\nCapEff:\t0000000000004000\n");
  ScratchDir::Write(dir, "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "8192\n");
  Outcome fixed = Check(dir, [](DoctorOptions& o) { o.config.memory.max_size_bytes = 16ull << 30; });
  ExpectExactly(fixed.report, Healthy());
}

// ------------------------------------------------------ device selection

TEST(DeviceTest, NoRdmaDeviceSaysSoAndHowToCheck) {
  ScratchDir scratch;
  ScratchDir::Write(scratch.path(), "/proc/sys/kernel/hostname", "laptop\n");
  ScratchDir::Write(scratch.path(), "/sys/class/net/wlan0/operstate", "up\n");
  FixtureProbe probe(scratch.path());
  DoctorOptions o;
  Report report;
  EXPECT_FALSE(CheckHost(probe, o, &report).has_value());
  ExpectExactly(report, {{"device.present", "warning"}});
  EXPECT_EQ(ExitCode(report), 1);
  EXPECT_EQ(report.device, "");
  const Finding& f = Get(report, "device.present");
  EXPECT_EQ(f.fix, (std::vector<std::string>{"rdma link", "ibv_devices", "modprobe rdma_rxe",
                                             "rdma link add rxe0 type rxe netdev wlan0", "export MEMKV_TRANSPORT=tcp"}));
  EXPECT_EQ(probe.counter_reads(), 0);
  EXPECT_EQ(probe.waited_ms(), 0u);
}

TEST(DeviceTest, ConfiguredDeviceAbsentIsAWarningNamingThePresentOnes) {
  Outcome r = Check(Fixture("healthy-mlx5"), [](DoctorOptions& o) { o.config.rdma.device = "mlx5_1"; });
  EXPECT_FALSE(r.state.has_value());
  ExpectExactly(r.report, {{"device.present", "warning"}});
  EXPECT_EQ(Get(r.report, "device.present").observed, "mlx5_1 is not on this host (RDMA devices: mlx5_0)");
  EXPECT_EQ(Get(r.report, "device.present").fix, (std::vector<std::string>{"rdma.device: mlx5_0"}));
}

TEST(DeviceTest, FlagBeatsConfigAndNoConfigTakesTheFirstDevice) {
  Outcome flag = Check(Fixture("healthy-mlx5"), [](DoctorOptions& o) {
    o.config.rdma.device = "mlx5_9";
    o.device = "mlx5_0";
  });
  ExpectExactly(flag.report, Healthy());
  EXPECT_EQ(Get(flag.report, "device.present").observed, "mlx5_0 (--device; present: mlx5_0)");

  Outcome none = Check(Fixture("healthy-mlx5"), [](DoctorOptions& o) {
    o.config = config::EmbeddedDefaultConfig("/var/lib/memkv");
    o.config.memory.max_size_bytes = 1ull << 30;
    o.config_path.clear();
  });
  ExpectExactly(none.report, Healthy());
  EXPECT_EQ(none.report.config, "defaults (no config file)");
  EXPECT_EQ(Get(none.report, "device.present").observed, "mlx5_0 (the first RDMA device; present: mlx5_0)");
}

TEST(DeviceTest, NetdevFlagOverridesThePortsNetdev) {
  Outcome r = Check(Fixture("healthy-mlx5"), [](DoctorOptions& o) { o.netdev = "enp9s0"; });
  EXPECT_EQ(r.report.netdev, "enp9s0");
  // Nothing recorded for enp9s0: its MTU, DCB, ECN and ethtool are unknown.
  EXPECT_EQ(Get(r.report, "mtu.netdev").severity, Severity::kInfo);
  EXPECT_EQ(Get(r.report, "dcb.read").severity, Severity::kWarning);
  EXPECT_EQ(Get(r.report, "ecn.roce").severity, Severity::kInfo);
  EXPECT_EQ(Get(r.report, "counters.read").severity, Severity::kInfo);
}

TEST(MtuMathTest, NetdevMtuToActiveMtu) {
  EXPECT_EQ(ActiveMtuForNetdevMtu(1500), 1024u);
  EXPECT_EQ(ActiveMtuForNetdevMtu(9000), 4096u);
  EXPECT_EQ(ActiveMtuForNetdevMtu(4096 + kRoceHeaderBytes), 4096u);
  EXPECT_EQ(ActiveMtuForNetdevMtu(4096 + kRoceHeaderBytes - 1), 2048u);
  EXPECT_EQ(ActiveMtuForNetdevMtu(2048 + kRoceHeaderBytes), 2048u);
  EXPECT_EQ(ActiveMtuForNetdevMtu(256 + kRoceHeaderBytes), 256u);
  EXPECT_EQ(ActiveMtuForNetdevMtu(255 + kRoceHeaderBytes), 0u);
  EXPECT_EQ(ActiveMtuForNetdevMtu(0), 0u);
}

}  // namespace
}  // namespace memkv::doctor
