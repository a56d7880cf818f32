// The probes: sysfs/procfs parsing shared by both implementations, the
// fixture's counter snapshots, counter deltas and groups, and the system
// probe on this host (which has no RDMA device in CI).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "doctor/counters.h"
#include "doctor/fixture_probe.h"
#include "doctor/sysfs.h"
#include "doctor/system_probe.h"
#include "doctor/test_util.h"
#include "verbs/verbs.h"

namespace memkv::doctor {
namespace {

using testing::ScratchDir;

const std::string kHealthy = std::string(MEMKV_DOCTOR_TESTDATA) + "/healthy-mlx5";

TEST(FsViewTest, ReadsUnderItsRoot) {
  FsView fs(kHealthy + "/");
  Result<std::string> mtu = fs.ReadFile("/sys/class/net/enp1s0f0/mtu");
  ASSERT_TRUE(mtu.ok()) << mtu.status().ToString();
  EXPECT_EQ(*mtu, "9000\n");
  EXPECT_EQ(fs.ReadFile("/sys/class/net/nope/mtu").status().code(), StatusCode::kNotFound);
  Result<std::vector<std::string>> nets = fs.ListDir("/sys/class/net");
  ASSERT_TRUE(nets.ok());
  EXPECT_EQ(*nets, (std::vector<std::string>{"enp1s0f0", "lo"}));
  EXPECT_EQ(fs.ListDir("/sys/class/infiniband/mlx5_9").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FsView("/").Resolve("/proc/meminfo"), "/proc/meminfo");
}

TEST(SysfsTest, PortFromSysfsReadsStateLinkLayerAndGids) {
  Result<verbs::PortInfo> port = PortFromSysfs(FsView(kHealthy), "mlx5_0", 1);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_EQ(port->state, "ACTIVE");
  EXPECT_TRUE(port->active);
  EXPECT_TRUE(port->ethernet);
  EXPECT_EQ(port->netdev, "enp1s0f0");
  ASSERT_EQ(port->gids.size(), 4u);  // the zero slots 4..7 are left out
  EXPECT_EQ(port->gids[0].type, verbs::GidType::kRoceV1);
  EXPECT_EQ(port->gids[3].type, verbs::GidType::kRoceV2);
  EXPECT_EQ(verbs::GidIpv4(port->gids[3].gid), "10.0.0.1");
  EXPECT_EQ(port->active_mtu, 0u);  // only verbs knows it
  EXPECT_EQ(PortFromSysfs(FsView(kHealthy), "mlx5_0", 2).status().code(), StatusCode::kNotFound);
}

TEST(SysfsTest, ParsersOfKernelText) {
  std::optional<verbs::Gid> gid = ParseGid("fe80:0000:0000:0000:0a5c:01ff:fe02:0301\n");
  ASSERT_TRUE(gid.has_value());
  EXPECT_EQ(verbs::GidToString(*gid), "fe80:0000:0000:0000:0a5c:01ff:fe02:0301");
  EXPECT_FALSE(ParseGid("fe80::1").has_value());
  EXPECT_FALSE(ParseGid("fe80:0000:0000:0000:0a5c:01ff:fe02").has_value());

  std::map<std::string, uint64_t> stats =
      ParseEthtoolText("NIC statistics:\n     rx_packets: 12\n     tx_prio3_pause: 7\n  junk\n     bad: x\n");
  EXPECT_EQ(stats, (std::map<std::string, uint64_t>{{"rx_packets", 12}, {"tx_prio3_pause", 7}}));

  EXPECT_EQ(ParseUint(" 18446744073709551615\n"), UINT64_MAX);
  EXPECT_FALSE(ParseUint("18446744073709551616").has_value());
  EXPECT_EQ(ParseUint("0x10"), 16u);

  const std::string limits =
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max locked memory         65536                65536                bytes     \n";
  Result<MemlockLimit> m = ParseMemlock(limits, "CapEff:\t0000000000000000\n");
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->unlimited);
  EXPECT_EQ(m->soft_bytes, 65536u);
  EXPECT_FALSE(m->cap_ipc_lock);
  EXPECT_TRUE(ParseMemlock("Max locked memory unlimited unlimited bytes\n", "CapEff:\t000001ffffffffff\n")->unlimited);
  EXPECT_TRUE(HasCapIpcLock("CapEff:\t000001ffffffffff\n"));
  EXPECT_FALSE(HasCapIpcLock("CapEff:\t0000000000003fff\n"));
  EXPECT_FALSE(ParseMemlock("Max open files 1024 1024 files\n", "").ok());
}

TEST(FixtureProbeTest, CounterSnapshotsAdvanceOnEachReadAndFallBack) {
  ScratchDir scratch;
  const std::string dir = scratch.path();
  const std::string hw = "/sys/class/infiniband/rxe0/ports/1/hw_counters/";
  ScratchDir::Write(dir, hw + "rcvd_seq_err", "1\n");
  ScratchDir::Write(dir, hw + "sent_pkts", "100\n");
  ScratchDir::Write(dir, "/after" + hw + "sent_pkts", "150\n");
  ScratchDir::Write(dir, "/after2" + hw + "rcvd_seq_err", "4\n");
  ScratchDir::Write(dir, "/ethtool/eth0.txt", "NIC statistics:\n     rx_queue_0_drops: 0\n");
  FixtureProbe probe(dir);
  CounterSnapshot s0 = probe.ReadCounters("rxe0", 1, "eth0");
  CounterSnapshot s1 = probe.ReadCounters("rxe0", 1, "eth0");
  CounterSnapshot s2 = probe.ReadCounters("rxe0", 1, "eth0");
  CounterSnapshot s3 = probe.ReadCounters("rxe0", 1, "eth0");
  using M = std::map<std::string, uint64_t>;
  EXPECT_EQ(s0.hw, (M{{"rcvd_seq_err", 1}, {"sent_pkts", 100}}));
  EXPECT_EQ(s1.hw, (M{{"rcvd_seq_err", 1}, {"sent_pkts", 150}}));
  EXPECT_EQ(s2.hw, (M{{"rcvd_seq_err", 4}, {"sent_pkts", 150}}));
  EXPECT_EQ(s3.hw, s2.hw);
  EXPECT_EQ(s1.ethtool, (M{{"rx_queue_0_drops", 0}}));  // no after/ copy: the base one
  EXPECT_EQ(probe.counter_reads(), 4);

  CounterSnapshot missing = probe.ReadCounters("rxe1", 1, "eth1");
  EXPECT_EQ(missing.hw_status.code(), StatusCode::kNotFound);
  EXPECT_FALSE(missing.ethtool_status.ok());
  probe.Wait(250);
  probe.Wait(250);
  EXPECT_EQ(probe.waited_ms(), 500u);
}

TEST(FixtureProbeTest, DcbReplyIsParsedByTheRealParser) {
  FixtureProbe probe(kHealthy);
  Result<verbs::DcbConfig> dcb = probe.Dcb("enp1s0f0");
  ASSERT_TRUE(dcb.ok()) << dcb.status().ToString();
  EXPECT_EQ(dcb->pfc_enabled, 0x08);
  EXPECT_EQ(dcb->dscp_to_priority.size(), 64u);
  Result<verbs::DcbConfig> none = probe.Dcb("eth7");
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(none.status().message().rfind("cannot read the DCB configuration of eth7: ", 0), 0u);
}

TEST(FixtureProbeTest, PortCombinesSysfsAndTheVerbsFile) {
  FixtureProbe probe(kHealthy);
  Result<verbs::PortInfo> port = probe.Port("mlx5_0", 1);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_EQ(port->active_mtu, 4096u);
  EXPECT_EQ(port->max_mr_size, UINT64_MAX);
  Result<verbs::PortInfo> absent = probe.Port("mlx5_3", 1);
  EXPECT_EQ(absent.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(absent.status().message(), "RDMA device mlx5_3 not found; present: mlx5_0");
}

TEST(CountersTest, DiffAndGroups) {
  CounterSnapshot before, after;
  before.hw = {{"out_of_sequence", 4}, {"np_cnp_sent", 10}};
  after.hw = {{"out_of_sequence", 16}, {"np_cnp_sent", 3}, {"new_counter", 5}};
  before.ethtool = {{"tx_prio3_bytes", 1000}};
  after.ethtool = {{"tx_prio3_bytes", 5000}};
  std::vector<CounterDelta> d = Diff(before, after);
  EXPECT_EQ(DeltaOf(d, CounterSource::kHw, "out_of_sequence"), 12u);
  EXPECT_EQ(DeltaOf(d, CounterSource::kHw, "np_cnp_sent"), 3u);  // cleared in between: counts from 0
  EXPECT_EQ(DeltaOf(d, CounterSource::kHw, "new_counter"), 5u);
  EXPECT_EQ(DeltaOf(d, CounterSource::kEthtool, "tx_prio3_bytes"), 4000u);
  EXPECT_EQ(DeltaOf(d, CounterSource::kEthtool, "absent"), 0u);

  EXPECT_EQ(Classify(CounterSource::kEthtool, "rx_prio3_pause"), CounterGroup::kPause);
  EXPECT_EQ(Classify(CounterSource::kEthtool, "rx_prio3_pause_duration"), CounterGroup::kOther);
  EXPECT_EQ(Classify(CounterSource::kEthtool, "tx_pause_ctrl_phy"), CounterGroup::kPause);
  EXPECT_EQ(Classify(CounterSource::kEthtool, "rx_discards_phy"), CounterGroup::kDiscard);
  EXPECT_EQ(Classify(CounterSource::kEthtool, "rx_queue_0_drops"), CounterGroup::kDiscard);
  EXPECT_EQ(Classify(CounterSource::kEthtool, "rx_xdp_drop"), CounterGroup::kOther);
  EXPECT_EQ(Classify(CounterSource::kHw, "np_cnp_sent"), CounterGroup::kCnp);
  EXPECT_EQ(Classify(CounterSource::kHw, "retry_exceeded_err"), CounterGroup::kRetransmit);
  EXPECT_EQ(Classify(CounterSource::kHw, "rcvd_seq_err"), CounterGroup::kRetransmit);
  EXPECT_EQ(Classify(CounterSource::kHw, "out_of_buffer"), CounterGroup::kDiscard);
  EXPECT_EQ(Classify(CounterSource::kHw, "sent_pkts"), CounterGroup::kOther);
}

// ------------------------------------------------------- the live system

TEST(SystemProbeTest, EthtoolOnLoopbackNamesTheNetdevAndTheCall) {
  Result<std::map<std::string, uint64_t>> lo = EthtoolStats("lo");
  // lo has no ethtool statistics (EOPNOTSUPP); where it has some, they parse.
  if (!lo.ok()) {
    EXPECT_EQ(lo.status().message().rfind("ethtool statistics of lo: SIOCETHTOOL(", 0), 0u) << lo.status().message();
  }
  Result<std::map<std::string, uint64_t>> none = EthtoolStats("memkvnope0");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message().rfind("ethtool statistics of memkvnope0: ", 0), 0u) << none.status().message();
  EXPECT_FALSE(EthtoolStats("").ok());
  EXPECT_FALSE(EthtoolStats(std::string(40, 'x')).ok());
}

TEST(SystemProbeTest, ReadsThisHost) {
  SystemProbe probe(verbs::SystemProvider());
  Result<std::vector<std::string>> devices = probe.Devices();
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  Result<std::string> meminfo = probe.ReadFile("/proc/meminfo");
  ASSERT_TRUE(meminfo.ok());
  EXPECT_NE(meminfo->find("MemTotal:"), std::string::npos);

  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_MEMLOCK, &lim), 0);
  Result<MemlockLimit> m = probe.Memlock();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->unlimited, lim.rlim_cur == RLIM_INFINITY);
  if (!m->unlimited) {
    EXPECT_EQ(m->soft_bytes, lim.rlim_cur);
  }

  // A device that is not there: both sources say why, nothing throws.
  CounterSnapshot snap = probe.ReadCounters("memkvnope0", 1, "memkvnope0");
  EXPECT_EQ(snap.hw_status.code(), StatusCode::kNotFound);
  EXPECT_FALSE(snap.ethtool_status.ok());
  Result<verbs::PortInfo> port = probe.Port("memkvnope0", 1);
  EXPECT_EQ(port.status().code(), StatusCode::kNotFound);
  probe.Wait(0);
}

}  // namespace
}  // namespace memkv::doctor
