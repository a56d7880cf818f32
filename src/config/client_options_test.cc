// The client option table (memkv/client.h): every row reaches ClientOptions
// from YAML, from its MEMKV_* variable and from SetClientOption, with the
// same value and the same refusal; Client::Create's check names the option;
// docs/configuration.md carries the table as the library prints it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "config/client_config.h"
#include "memkv/client.h"
#include "config/client_option_samples.h"

namespace memkv::config {
namespace {

EnvLookup MapEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ClientOptionTableTest, RowsAreCompleteAndUnique) {
  std::set<std::string_view> names;
  std::set<std::string_view> envs;
  for (const ClientOptionInfo& o : ClientOptionTable()) {
    EXPECT_TRUE(names.insert(o.name).second) << o.name;
    EXPECT_TRUE(envs.insert(o.env).second) << o.env;
    EXPECT_EQ(o.env.rfind("MEMKV_", 0), 0u) << o.name;
    EXPECT_FALSE(o.allowed.empty()) << o.name;
    EXPECT_FALSE(o.doc.empty()) << o.name;
    EXPECT_EQ(FindClientOption(o.name), &o);
    // The default reads back from a default ClientOptions.
    if (!o.required) {
      EXPECT_EQ(ClientOptionText(ClientOptions{}, o.name), o.default_text) << o.name;
    }
  }
  EXPECT_EQ(FindClientOption("nope"), nullptr);
  EXPECT_EQ(test_samples::Samples().size(), ClientOptionTable().size()) << "a sample per option";
}

// Each option, set to a non-default value from every source, reads back the same.
TEST(ClientOptionTableTest, EveryOptionReachesClientOptionsFromEverySource) {
  std::map<std::string, std::string> env;
  std::string yaml;
  ClientOptions direct;
  for (const ClientOptionInfo& o : ClientOptionTable()) {
    const test_samples::Sample& s = test_samples::SampleFor(o.name);
    env[std::string(o.env)] = s.good;
    yaml += std::string(o.name) + ": " + (o.is_list ? "[" + s.good + "]" : "'" + s.good + "'") + "\n";
    ASSERT_TRUE(SetClientOption(&direct, o.name, s.good).ok()) << o.name;
    EXPECT_NE(ClientOptionText(direct, o.name), ClientOptionText(ClientOptions{}, o.name)) << o.name;
  }
  Result<ClientConfig> from_env = LoadClientConfig(MapEnv(env));
  ASSERT_TRUE(from_env.ok()) << from_env.status().ToString();
  Result<ClientConfig> from_yaml = ParseClientConfigYaml(yaml, "client.yaml");
  ASSERT_TRUE(from_yaml.ok()) << from_yaml.status().ToString();
  ClientOptions from_env_fn;
  ASSERT_TRUE(SetClientOptionsFromEnvironment(&from_env_fn, MapEnv(env)).ok());
  for (const ClientOptionInfo& o : ClientOptionTable()) {
    const std::string want = ClientOptionText(direct, o.name);
    EXPECT_EQ(ClientOptionText(from_env->options, o.name), want) << o.env;
    EXPECT_EQ(ClientOptionText(from_yaml->options, o.name), want) << o.name << " in YAML";
    EXPECT_EQ(ClientOptionText(from_env_fn, o.name), want) << o.env;
  }
  EXPECT_TRUE(CheckClientOptions(direct).ok()) << CheckClientOptions(direct).ToString();
}

// A bad value is refused in one wording that names where it came from.
TEST(ClientOptionTableTest, BadValuesNameTheirSource) {
  for (const ClientOptionInfo& o : ClientOptionTable()) {
    const test_samples::Sample& s = test_samples::SampleFor(o.name);
    ClientOptions options;
    const std::string before = ClientOptionText(options, o.name);
    Status named = SetClientOption(&options, o.name, s.bad);
    EXPECT_EQ(named.code(), StatusCode::kInvalidArgument) << o.name;
    EXPECT_EQ(named.message().rfind(std::string(o.name) + ": ", 0), 0u) << named.message();
    EXPECT_NE(named.message().find("allowed: "), std::string::npos) << named.message();
    EXPECT_EQ(ClientOptionText(options, o.name), before) << "unchanged on failure: " << o.name;
    Status from_env = SetClientOption(&options, o.name, s.bad, o.env);
    EXPECT_EQ(from_env.message().rfind(std::string(o.env) + ": ", 0), 0u) << from_env.message();
    Result<ClientConfig> loaded = LoadClientConfig(MapEnv({{std::string(o.env), s.bad}}));
    ASSERT_FALSE(loaded.ok()) << o.env;
    EXPECT_NE(loaded.status().message().find(from_env.message()), std::string::npos)
        << loaded.status().message() << " vs " << from_env.message();
  }
  ClientOptions o;
  Status t = SetClientOption(&o, "transport", "x", "transport (NIXL parameter)");
  EXPECT_EQ(t.message(), "transport (NIXL parameter): 'x' is not a transport; allowed: auto, tcp, rdma");
  Status unknown = SetClientOption(&o, "sever", "x");
  EXPECT_NE(unknown.message().find("unknown client option 'sever'; allowed: servers, auth_key"), std::string::npos)
      << unknown.message();
}

TEST(ClientOptionTableTest, CheckNamesTheOptionNotTheStruct) {
  ClientOptions o;
  o.servers = {"a:1"};
  o.auth_key_hex = std::string(64, 'a');
  EXPECT_TRUE(CheckClientOptions(o).ok());
  o.rdma_mtu = 1000;
  EXPECT_EQ(CheckClientOptions(o).message(), "rdma_mtu: '1000' is not an RDMA path MTU; allowed: 256, 512, 1024, 2048, 4096");
  o.rdma_mtu = 4096;
  o.rdma_traffic_class = 30;
  EXPECT_EQ(CheckClientOptions(o).message(),
            "rdma_traffic_class: 30 is out of range; allowed: auto or 0..252, a multiple of 4");
  o.rdma_traffic_class.reset();
  o.servers.clear();
  EXPECT_NE(CheckClientOptions(o).message().find("servers: none given"), std::string::npos);
}

// docs/configuration.md's client table is ClientOptionsMarkdown(), verbatim.
TEST(ClientOptionTableTest, DocsCarryTheTable) {
  std::filesystem::path dir = std::filesystem::current_path();
  while (!std::filesystem::exists(dir / "docs/configuration.md") && dir.has_parent_path() && dir != dir.parent_path()) {
    dir = dir.parent_path();
  }
  std::ifstream in(dir / "docs/configuration.md");
  ASSERT_TRUE(in) << "docs/configuration.md not found above " << std::filesystem::current_path();
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find(ClientOptionsMarkdown()), std::string::npos)
      << "docs/configuration.md's client option table differs from the library's; paste this:\n"
      << ClientOptionsMarkdown();
}

}  // namespace
}  // namespace memkv::config
