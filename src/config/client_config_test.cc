#include "config/client_config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "config/config_test_util.h"

namespace memkv::config {
namespace {

using testing::CountLinesWith;
using testing::HasLineWith;
using testing::ProblemLines;
using testing::TempFile;

const std::string kKey(64, 'a');

// The environment as a map: nothing here reads the real one.
EnvLookup MapEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ServerAddressTest, ParsesHostPortForms) {
  struct Case {
    const char* text;
    const char* host;
    uint16_t port;
    const char* printed;
  };
  for (const Case& c :
       {Case{"127.0.0.1:9900", "127.0.0.1", 9900, "127.0.0.1:9900"},
        Case{"localhost:1", "localhost", 1, "localhost:1"},
        Case{"[::1]:9900", "::1", 9900, "[::1]:9900"},
        Case{"node-7.cluster:65535", "node-7.cluster", 65535, "node-7.cluster:65535"}}) {
    Result<ServerAddress> a = ParseServerAddress(c.text);
    ASSERT_TRUE(a.ok()) << c.text << ": " << a.status().ToString();
    EXPECT_EQ(a->host, c.host);
    EXPECT_EQ(a->port, c.port);
    EXPECT_EQ(a->ToString(), c.printed);
  }
}

TEST(ServerAddressTest, RefusesBadForms) {
  struct Case {
    const char* text;
    const char* why;
  };
  for (const Case& c : {Case{"localhost", "missing ':port'"}, Case{"h:0", "port 0 is out of range"},
                        Case{"h:65536", "port 65536 is out of range"}, Case{":9900", "empty host"},
                        Case{"[::1]", "missing ':port'"}, Case{"::1:9900", "brackets"},
                        Case{"[::1:9900", "without ']'"}, Case{"h:-1", "not a number"},
                        Case{"[host]:1", "IPv6 addresses only"}, Case{"", "missing ':port'"},
                        Case{"h:99999999999999999999", "not a number"},
                        Case{"-bad.example:1", "starts or ends with '-'"},
                        Case{"a..b:1", "empty label"}, Case{"h_1!:1", "only letters"}}) {
    Result<ServerAddress> a = ParseServerAddress(c.text);
    ASSERT_FALSE(a.ok()) << c.text;
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
    const std::string& m = a.status().message();
    EXPECT_NE(m.find("'" + std::string(c.text)), std::string::npos) << m;
    EXPECT_NE(m.find(c.why), std::string::npos) << m;
    EXPECT_NE(m.find("allowed: host:port"), std::string::npos) << m;
  }
}

TEST(ClientConfigTest, TransportModeNames) {
  EXPECT_EQ(TransportModeName(TransportMode::kAuto), "auto");
  EXPECT_EQ(TransportModeName(TransportMode::kRdma), "rdma");
  EXPECT_EQ(TransportModeName(TransportMode::kTcp), "tcp");
}

TEST(ClientConfigYamlTest, ReadsEveryKey) {
  Result<ClientConfig> r = ParseClientConfigYaml(R"(
servers: ["10.0.0.1:9900", "[fd00::2]:9900"]
auth_key: )" + kKey + R"(
transport: tcp
num_connections: 8
timeout_ms: 250
connect_timeout_ms: 100
rdma_devices: [mlx5_0, mlx5_1]
rdma_mtu: 1024
prometheus_bind: 127.0.0.1:9100
)",
                                                 "client.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->servers.size(), 2u);
  EXPECT_EQ(r->servers[1].ToString(), "[fd00::2]:9900");
  EXPECT_EQ(r->auth_key, std::vector<uint8_t>(32, 0xaa));
  EXPECT_EQ(r->options.transport, "tcp");
  EXPECT_EQ(r->options.num_connections, 8u);
  EXPECT_EQ(r->options.timeout_ms, 250u);
  EXPECT_EQ(r->options.connect_timeout_ms, 100u);
  EXPECT_EQ(r->options.rdma_devices, (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(r->options.rdma_mtu, 1024u);
  EXPECT_EQ(r->options.prometheus_bind, "127.0.0.1:9100");
}

TEST(ClientConfigYamlTest, EmptyYamlKeepsDefaults) {
  Result<ClientConfig> r = ParseClientConfigYaml("", "client.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->options.transport, "auto");
  EXPECT_EQ(r->options.num_connections, 4u);
  EXPECT_EQ(r->options.timeout_ms, 5000u);
  EXPECT_EQ(r->options.connect_timeout_ms, 2000u);
  EXPECT_EQ(r->options.rdma_mtu, 4096u);
  EXPECT_TRUE(r->servers.empty());
}

TEST(ClientConfigYamlTest, EveryProblemAtOnceWithLocations) {
  std::vector<std::string> lines = ProblemLines(ParseClientConfigYaml(R"(servers: [a:1, "b", a:1]
transport: udp
num_connections: 0
timeout_ms: 3600001
connect_timeout_ms: abc
rdma_mtu: 1000
rdma_devices: mlx5_0
auth_key: 1234
prometheus_bind: nohost
sever: x
)",
                                                                      "client.yaml"));
  ASSERT_EQ(lines.size(), 10u);  // servers: its first problem only
  EXPECT_TRUE(HasLineWith(lines, {"client.yaml:1:", "servers: 'b' is not host:port"}));
  EXPECT_TRUE(HasLineWith(lines, {"client.yaml:2:12: transport: 'udp'", "auto, tcp, rdma"}));
  EXPECT_TRUE(HasLineWith(lines, {"num_connections: 0 is out of range; allowed: 1..256"}));
  EXPECT_TRUE(HasLineWith(lines, {"timeout_ms: 3600001 is out of range; allowed: 1..3600000"}));
  EXPECT_TRUE(HasLineWith(lines, {"connect_timeout_ms: 'abc'", "1..3600000"}));
  EXPECT_TRUE(HasLineWith(lines, {"rdma_mtu: '1000'", "256, 512, 1024, 2048, 4096"}));
  EXPECT_TRUE(HasLineWith(lines, {"rdma_devices: expected a list, got a string"}));
  EXPECT_TRUE(HasLineWith(lines, {"auth_key: a key of 4 characters", "64 hex"}));
  EXPECT_TRUE(HasLineWith(lines, {"prometheus_bind: 'nohost'", "missing ':port'"}));
  EXPECT_TRUE(HasLineWith(lines, {"unknown field 'sever' (did you mean 'servers'?)"}));
}

TEST(ClientConfigYamlTest, SyntaxAndTypeErrorsDoNotThrow) {
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseClientConfigYaml("servers: [a:1\n", "c.yaml")),
                          {"c.yaml:", "YAML syntax error"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseClientConfigYaml("servers: [[a:1]]\n", "c.yaml")),
                          {"c.yaml:1:11: a list inside a list"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseClientConfigYaml("just text\n", "c.yaml")),
                          {"'just text' is not followed by ':'; a client config is a map of option names"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseClientConfigYaml("rdma:\n  mtu: 1024\n", "c.yaml")),
                          {"c.yaml:2:3: an indented line (a nested map?)"}));
}

TEST(ClientConfigLoadTest, FromEnvironmentOnly) {
  Result<ClientConfig> r = LoadClientConfig(MapEnv({{"MEMKV_SERVERS", " 10.0.0.1:9900, [::1]:1 "},
                                                    {"MEMKV_AUTH_KEY", kKey},
                                                    {"MEMKV_TRANSPORT", "rdma"},
                                                    {"MEMKV_NUM_CONNECTIONS", "16"},
                                                    {"MEMKV_TIMEOUT_MS", "900"},
                                                    {"MEMKV_RDMA_DEVICES", "mlx5_0,mlx5_1"},
                                                    {"MEMKV_RDMA_MTU", "2048"},
                                                    {"MEMKV_PROMETHEUS_BIND", "0.0.0.0:9101"},
                                                    {"MEMKV_LOG_LEVEL", "debug"}}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->servers.size(), 2u);
  EXPECT_EQ(r->servers[0].ToString(), "10.0.0.1:9900");
  EXPECT_EQ(r->servers[1].ToString(), "[::1]:1");
  EXPECT_EQ(r->auth_key.size(), 32u);
  EXPECT_EQ(r->options.transport, "rdma");
  EXPECT_EQ(r->options.num_connections, 16u);
  EXPECT_EQ(r->options.timeout_ms, 900u);
  EXPECT_EQ(r->options.rdma_devices, (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(r->options.rdma_mtu, 2048u);
  EXPECT_EQ(r->options.prometheus_bind, "0.0.0.0:9101");
  EXPECT_EQ(r->options.log_level, ClientLogLevel::kDebug);
}

// resolve_timeout_ms bounds DNS lookups of dns: and srv: entries apart from
// connect_timeout_ms: each is read, defaulted and checked on its own.
TEST(ClientConfigLoadTest, ResolveTimeoutIsItsOwnOption) {
  Result<ClientConfig> r = ParseClientConfigYaml("resolve_timeout_ms: 500\n", "client.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->options.resolve_timeout_ms, 500u);
  EXPECT_EQ(r->options.connect_timeout_ms, 2000u);
  r = ParseClientConfigYaml("connect_timeout_ms: 100\n", "client.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->options.resolve_timeout_ms, 2000u);  // the default, whatever connect_timeout_ms says

  r = LoadClientConfig(MapEnv({{"MEMKV_SERVERS", "dns:memkv.test:9900"},
                               {"MEMKV_AUTH_KEY", kKey},
                               {"MEMKV_RESOLVE_TIMEOUT_MS", "750"}}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->options.resolve_timeout_ms, 750u);

  for (const char* bad : {"0", "3600001", "soon"}) {
    std::vector<std::string> lines = ProblemLines(
        LoadClientConfig(MapEnv({{"MEMKV_SERVERS", "10.0.0.1:9900"}, {"MEMKV_AUTH_KEY", kKey},
                                 {"MEMKV_RESOLVE_TIMEOUT_MS", bad}})));
    ASSERT_EQ(lines.size(), 1u) << bad;
    EXPECT_TRUE(HasLineWith(lines, {"MEMKV_RESOLVE_TIMEOUT_MS", "1..3600000"})) << lines[0];
  }
  ClientOptions options;
  options.servers = {"10.0.0.1:9900"};
  options.auth_key_hex = kKey;
  options.resolve_timeout_ms = 0;
  Status checked = CheckClientOptions(options);
  EXPECT_EQ(checked.message(), "resolve_timeout_ms: 0 is out of range; allowed: 1..3600000");
}

TEST(ClientConfigLoadTest, MissingServersAndKeySayWhatToSet) {
  for (const EnvLookup& env : {MapEnv({}), EnvLookup()}) {
    std::vector<std::string> lines = ProblemLines(LoadClientConfig(env));
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_TRUE(HasLineWith(lines, {"servers: none configured", "set MEMKV_SERVERS",
                                    "`servers:` in a YAML file named by MEMKV_CONFIG"}));
    EXPECT_TRUE(HasLineWith(lines, {"auth_key: none configured", "set MEMKV_AUTH_KEY"}));
  }
}

TEST(ClientConfigLoadTest, EnvironmentOverridesFilePerField) {
  TempFile file("servers: [file-host:1]\nauth_key: " + kKey +
                "\ntransport: tcp\nnum_connections: 8\n");
  Result<ClientConfig> r = LoadClientConfig(MapEnv({{"MEMKV_CONFIG", file.path()},
                                                    {"MEMKV_SERVERS", "env-host:2"},
                                                    {"MEMKV_NUM_CONNECTIONS", ""}}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->servers.size(), 1u);
  EXPECT_EQ(r->servers[0].ToString(), "env-host:2");  // env wins
  EXPECT_EQ(r->options.transport, "tcp");       // file, no env
  EXPECT_EQ(r->options.num_connections, 8u);                  // an empty variable is unset
  EXPECT_EQ(r->auth_key.size(), 32u);
}

TEST(ClientConfigLoadTest, FileAndEnvironmentProblemsTogether) {
  TempFile file("transport: udp\nservers: [a:1]\n");
  std::vector<std::string> lines =
      ProblemLines(LoadClientConfig(MapEnv({{"MEMKV_CONFIG", file.path()},
                                            {"MEMKV_RDMA_MTU", "9000"},
                                            {"MEMKV_AUTH_KEY", "not-a-key-and-secret"}})));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(HasLineWith(lines, {file.path() + ":1:12: transport: 'udp'"}));
  EXPECT_TRUE(HasLineWith(lines, {"MEMKV_RDMA_MTU: '9000'"}));
  EXPECT_TRUE(HasLineWith(lines, {"MEMKV_AUTH_KEY: a key of 20 characters"}));
  // A bad key is reported as bad, not also as missing, and never echoed.
  EXPECT_EQ(CountLinesWith(lines, {"none configured"}), 0u);
  EXPECT_EQ(CountLinesWith(lines, {"not-a-key-and-secret"}), 0u);
}

TEST(ClientConfigLoadTest, BadServersListNamesTheEntry) {
  std::vector<std::string> lines = ProblemLines(
      LoadClientConfig(MapEnv({{"MEMKV_SERVERS", "a:1,,b:2"}, {"MEMKV_AUTH_KEY", kKey}})));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"MEMKV_SERVERS: entry 2 of 'a:1,,b:2' is empty"}));
  lines = ProblemLines(
      LoadClientConfig(MapEnv({{"MEMKV_SERVERS", "a:1,a:1"}, {"MEMKV_AUTH_KEY", kKey}})));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"MEMKV_SERVERS: 'a:1' is listed twice"}));
  lines =
      ProblemLines(LoadClientConfig(MapEnv({{"MEMKV_SERVERS", "a:0"}, {"MEMKV_AUTH_KEY", kKey}})));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"MEMKV_SERVERS: 'a:0': port 0 is out of range"}));
}

TEST(ClientConfigLoadTest, RdmaDevicesAndMetricsBindAreChecked) {
  std::vector<std::string> lines =
      ProblemLines(LoadClientConfig(MapEnv({{"MEMKV_SERVERS", "a:1"},
                                            {"MEMKV_AUTH_KEY", kKey},
                                            {"MEMKV_RDMA_DEVICES", "mlx5_0, mlx5_0"},
                                            {"MEMKV_PROMETHEUS_BIND", "0.0.0.0:70000"},
                                            {"MEMKV_LOG_LEVEL", "loud"}})));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(HasLineWith(lines, {"MEMKV_LOG_LEVEL: 'loud' is not a log level", "debug, info, warn, error, off"}));
  EXPECT_TRUE(HasLineWith(lines, {"MEMKV_RDMA_DEVICES: 'mlx5_0' is listed twice"}));
  EXPECT_TRUE(
      HasLineWith(lines, {"MEMKV_PROMETHEUS_BIND: port 70000 is out of range", "1..65535"}));
  // Port 0 would bind a port nobody learns: refused by the option, not later by the exporter.
  EXPECT_TRUE(HasLineWith(ProblemLines(ParseClientConfigYaml("prometheus_bind: 127.0.0.1:0\n", "c.yaml")),
                          {"prometheus_bind: port 0 is out of range", "1..65535"}));

  lines = ProblemLines(ParseClientConfigYaml("rdma_devices: [mlx5_0, '']\n", "c.yaml"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"rdma_devices: an empty device name"}));
}

TEST(ClientConfigLoadTest, UnreadableConfigPathNamesPathAndErrno) {
  const std::string path = ::testing::TempDir() + "memkv_missing_client.yaml";
  std::vector<std::string> lines = ProblemLines(LoadClientConfig(
      MapEnv({{"MEMKV_CONFIG", path}, {"MEMKV_SERVERS", "a:1"}, {"MEMKV_TRANSPORT", "x"}})));
  ASSERT_EQ(lines.size(), 2u) << "servers/key may be in the unread file: no 'none configured'";
  EXPECT_TRUE(HasLineWith(lines, {"MEMKV_CONFIG:", path, "No such file or directory"}));
  EXPECT_TRUE(HasLineWith(lines, {"MEMKV_TRANSPORT: 'x'"}));
}

TEST(ClientConfigLoadTest, BrokenConfigFileIsOneLineNotAlsoMissingValues) {
  TempFile file("servers: [a:1\n");
  std::vector<std::string> lines =
      ProblemLines(LoadClientConfig(MapEnv({{"MEMKV_CONFIG", file.path()}})));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {file.path() + ":", "YAML syntax error"}));
}

TEST(ClientConfigLoadTest, MissingValuesPointAtTheNamedFile) {
  TempFile file("transport: tcp\n");
  std::vector<std::string> lines =
      ProblemLines(LoadClientConfig(MapEnv({{"MEMKV_CONFIG", file.path()}})));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(HasLineWith(lines, {"set MEMKV_SERVERS", "`servers:` in " + file.path()}));
  EXPECT_TRUE(HasLineWith(lines, {"set MEMKV_AUTH_KEY", "`auth_key:` in " + file.path()}));
}

}  // namespace
}  // namespace memkv::config
