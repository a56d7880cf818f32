// The path check of memkv doctor against an in-process server on the fake
// verbs: a healthy path, retry exhaustion (an MTU hop drop), an MTU
// mismatch refused at Connect, and a server that is not there.
#include "doctor/path_probe.h"

#include "doctor/path_checks.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/in_process_server.h"
#include "verbs/fake.h"

namespace memkv {
namespace {

config::RdmaConfig ServerRdma() {
  config::RdmaConfig c;
  c.device = "srv0";
  c.traffic_class = 104;
  c.service_level = 3;
  return c;
}

class PathProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fabric_.AddDevice("srv0");
    fabric_.AddDevice("cli0");
  }
  doctor::PathProbeOptions Options(const InProcessServer& server) {
    doctor::PathProbeOptions o;
    o.peer = server.address();
    o.auth_key_hex = std::string(64, 'a');
    o.devices = {"cli0"};
    o.blocks = 4;
    o.timeout_ms = 3000;
    return o;
  }
  verbs::FakeFabric fabric_;
};

TEST_F(PathProbeTest, HealthyPathMovesEveryBlockByRdmaWithTheServersMarking) {
  InProcessServer server(fabric_, ServerRdma());
  doctor::PathProbeResult r = doctor::RunPathProbe(Options(server), fabric_);
  EXPECT_TRUE(r.tcp.ok()) << r.tcp.ToString();
  EXPECT_TRUE(r.rdma.ok()) << r.rdma.ToString();
  EXPECT_TRUE(r.rdma_accepted);
  EXPECT_FALSE(r.retry_exhausted);
  EXPECT_EQ(r.blocks_ok, 4u);
  EXPECT_EQ(r.bytes, 2u * 4 * (1 << 20));
  EXPECT_NE(r.rdma_path.find("traffic_class 104 (DSCP 26), service_level 3, mtu 4096"), std::string::npos)
      << r.rdma_path;
  EXPECT_GT(r.WriteGbps(), 0);
  EXPECT_FALSE(server.store().Exists("memkv-doctor/probe"));
  EXPECT_EQ(server.store().Stats().keys, 0u);  // the probe cleans up after itself
}

TEST_F(PathProbeTest, RetryExhaustionIsNamed) {
  InProcessServer server(fabric_, ServerRdma());
  fabric_.FailCompletions(1, verbs::kWcRetryExcErr);
  doctor::PathProbeResult r = doctor::RunPathProbe(Options(server), fabric_);
  EXPECT_TRUE(r.tcp.ok());
  EXPECT_TRUE(r.retry_exhausted);
  EXPECT_NE(r.rdma.message().find("IBV_WC_RETRY_EXC_ERR (status 12)"), std::string::npos) << r.rdma.ToString();
  EXPECT_EQ(r.completion_errors[verbs::kWcRetryExcErr], 1u);
}

TEST_F(PathProbeTest, MtuMismatchIsRefusedNamingBothValues) {
  InProcessServer server(fabric_, ServerRdma());
  doctor::PathProbeOptions o = Options(server);
  o.mtu = 1024;
  doctor::PathProbeResult r = doctor::RunPathProbe(o, fabric_);
  EXPECT_TRUE(r.tcp.ok());
  EXPECT_FALSE(r.rdma_accepted);
  EXPECT_EQ(r.rdma.code(), StatusCode::kFailedPrecondition) << r.rdma.ToString();
  EXPECT_NE(r.rdma.message().find("1024"), std::string::npos);
  EXPECT_NE(r.rdma.message().find("4096"), std::string::npos);
  EXPECT_EQ(r.blocks_ok, 0u);
}

TEST_F(PathProbeTest, AServerThatIsNotThereFailsTcpToo) {
  doctor::PathProbeOptions o;
  o.peer = "127.0.0.1:1";
  o.auth_key_hex = std::string(64, 'a');
  o.devices = {"cli0"};
  o.blocks = 2;
  o.timeout_ms = 1000;
  doctor::PathProbeResult r = doctor::RunPathProbe(o, fabric_);
  EXPECT_FALSE(r.tcp.ok());
  EXPECT_FALSE(r.rdma.ok());
  EXPECT_FALSE(r.rdma_accepted);
}

doctor::Severity SeverityOf(const doctor::Report& report, const std::string& id) {
  const doctor::Finding* f = report.Find(id);
  EXPECT_NE(f, nullptr) << id;
  return f == nullptr ? doctor::Severity::kOk : f->severity;
}

TEST_F(PathProbeTest, FindingsNameTheMtuHopAndConfirmTheLosslessQueue) {
  InProcessServer server(fabric_, ServerRdma());
  // Across a hop that drops the path MTU's packets.
  fabric_.FailCompletions(1, verbs::kWcRetryExcErr);
  doctor::PathCheckInput bad;
  bad.peer = server.address();
  bad.result = doctor::RunPathProbe(Options(server), fabric_);
  doctor::Report report;
  doctor::AddPathFindings(bad, &report);
  EXPECT_EQ(SeverityOf(report, "path.tcp"), doctor::Severity::kOk);
  EXPECT_EQ(SeverityOf(report, "path.rdma"), doctor::Severity::kError);
  EXPECT_EQ(SeverityOf(report, "path.mtu"), doctor::Severity::kError);
  EXPECT_NE(report.Find("path.mtu")->observed.find("IBV_WC_RETRY_EXC_ERR"), std::string::npos);
  EXPECT_EQ(doctor::ExitCode(report), 2);

  // A healthy path whose NIC counts per priority: SL 3's bytes moved, 0's did not.
  doctor::PathCheckInput good;
  good.peer = server.address();
  good.result = doctor::RunPathProbe(Options(server), fabric_);
  good.service_level = doctor::ServiceLevelOf(good.result.rdma_path);
  EXPECT_EQ(good.service_level, 3);
  good.have_counters = true;
  good.before.ethtool = {{"tx_prio0_bytes", 1000}, {"tx_prio3_bytes", 5000}};
  good.after.ethtool = {{"tx_prio0_bytes", 1200}, {"tx_prio3_bytes", 5000 + good.result.bytes / 2}};
  doctor::Report ok;
  doctor::AddPathFindings(good, &ok);
  EXPECT_EQ(SeverityOf(ok, "path.rdma"), doctor::Severity::kOk);
  EXPECT_EQ(SeverityOf(ok, "path.mtu"), doctor::Severity::kOk);
  EXPECT_EQ(SeverityOf(ok, "path.lossless_queue"), doctor::Severity::kOk);
  EXPECT_EQ(doctor::ExitCode(ok), 0);

  // The same transfer on the best-effort queue.
  good.after.ethtool = {{"tx_prio0_bytes", 1000 + good.result.bytes / 2}, {"tx_prio3_bytes", 5000}};
  doctor::Report lossy;
  doctor::AddPathFindings(good, &lossy);
  EXPECT_EQ(SeverityOf(lossy, "path.lossless_queue"), doctor::Severity::kError);
  EXPECT_FALSE(lossy.Find("path.lossless_queue")->fix.empty());
}

}  // namespace
}  // namespace memkv
