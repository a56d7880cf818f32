// Client-side metrics (MEMKV_PROMETHEUS_BIND): a client of a real server
// serves Prometheus text on its own port; the counts follow the calls made,
// timeouts and batch sizes show, promtool accepts it, and a port that cannot
// be bound is a clear error at Create.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "io/socket.h"
#include "tests/harness.h"

namespace memkv::testing {
namespace {

uint16_t FreePort() {
  Result<UniqueFd> fd = io::ListenTcp("127.0.0.1", 0, 1);
  EXPECT_TRUE(fd.ok());
  return fd.ok() ? *io::LocalPort(fd->get()) : 0;
}

TEST(ClientMetricsTest, AClientServesItsOwnMetricsThatFollowItsCalls) {
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  const uint16_t port = FreePort();
  ClientOptions options = OptionsFor({&server}, 300);
  options.prometheus_bind = "127.0.0.1:" + std::to_string(port);
  Result<std::unique_ptr<Client>> created = Client::Create(options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Client& client = **created;

  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client.Put("m" + std::to_string(i), Pattern(4096, i)).ok());
  ASSERT_TRUE(client.Get("m0").ok());
  EXPECT_EQ(client.Get("absent").status().code(), StatusCode::kNotFound);
  std::vector<std::string_view> keys = {"m0", "m1", "m2", "x", "y"};
  EXPECT_EQ(client.BatchExists(keys).present_prefix, 3u);
  server.Pause();  // alive, silent: the next call times out
  EXPECT_EQ(client.Get("m1").status().code(), StatusCode::kDeadlineExceeded);
  server.Resume();

  HttpResult r = HttpRequestTo(port, "GET", "/metrics");
  ASSERT_EQ(r.status, 200);
  std::map<std::string, double> m = PrometheusSamples(r.body);
  EXPECT_EQ(m["memkv_client_requests_total{op=\"put\",transport=\"tcp\"}"], 3);
  EXPECT_EQ(m["memkv_client_requests_total{op=\"get\",transport=\"tcp\"}"], 3);
  EXPECT_EQ(m["memkv_client_request_errors_total{op=\"get\",transport=\"tcp\"}"], 1) << "the timeout; a miss is not an error";
  EXPECT_EQ(m["memkv_client_request_duration_seconds_count{op=\"put\",transport=\"tcp\"}"], 3);
  EXPECT_EQ(m["memkv_client_batch_keys_count{op=\"batch_exists\"}"], 1);
  EXPECT_EQ(m["memkv_client_batch_keys_sum{op=\"batch_exists\"}"], 5);
  EXPECT_EQ(m["memkv_client_batch_keys_bucket{op=\"batch_exists\",le=\"4\"}"], 0);
  EXPECT_EQ(m["memkv_client_batch_keys_bucket{op=\"batch_exists\",le=\"8\"}"], 1);
  EXPECT_GE(m["memkv_client_timeouts_total"], 1);
  EXPECT_EQ(m["memkv_client_transport{transport=\"tcp\"}"], 1);
  EXPECT_EQ(m["memkv_client_value_bytes_total{transport=\"tcp\"}"], 4 * 4096);

  if (RunShell("command -v promtool").exit_code == 0) {
    TempDir dir;
    CommandResult check = RunShell("promtool check metrics < " + dir.Write("client.txt", r.body) + " 2>&1");
    EXPECT_EQ(check.exit_code, 0) << check.out;
    EXPECT_EQ(check.out, "") << check.out;
  } else if (const char* require = std::getenv("MEMKV_REQUIRE_PROMTOOL"); require && std::string(require) == "1") {
    FAIL() << "promtool is required (package prometheus)";
  }
}

TEST(ClientMetricsTest, ABusyBindAddressIsAClearErrorAtCreate) {
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  Result<UniqueFd> taken = io::ListenTcp("127.0.0.1", 0, 1);
  ASSERT_TRUE(taken.ok());
  const std::string bind = "127.0.0.1:" + std::to_string(*io::LocalPort(taken->get()));
  ClientOptions options = OptionsFor({&server});
  options.prometheus_bind = bind;
  Result<std::unique_ptr<Client>> created = Client::Create(options);
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.status().message().find("MEMKV_PROMETHEUS_BIND " + bind), std::string::npos)
      << created.status().message();
}

TEST(ClientMetricsTest, TheEnvironmentVariableTurnsItOn) {
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  const uint16_t port = FreePort();
  ::setenv("MEMKV_SERVERS", server.address().c_str(), 1);
  ::setenv("MEMKV_AUTH_KEY", kTestKeyHex, 1);
  ::setenv("MEMKV_PROMETHEUS_BIND", ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
  Result<std::unique_ptr<Client>> created = Client::CreateFromEnvironment();
  ::unsetenv("MEMKV_PROMETHEUS_BIND");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_TRUE((*created)->Put("env", Pattern(10, 1)).ok());
  HttpResult r = HttpRequestTo(port, "GET", "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(PrometheusSamples(r.body)["memkv_client_requests_total{op=\"put\",transport=\"tcp\"}"], 1);
}

}  // namespace
}  // namespace memkv::testing
