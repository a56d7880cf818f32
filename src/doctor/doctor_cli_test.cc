// The real `memkv doctor` binary as an operator runs it: on this host (CI
// machines have no RDMA device) and, through the hidden --fixture flag and
// MEMKV_DOCTOR_ROOT, on recorded hosts, checking the text, the JSON and the
// exit code.
#include <gtest/gtest.h>

#include <set>

#include "doctor/test_util.h"

namespace memkv::doctor {
namespace {

using testing::Json;
using testing::ProcessResult;
using testing::RunProcess;

const std::string kTestdata = MEMKV_DOCTOR_TESTDATA;

ProcessResult Doctor(std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), {MEMKV_BINARY, "doctor"});
  return RunProcess(args, env);
}

Json ParseOrFail(const std::string& text) {
  std::optional<Json> j = testing::ParseJson(text);
  EXPECT_TRUE(j.has_value()) << "not JSON:\n" << text;
  return j.value_or(Json{});
}

const Json* FindingById(const Json& report, const std::string& id) {
  for (const Json& f : report["findings"].array) {
    if (f["id"].string == id) return &f;
  }
  return nullptr;
}

TEST(DoctorCliTest, ThisHostAsJson) {
  ProcessResult r = Doctor({"--json", "--interval-ms", "0"});
  Json j = ParseOrFail(r.out);
  ASSERT_TRUE(j.has("findings")) << r.out;
  const Json& summary = j["summary"];
  const int errors = static_cast<int>(summary["errors"].number);
  const int warnings = static_cast<int>(summary["warnings"].number);
  EXPECT_EQ(r.exit_code, errors > 0 ? 2 : warnings > 0 ? 1 : 0) << r.out << r.err;
  EXPECT_EQ(summary["exit_code"].number, r.exit_code);
  EXPECT_FALSE(j["host"].string.empty());
  if (!j["device"].is_null()) {
    GTEST_SKIP() << "this host has an RDMA device (" << j["device"].string << "): the no-device report does not apply";
  }
  // No RDMA device: exactly one warning that says so, how to check, and how
  // to run on TCP.
  EXPECT_EQ(r.exit_code, 1) << r.out;
  ASSERT_EQ(j["findings"].array.size(), 1u) << r.out;
  const Json& f = j["findings"][0];
  EXPECT_EQ(f["id"].string, "device.present");
  EXPECT_EQ(f["layer"].string, "host_nic");
  EXPECT_EQ(f["severity"].string, "warning");
  EXPECT_EQ(f["observed"].string, "none (ibv_get_device_list found none)");
  std::vector<std::string> fix;
  for (const Json& line : f["fix"].array) fix.push_back(line.string);
  ASSERT_EQ(fix.size(), 5u) << r.out;
  EXPECT_EQ(fix[0], "rdma link");
  EXPECT_EQ(fix[1], "ibv_devices");
  EXPECT_EQ(fix[2], "modprobe rdma_rxe");
  EXPECT_EQ(fix[3].rfind("rdma link add rxe0 type rxe netdev ", 0), 0u) << fix[3];
  EXPECT_EQ(fix[4], "export MEMKV_TRANSPORT=tcp");
  EXPECT_TRUE(j["port"].is_null());
  EXPECT_TRUE(j["netdev"].is_null());
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(DoctorCliTest, ThisHostAsATable) {
  ProcessResult r = Doctor({"--interval-ms", "0"});
  if (r.out.find("RDMA devices on this host: none") == std::string::npos) GTEST_SKIP() << "this host has RDMA";
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("\nhost NIC\n  WARN   device.present"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fix: rdma link\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("modprobe rdma_rxe\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("export MEMKV_TRANSPORT=tcp\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n0 errors, 1 warning"), std::string::npos) << r.out;
}

TEST(DoctorCliTest, FixtureTableGroupsLayersAndNamesTheFix) {
  ProcessResult r = Doctor({"--fixture", kTestdata + "/mtu-1500"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  const std::string& t = r.out;
  EXPECT_EQ(t.rfind("memkv doctor on gpu-node-2: mlx5_0 port 1 (netdev enp1s0f0)\n", 0), 0u) << t;
  // The fixture's own config is the default under --fixture.
  EXPECT_NE(t.find("settings: " + kTestdata + "/mtu-1500/etc/memkv/config.yaml"), std::string::npos) << t;
  size_t sw = t.find("\nswitch hints"), host = t.find("\nhost NIC\n"), memkv = t.find("\nMemKV\n");
  ASSERT_TRUE(sw != std::string::npos && host != std::string::npos && memkv != std::string::npos) << t;
  EXPECT_LT(sw, host);
  EXPECT_LT(host, memkv);
  size_t netdev = t.find("  ERROR  mtu.netdev "), active = t.find("  ERROR  mtu.active ");
  EXPECT_TRUE(netdev > host && netdev < memkv) << t;
  EXPECT_GT(active, memkv) << t;
  EXPECT_NE(t.find("rdma.mtu 4096 exceeds the active MTU 1024"), std::string::npos) << t;
  EXPECT_NE(t.find("fix: ip link set enp1s0f0 mtu 9000\n"), std::string::npos) << t;
  EXPECT_NE(t.find("     rdma.mtu: 1024\n"), std::string::npos) << t;
  EXPECT_NE(t.find("  ok     port.state "), std::string::npos) << t;
  EXPECT_NE(t.find("\n2 errors, 0 warnings"), std::string::npos) << t;
}

TEST(DoctorCliTest, FixtureJsonHasEveryFindingWithItsSeverity) {
  ProcessResult r = Doctor({"--fixture", kTestdata + "/pfc-wrong-priority", "--json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  Json j = ParseOrFail(r.out);
  EXPECT_EQ(j["device"].string, "mlx5_0");
  EXPECT_EQ(j["port"].number, 1);
  EXPECT_EQ(j["netdev"].string, "enp1s0f0");
  const Json* pfc = FindingById(j, "dcb.pfc");
  ASSERT_NE(pfc, nullptr) << r.out;
  EXPECT_EQ((*pfc)["severity"].string, "error");
  EXPECT_EQ((*pfc)["layer"].string, "host_nic");
  ASSERT_EQ((*pfc)["fix"].array.size(), 1u);
  EXPECT_EQ((*pfc)["fix"][0].string, "mlnx_qos -i enp1s0f0 --pfc 0,0,0,1,0,0,0,0");
  std::set<std::string> severities;
  for (const Json& f : j["findings"].array) severities.insert(f["severity"].string);
  EXPECT_EQ(severities, (std::set<std::string>{"ok", "info", "warning", "error"}));
  EXPECT_EQ(j["summary"]["errors"].number, 1);
  EXPECT_EQ(j["summary"]["warnings"].number, 4);
}

TEST(DoctorCliTest, RootFromTheEnvironmentAndTheClientMtu) {
  ProcessResult clean = Doctor({}, {{"MEMKV_DOCTOR_ROOT", kTestdata + "/healthy-mlx5"}});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_NE(clean.out.find("\n0 errors, 0 warnings"), std::string::npos) << clean.out;

  ProcessResult client = Doctor({"--json"}, {{"MEMKV_DOCTOR_ROOT", kTestdata + "/healthy-mlx5"},
                                             {"MEMKV_RDMA_MTU", "2048"}});
  EXPECT_EQ(client.exit_code, 2);
  Json j = ParseOrFail(client.out);
  const Json* mtu = FindingById(j, "mtu.client");
  ASSERT_NE(mtu, nullptr);
  EXPECT_EQ((*mtu)["severity"].string, "error");
  EXPECT_NE((*mtu)["message"].string.find("RDMA MTU mismatch"), std::string::npos);
}

TEST(DoctorCliTest, FlagsPickTheDeviceAndTheConfig) {
  // --device names a device the fixture lacks: a warning naming what is there.
  ProcessResult absent = Doctor({"--fixture", kTestdata + "/healthy-mlx5", "--device", "rxe0", "--json"});
  EXPECT_EQ(absent.exit_code, 1);
  Json j = ParseOrFail(absent.out);
  ASSERT_EQ(j["findings"].array.size(), 1u);
  EXPECT_EQ(j["findings"][0]["observed"].string, "rxe0 is not on this host (RDMA devices: mlx5_0)");

  // --config beats the fixture's own: gid0-rocev1's config pins a RoCE v1
  // entry, healthy-mlx5's does not.
  ProcessResult pinned = Doctor({"--fixture", kTestdata + "/healthy-mlx5", "--config",
                                 kTestdata + "/gid0-rocev1/etc/memkv/config.yaml"});
  EXPECT_EQ(pinned.exit_code, 2);
  EXPECT_NE(pinned.out.find("  ERROR  memkv.gid_index "), std::string::npos) << pinned.out;
}

TEST(DoctorCliTest, UsageAndConfigErrors) {
  ProcessResult help = Doctor({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.rfind("Usage: memkv doctor", 0), 0u) << help.out;

  ProcessResult bad = Doctor({"--bogus", "x"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown option '--bogus';"), std::string::npos) << bad.err;  // named alone
  EXPECT_EQ(Doctor({"--port", "0"}).exit_code, 2);
  EXPECT_EQ(Doctor({"--interval-ms"}).exit_code, 2);

  ProcessResult config = Doctor({"--config", "/nonexistent/memkv.yaml"});
  EXPECT_EQ(config.exit_code, 3);
  EXPECT_NE(config.err.find("/nonexistent/memkv.yaml"), std::string::npos) << config.err;

  ProcessResult top = RunProcess({MEMKV_BINARY, "--help"});
  EXPECT_NE(top.out.find("doctor"), std::string::npos) << top.out;
}

}  // namespace
}  // namespace memkv::doctor
