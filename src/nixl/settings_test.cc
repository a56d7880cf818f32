#include "nixl/settings.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "config/client_option_samples.h"

namespace memkv::nixl {
namespace {

constexpr char kKey[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

Lookup EnvOf(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(NixlSettings, ParametersWinOverTheEnvironmentAndEmptyOnesFallBack) {
  Result<EngineSettings> s = SettingsFrom(
      {{"servers", "10.0.0.1:9900, 10.0.0.2:9900"}, {"auth_key", kKey}, {"timeout_ms", ""}, {"workers", "3"}, {"log_level", "info"}},
      EnvOf({{"MEMKV_SERVERS", "10.9.9.9:1"}, {"MEMKV_TIMEOUT_MS", "250"}, {"MEMKV_NIXL_BATCH_SIZE", "16"},
             {"MEMKV_TRANSPORT", "tcp"}, {"MEMKV_NIXL_KEY_PREFIX", "kvbm/"}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->client.servers, (std::vector<std::string>{"10.0.0.1:9900", "10.0.0.2:9900"}));
  EXPECT_EQ(s->client.auth_key_hex, kKey);
  EXPECT_EQ(s->client.timeout_ms, 250u);  // the parameter was empty
  EXPECT_EQ(s->client.transport, "tcp");
  EXPECT_EQ(s->workers, 3u);
  EXPECT_EQ(s->client.log_level, ClientLogLevel::kInfo);
  EXPECT_EQ(s->batch_size, 16u);
  EXPECT_EQ(s->key_prefix, "kvbm/");
}

TEST(NixlSettings, DefaultsWhenOnlyTheRequiredOnesAreGiven) {
  Result<EngineSettings> s = SettingsFrom({}, EnvOf({{"MEMKV_SERVERS", "127.0.0.1:9900"}, {"MEMKV_AUTH_KEY", kKey}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->batch_size, kDefaultBatchSize);
  EXPECT_EQ(s->workers, kDefaultWorkers);
  EXPECT_EQ(s->client.transport, "auto");
  EXPECT_EQ(s->client.log_level, ClientLogLevel::kWarn);
  EXPECT_TRUE(s->key_prefix.empty());
}

TEST(NixlSettings, EveryProblemIsNamedWithItsSourceAndWhatIsAllowed) {
  Result<EngineSettings> s = SettingsFrom({{"batch_size", "0"}, {"wokers", "2"}, {"log_level", "loud"}},
                                          EnvOf({{"MEMKV_NIXL_WORKERS", "65"}, {"MEMKV_TIMEOUT_MS", "-1"}}));
  ASSERT_FALSE(s.ok());
  const std::string m = s.status().message();
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.find("servers is not set (neither the backend parameter nor MEMKV_SERVERS)"), std::string::npos) << m;
  EXPECT_NE(m.find("auth_key is not set"), std::string::npos) << m;
  EXPECT_NE(m.find("parameter batch_size '0' is not a whole number in 1..4096"), std::string::npos) << m;
  EXPECT_NE(m.find("MEMKV_NIXL_WORKERS '65' is not a whole number in 1..64"), std::string::npos) << m;
  EXPECT_NE(m.find("MEMKV_TIMEOUT_MS: '-1' is not a non-negative integer"), std::string::npos) << m;
  EXPECT_NE(m.find("log_level (NIXL parameter): 'loud' is not a log level"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown parameter 'wokers'; the MEMKV backend reads servers, auth_key,"), std::string::npos) << m;
}

// Every option of the client option table is a backend parameter by its
// name, with its MEMKV_* variable as the fallback, and reaches the client.
TEST(NixlSettings, EveryClientOptionIsAParameterAndAVariable) {
  std::map<std::string, std::string> params;
  std::map<std::string, std::string> env;
  ClientOptions want;
  for (const ClientOptionInfo& o : ClientOptionTable()) {
    const config::test_samples::Sample& s = config::test_samples::SampleFor(o.name);
    ASSERT_TRUE(SetClientOption(&want, o.name, s.good).ok()) << o.name;
    params[std::string(o.name)] = s.good;
    env[std::string(o.env)] = s.good;
  }
  for (const auto& source : {SettingsFrom(params, EnvOf({})), SettingsFrom({}, EnvOf(env))}) {
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    for (const ClientOptionInfo& o : ClientOptionTable()) {
      EXPECT_EQ(ClientOptionText(source->client, o.name), ClientOptionText(want, o.name)) << o.name;
    }
  }
  for (const ClientOptionInfo& o : ClientOptionTable()) {
    std::map<std::string, std::string> bad = params;
    bad[std::string(o.name)] = config::test_samples::SampleFor(o.name).bad;
    Result<EngineSettings> refused = SettingsFrom(bad, EnvOf({}));
    ASSERT_FALSE(refused.ok()) << o.name;
    EXPECT_NE(refused.status().message().find(std::string(o.name) + " (NIXL parameter): "), std::string::npos)
        << refused.status().message();
  }
}

// The identity_* parameters, each falling back to its MEMKV_IDENTITY_*
// variable, make the client's cache identity; a model with no engine names
// the backend as the engine.
TEST(NixlSettings, IdentityParametersMakeTheCacheIdentity) {
  const Lookup env = EnvOf({{"MEMKV_SERVERS", "127.0.0.1:9900"},
                            {"MEMKV_AUTH_KEY", kKey},
                            {"MEMKV_IDENTITY_KV_DTYPE", "bfloat16"},
                            {"MEMKV_IDENTITY_TP_SIZE", "2"}});
  Result<EngineSettings> s = SettingsFrom({{"identity_model", "meta-llama/Llama-3.1-8B"},
                                           {"identity_revision", "0e9e39f"},
                                           {"identity_layout", "layer_first"},
                                           {"identity_block_tokens", "32"},
                                           {"identity_tp_rank", "1"},
                                           {"identity_engine_version", "0.5.0"},
                                           {"identity_extras", "pp_rank=0, lora=a"}},
                                          env);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  CacheIdentity want;
  want.model = "meta-llama/Llama-3.1-8B";
  want.revision = "0e9e39f";
  want.kv_dtype = "bfloat16";
  want.layout = "layer_first";
  want.block_tokens = 32;
  want.tp_rank = 1;
  want.tp_size = 2;
  want.engine = "nixl";
  want.engine_version = "0.5.0";
  want.extras = {{"pp_rank", "0"}, {"lora", "a"}};
  EXPECT_EQ(s->client.identity, want);

  Result<EngineSettings> engine_given =
      SettingsFrom({{"identity_model", "m"}, {"identity_engine", "dynamo"}}, env);
  ASSERT_TRUE(engine_given.ok()) << engine_given.status().ToString();
  EXPECT_EQ(engine_given->client.identity.engine, "dynamo");
  Result<EngineSettings> none =
      SettingsFrom({}, EnvOf({{"MEMKV_SERVERS", "127.0.0.1:9900"}, {"MEMKV_AUTH_KEY", kKey}}));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->client.identity.empty());
}

// A parameter that is wrong alone names itself; an identity wrong as a whole
// (tp_rank not below tp_size, fields without a model) says where it came from.
TEST(NixlSettings, BadIdentityParametersAreNamed) {
  const Lookup env = EnvOf({{"MEMKV_SERVERS", "127.0.0.1:9900"}, {"MEMKV_AUTH_KEY", kKey}});
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"identity_model", "m"}, {"identity_block_tokens", "many"}}, "identity_block_tokens (NIXL parameter): 'many'"},
      {{{"identity_model", "m"}, {"identity_tp_rank", "2"}, {"identity_tp_size", "2"}},
       "cache identity: tp_rank 2 with tp_size 2; allowed: tp_size >= 1 and 0 <= tp_rank < tp_size (from the "
       "identity_* parameters and MEMKV_IDENTITY_*)"},
      {{{"identity_kv_dtype", "bfloat16"}}, "cache identity: model is empty"},
  };
  for (const auto& [params, why] : cases) {
    Result<EngineSettings> s = SettingsFrom(params, env);
    ASSERT_FALSE(s.ok()) << why;
    EXPECT_NE(s.status().message().find(why), std::string::npos) << why << " not in: " << s.status().message();
  }
}

TEST(NixlSettings, EveryParameterHasAnEnvironmentVariableAndAMeaning) {
  std::map<std::string, std::string> params;
  for (const Parameter& p : Parameters()) {
    EXPECT_EQ(p.env.rfind("MEMKV_", 0), 0u) << p.name;
    EXPECT_FALSE(p.meaning.empty()) << p.name;
    params[std::string(p.name)] = "";  // what getPluginParams hands back, untouched
  }
  EXPECT_EQ(params.size(), Parameters().size());
  // The whole option map, all empty, is accepted: every value comes from the environment.
  Result<EngineSettings> s =
      SettingsFrom(params, EnvOf({{"MEMKV_SERVERS", "127.0.0.1:9900"}, {"MEMKV_AUTH_KEY", kKey}}));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
}

}  // namespace
}  // namespace memkv::nixl
