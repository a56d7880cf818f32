// The table and the JSON a user or a tool reads.
#include <gtest/gtest.h>

#include "base/json.h"
#include "doctor/render.h"
#include "doctor/test_util.h"

namespace memkv::doctor {
namespace {

Finding F(std::string id, Layer layer, Severity severity, std::vector<std::string> fix = {}) {
  Finding f;
  f.id = std::move(id);
  f.layer = layer;
  f.severity = severity;
  f.check = "check of " + f.id;
  f.observed = "seen";
  f.expected = "wanted";
  f.message = "why \"" + f.id + "\"";
  f.fix = std::move(fix);
  return f;
}

Report Sample() {
  Report r;
  r.host = "gpu-node-1";
  r.device = "mlx5_0";
  r.port = 1;
  r.netdev = "enp1s0f0";
  r.config = "/etc/memkv/config.yaml";
  r.interval_ms = 1000;
  // Out of layer order on purpose: the table groups them.
  r.Add(F("mtu.active", Layer::kMemkv, Severity::kError, {"ip link set enp1s0f0 mtu 9000", "rdma.mtu: 1024"}));
  r.Add(F("port.state", Layer::kHostNic, Severity::kOk));
  r.Add(F("switch.pfc", Layer::kSwitch, Severity::kInfo, {"nv config apply"}));
  r.Add(F("ecn.roce", Layer::kHostNic, Severity::kWarning, {"echo 1 > /sys/x"}));
  return r;
}

TEST(ExitCodeTest, ErrorsBeatWarningsBeatClean) {
  Report r;
  EXPECT_EQ(ExitCode(r), 0);
  r.Add(F("a", Layer::kHostNic, Severity::kInfo));
  r.Add(F("b", Layer::kHostNic, Severity::kOk));
  EXPECT_EQ(ExitCode(r), 0);
  r.Add(F("c", Layer::kHostNic, Severity::kWarning));
  EXPECT_EQ(ExitCode(r), 1);
  r.Add(F("d", Layer::kMemkv, Severity::kError));
  EXPECT_EQ(ExitCode(r), 2);
  EXPECT_EQ(r.errors(), 1);
  EXPECT_EQ(r.warnings(), 1);
  EXPECT_EQ(r.Find("c")->severity, Severity::kWarning);
  EXPECT_EQ(r.Find("zz"), nullptr);
}

TEST(RenderTableTest, GroupedByLayerInRunbookOrderWithMarkersAndFixes) {
  std::string t = RenderTable(Sample());
  size_t sw = t.find("\nswitch hints"), host = t.find("\nhost NIC\n"), memkv = t.find("\nMemKV\n");
  ASSERT_NE(sw, std::string::npos) << t;
  ASSERT_NE(host, std::string::npos) << t;
  ASSERT_NE(memkv, std::string::npos) << t;
  EXPECT_LT(sw, host);
  EXPECT_LT(host, memkv);
  EXPECT_LT(t.find("ecn.roce"), memkv);
  EXPECT_GT(t.find("mtu.active"), memkv);
  EXPECT_NE(t.find("  ERROR  mtu.active  check of mtu.active: seen\n"), std::string::npos) << t;
  EXPECT_NE(t.find("  WARN   ecn.roce    check of ecn.roce: seen\n"), std::string::npos) << t;
  EXPECT_NE(t.find("  info   switch.pfc  check of switch.pfc: seen\n"), std::string::npos) << t;
  // An ok line is one line: nothing expected, no fix.
  EXPECT_NE(t.find("  ok     port.state  check of port.state: seen\n  WARN   ecn.roce"), std::string::npos) << t;
  EXPECT_NE(t.find("fix: ip link set enp1s0f0 mtu 9000\n"), std::string::npos) << t;
  EXPECT_NE(t.find("     rdma.mtu: 1024\n"), std::string::npos) << t;
  EXPECT_NE(t.find("expected: wanted"), std::string::npos) << t;
  EXPECT_EQ(t.rfind("memkv doctor on gpu-node-1: mlx5_0 port 1 (netdev enp1s0f0)\n", 0), 0u) << t;
  EXPECT_NE(t.find("\n1 error, 1 warning: "), std::string::npos) << t;
}

TEST(RenderJsonTest, OneObjectWithFindingsAndSummary) {
  std::optional<testing::Json> j = testing::ParseJson(RenderJson(Sample()));
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ((*j)["host"].string, "gpu-node-1");
  EXPECT_EQ((*j)["device"].string, "mlx5_0");
  EXPECT_EQ((*j)["port"].number, 1);
  EXPECT_EQ((*j)["netdev"].string, "enp1s0f0");
  EXPECT_EQ((*j)["interval_ms"].number, 1000);
  const testing::Json& findings = (*j)["findings"];
  ASSERT_EQ(findings.array.size(), 4u);
  const testing::Json& first = findings[0];
  EXPECT_EQ(first["id"].string, "mtu.active");
  EXPECT_EQ(first["layer"].string, "memkv");
  EXPECT_EQ(first["severity"].string, "error");
  EXPECT_EQ(first["check"].string, "check of mtu.active");
  EXPECT_EQ(first["observed"].string, "seen");
  EXPECT_EQ(first["expected"].string, "wanted");
  EXPECT_EQ(first["message"].string, "why \"mtu.active\"");
  ASSERT_EQ(first["fix"].array.size(), 2u);
  EXPECT_EQ(first["fix"][1].string, "rdma.mtu: 1024");
  EXPECT_EQ(findings[1]["layer"].string, "host_nic");
  EXPECT_EQ(findings[2]["layer"].string, "switch");
  EXPECT_EQ(findings[2]["severity"].string, "info");
  EXPECT_EQ(findings[3]["severity"].string, "warning");
  const testing::Json& summary = (*j)["summary"];
  EXPECT_EQ(summary["errors"].number, 1);
  EXPECT_EQ(summary["warnings"].number, 1);
  EXPECT_EQ(summary["info"].number, 1);
  EXPECT_EQ(summary["ok"].number, 1);
  EXPECT_EQ(summary["exit_code"].number, 2);
}

TEST(RenderJsonTest, NoDeviceIsNullAndStringsAreEscaped) {
  Report r;
  r.host = "h\"1\\\n\x01";
  r.config = "defaults (no config file)";
  std::string text = RenderJson(r);
  std::optional<testing::Json> j = testing::ParseJson(text);
  ASSERT_TRUE(j.has_value()) << text;
  EXPECT_EQ((*j)["host"].string, "h\"1\\\n\x01");
  EXPECT_TRUE((*j)["device"].is_null());
  EXPECT_TRUE((*j)["port"].is_null());
  EXPECT_TRUE((*j)["netdev"].is_null());
  EXPECT_TRUE((*j)["findings"].array.empty());
  EXPECT_EQ(JsonQuote("a\tb"), "\"a\\tb\"");
}

TEST(JsonReaderTest, RejectsWhatIsNotJson) {
  // The reader is what proves --json output is JSON; it must be able to say no.
  for (const char* bad : {"", "{", "{\"a\":}", "[1,]", "{\"a\":1}x", "\"\x01\"", "{'a':1}"}) {
    EXPECT_FALSE(testing::ParseJson(bad).has_value()) << bad;
  }
  EXPECT_TRUE(testing::ParseJson(" {\"a\": [true, false, null, -1.5e3, \"\\u0041\"]} ").has_value());
}

}  // namespace
}  // namespace memkv::doctor
