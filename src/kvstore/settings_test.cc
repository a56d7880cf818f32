#include "kvstore/settings.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/client_option_samples.h"

namespace memkv::kvstore {
namespace {

constexpr char kKey[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

EnvLookup EnvOf(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(StoreSettingsTest, DefaultsWithOnlyTheKey) {
  Result<StoreSettings> s = SettingsFromEnvironment(EnvOf({{"MEMKV_AUTH_KEY", kKey}}), {"h:1"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->client.servers, std::vector<std::string>{"h:1"});
  EXPECT_EQ(s->client.auth_key_hex, kKey);
  EXPECT_EQ(s->client.transport, "auto");
  EXPECT_EQ(s->client.timeout_ms, 5000u);
  EXPECT_EQ(s->buffer_bytes, kDefaultBufferBytes);
  EXPECT_EQ(s->prefetch_bytes, kDefaultPrefetchBytes);
  EXPECT_EQ(s->shared_clients, kDefaultSharedClients);
}

TEST(StoreSettingsTest, EveryVariableIsRead) {
  Result<StoreSettings> s = SettingsFromEnvironment(EnvOf({{"MEMKV_AUTH_KEY", kKey},
                                                           {"MEMKV_TRANSPORT", "tcp"},
                                                           {"MEMKV_NUM_CONNECTIONS", "8"},
                                                           {"MEMKV_TIMEOUT_MS", " 250 "},
                                                           {"MEMKV_CONNECT_TIMEOUT_MS", "100"},
                                                           {"MEMKV_RDMA_DEVICES", "mlx5_0, mlx5_1"},
                                                           {"MEMKV_RDMA_MTU", "1024"},
                                                           {"MEMKV_RDMA_RETRY_COUNT", "7"},
                                                           {"MEMKV_RDMA_TIMEOUT", "12"},
                                                           {"MEMKV_RDMA_QPS", "4"},
                                                           {"MEMKV_PROMETHEUS_BIND", "127.0.0.1:9100"},
                                                           {"MEMKV_LOG_LEVEL", "error"},
                                                           {"MEMKV_KV_STORE_BUFFER_BYTES", "64 MiB"},
                                                           {"MEMKV_KV_STORE_PREFETCH_BYTES", "0"},
                                                           {"MEMKV_KV_STORE_SHARED_CLIENTS", "0"}}),
                                                    {"h:1"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->client.transport, "tcp");
  EXPECT_EQ(s->client.num_connections, 8u);
  EXPECT_EQ(s->client.timeout_ms, 250u);
  EXPECT_EQ(s->client.connect_timeout_ms, 100u);
  EXPECT_EQ(s->client.rdma_devices, (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(s->client.rdma_mtu, 1024u);
  EXPECT_EQ(s->client.rdma_retry_count, 7u);
  EXPECT_EQ(s->client.rdma_timeout, 12u);
  EXPECT_EQ(s->client.rdma_qps, 4u);
  EXPECT_EQ(s->client.prometheus_bind, "127.0.0.1:9100");
  EXPECT_EQ(s->client.log_level, ClientLogLevel::kError);
  EXPECT_EQ(s->buffer_bytes, 64u << 20);
  EXPECT_EQ(s->prefetch_bytes, 0u);
  EXPECT_EQ(s->shared_clients, 0u);
}

// Every wrong variable is named in one message, with what it allows.
TEST(StoreSettingsTest, EveryProblemIsNamedAtOnce) {
  Result<StoreSettings> s = SettingsFromEnvironment(EnvOf({{"MEMKV_TIMEOUT_MS", "soon"},
                                                           {"MEMKV_LOG_LEVEL", "loud"},
                                                           {"MEMKV_KV_STORE_BUFFER_BYTES", "1 KiB"},
                                                           {"MEMKV_KV_STORE_PREFETCH_BYTES", "1 TiB"},
                                                           {"MEMKV_KV_STORE_SHARED_CLIENTS", "65"}}),
                                                    {"h:1"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = s.status().message();
  for (const char* want : {"MEMKV_AUTH_KEY is not set", "not MEMKV_CONFIG", "MEMKV_TIMEOUT_MS: 'soon'",
                           "MEMKV_LOG_LEVEL: 'loud' is not a log level; allowed: debug, info, warn, error, off",
                           "MEMKV_KV_STORE_BUFFER_BYTES '1 KiB' is not a byte count in 1048576..64 GiB",
                           "MEMKV_KV_STORE_PREFETCH_BYTES '1 TiB'",
                           "MEMKV_KV_STORE_SHARED_CLIENTS '65' is not a whole number in 0..64"}) {
    EXPECT_NE(m.find(want), std::string::npos) << want << " not in: " << m;
  }
}

// Every option of the client option table reaches the handle's client
// options from its MEMKV_* variable, and a bad one is refused naming it.
TEST(StoreSettingsTest, EveryClientOptionComesFromItsVariable) {
  std::map<std::string, std::string> env{{"MEMKV_AUTH_KEY", kKey}};
  ClientOptions want;
  for (const ClientOptionInfo& o : ClientOptionTable()) {
    const config::test_samples::Sample& s = config::test_samples::SampleFor(o.name);
    env[std::string(o.env)] = s.good;
    ASSERT_TRUE(SetClientOption(&want, o.name, s.good).ok()) << o.name;
  }
  Result<StoreSettings> got = SettingsFromEnvironment(EnvOf(env), {"h:1"});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  for (const ClientOptionInfo& o : ClientOptionTable()) {
    if (o.name == "servers") {
      EXPECT_EQ(got->client.servers, std::vector<std::string>{"h:1"}) << "the URI's servers win";
      continue;
    }
    EXPECT_EQ(ClientOptionText(got->client, o.name), ClientOptionText(want, o.name)) << o.env;
    std::map<std::string, std::string> bad{{"MEMKV_AUTH_KEY", kKey}};
    bad[std::string(o.env)] = config::test_samples::SampleFor(o.name).bad;
    Result<StoreSettings> refused = SettingsFromEnvironment(EnvOf(bad), {"h:1"});
    ASSERT_FALSE(refused.ok()) << o.env;
    EXPECT_NE(refused.status().message().find(std::string(o.env) + ": "), std::string::npos)
        << refused.status().message();
  }
}

using Fields = std::vector<std::pair<std::string, std::string>>;

// MEMKV_IDENTITY_* set the handle's identity, as for any client.
TEST(StoreSettingsTest, IdentityFromTheEnvironment) {
  Result<StoreSettings> s = SettingsFromEnvironment(EnvOf({{"MEMKV_AUTH_KEY", kKey},
                                                           {"MEMKV_IDENTITY_MODEL", "Llama-3.2-1B"},
                                                           {"MEMKV_IDENTITY_KV_DTYPE", "f16"},
                                                           {"MEMKV_IDENTITY_BLOCK_TOKENS", "256"},
                                                           {"MEMKV_IDENTITY_ENGINE", "llama.cpp"},
                                                           {"MEMKV_IDENTITY_EXTRAS", "lora=a"}}),
                                                    {"h:1"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  CacheIdentity want;
  want.model = "Llama-3.2-1B";
  want.kv_dtype = "f16";
  want.block_tokens = 256;
  want.engine = "llama.cpp";
  want.extras = {{"lora", "a"}};
  EXPECT_EQ(s->client.identity, want);
}

// The URI's fields replace the environment's, field by field; an extra of
// the URI replaces the environment's of that name and keeps the others.
TEST(StoreSettingsTest, UriFieldsOverrideTheEnvironment) {
  const EnvLookup env = EnvOf({{"MEMKV_AUTH_KEY", kKey},
                               {"MEMKV_IDENTITY_MODEL", "from-env"},
                               {"MEMKV_IDENTITY_REVISION", "r1"},
                               {"MEMKV_IDENTITY_KV_DTYPE", "bf16"},
                               {"MEMKV_IDENTITY_ENGINE", "llama.cpp"},
                               {"MEMKV_IDENTITY_EXTRAS", "lora=a,pp=0"}});
  const Fields fields = {{"model", "Llama-3.2-1B"}, {"kv_dtype", "f16"},   {"block_tokens", "256"},
                         {"tp_rank", "1"},          {"tp_size", "2"},      {"layout", "NHD"},
                         {"engine_version", "b1"},  {"extra.lora", "b"},  {"extra.q", "awq"}};
  Result<StoreSettings> s = SettingsFromEnvironment(env, {"h:1"}, fields);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const CacheIdentity& id = s->client.identity;
  EXPECT_EQ(id.model, "Llama-3.2-1B");
  EXPECT_EQ(id.revision, "r1");  // the environment's, the URI has none
  EXPECT_EQ(id.kv_dtype, "f16");
  EXPECT_EQ(id.layout, "NHD");
  EXPECT_EQ(id.block_tokens, 256u);
  EXPECT_EQ(id.tp_rank, 1u);
  EXPECT_EQ(id.tp_size, 2u);
  EXPECT_EQ(id.engine, "llama.cpp");
  EXPECT_EQ(id.engine_version, "b1");
  EXPECT_EQ(id.extras, Fields({{"pp", "0"}, {"lora", "b"}, {"q", "awq"}}));
}

// A model with no engine names the backend as the engine; an engine given
// anywhere is kept.
TEST(StoreSettingsTest, EngineDefaultsToKvStoreWhenAModelIsGiven) {
  Result<StoreSettings> uri_model =
      SettingsFromEnvironment(EnvOf({{"MEMKV_AUTH_KEY", kKey}}), {"h:1"}, Fields{{"model", "m"}});
  ASSERT_TRUE(uri_model.ok()) << uri_model.status().ToString();
  EXPECT_EQ(uri_model->client.identity.engine, "kv_store");
  Result<StoreSettings> env_model =
      SettingsFromEnvironment(EnvOf({{"MEMKV_AUTH_KEY", kKey}, {"MEMKV_IDENTITY_MODEL", "m"}}), {"h:1"});
  ASSERT_TRUE(env_model.ok()) << env_model.status().ToString();
  EXPECT_EQ(env_model->client.identity.engine, "kv_store");
  Result<StoreSettings> engine_given = SettingsFromEnvironment(
      EnvOf({{"MEMKV_AUTH_KEY", kKey}, {"MEMKV_IDENTITY_ENGINE", "llama.cpp"}}), {"h:1"}, Fields{{"model", "m"}});
  ASSERT_TRUE(engine_given.ok()) << engine_given.status().ToString();
  EXPECT_EQ(engine_given->client.identity.engine, "llama.cpp");
  Result<StoreSettings> none = SettingsFromEnvironment(EnvOf({{"MEMKV_AUTH_KEY", kKey}}), {"h:1"});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->client.identity.empty());
}

// Bad URI values are named by their field, with what is allowed; an
// identity that is wrong as a whole says where it came from.
TEST(StoreSettingsTest, BadIdentityFieldsAreNamed) {
  const EnvLookup env = EnvOf({{"MEMKV_AUTH_KEY", kKey}});
  const std::vector<std::pair<Fields, std::string>> cases = {
      {{{"model", "m"}, {"block_tokens", "many"}}, "URI field 'block_tokens': 'many'"},
      {{{"model", "m"}, {"tp_size", "0"}}, "URI field 'tp_size'"},
      {{{"model", "m"}, {"tp_rank", "2"}, {"tp_size", "2"}},
       "cache identity: tp_rank 2 with tp_size 2; allowed: tp_size >= 1 and 0 <= tp_rank < tp_size (from the URI's "
       "query and MEMKV_IDENTITY_*)"},
      {{{"kv_dtype", "f16"}}, "cache identity: model is empty"},
      {{{"model", std::string(300, 'm')}}, "URI field 'model': 300 bytes; allowed: at most 256"},
      {{{"model", "a\x01" "b"}}, "holds a control character"},
  };
  for (const auto& [fields, why] : cases) {
    Result<StoreSettings> s = SettingsFromEnvironment(env, {"h:1"}, fields);
    ASSERT_FALSE(s.ok()) << why;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(why), std::string::npos) << why << " not in: " << s.status().message();
  }
}

// The client key is equal for equal inputs and differs when the servers,
// the URI's identity fields or any variable read differ, set or unset.
TEST(StoreSettingsTest, TheClientKeyNamesEverythingTheClientIsMadeFrom) {
  const std::map<std::string, std::string> base = {{"MEMKV_AUTH_KEY", kKey}, {"MEMKV_TIMEOUT_MS", "250"}};
  auto key = [&](std::map<std::string, std::string> vars, std::vector<std::string> servers, Fields identity) {
    Result<StoreSettings> s = SettingsFromEnvironment(EnvOf(std::move(vars)), std::move(servers), identity);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? s->client_key : std::string();
  };
  const std::string first = key(base, {"h:1", "h:2"}, {{"model", "m"}});
  EXPECT_EQ(key(base, {"h:1", "h:2"}, {{"model", "m"}}), first);
  EXPECT_NE(key(base, {"h:1"}, {{"model", "m"}}), first);
  EXPECT_NE(key(base, {"h:2", "h:1"}, {{"model", "m"}}), first);
  EXPECT_NE(key(base, {"h:1", "h:2"}, {{"model", "n"}}), first);
  EXPECT_NE(key(base, {"h:1", "h:2"}, {}), first);
  auto with = [&](const std::string& name, const std::string& value) {
    std::map<std::string, std::string> vars = base;
    vars[name] = value;
    return vars;
  };
  EXPECT_NE(key(with("MEMKV_TIMEOUT_MS", "251"), {"h:1", "h:2"}, {{"model", "m"}}), first);
  EXPECT_NE(key(with("MEMKV_TRANSPORT", "tcp"), {"h:1", "h:2"}, {{"model", "m"}}), first);
  EXPECT_NE(key(with("MEMKV_TRANSPORT", ""), {"h:1", "h:2"}, {{"model", "m"}}), first);  // set, empty
  EXPECT_NE(key(with("MEMKV_AUTH_KEY", std::string(64, 'a')), {"h:1", "h:2"}, {{"model", "m"}}), first);
  // A variable nothing reads does not part handles.
  EXPECT_EQ(key(with("HOME", "/root"), {"h:1", "h:2"}, {{"model", "m"}}), first);
}

TEST(StoreSettingsTest, ByteCounts) {
  EXPECT_EQ(ParseByteCount("0"), 0u);
  EXPECT_EQ(ParseByteCount("4096"), 4096u);
  EXPECT_EQ(ParseByteCount("8 KiB"), 8u << 10);
  EXPECT_EQ(ParseByteCount("2GiB"), 2ULL << 30);
  EXPECT_FALSE(ParseByteCount("").has_value());
  EXPECT_FALSE(ParseByteCount("MiB").has_value());
  EXPECT_FALSE(ParseByteCount("1 MB").has_value());
  EXPECT_FALSE(ParseByteCount("-1").has_value());
  EXPECT_FALSE(ParseByteCount("99999999999999999999").has_value());
  EXPECT_FALSE(ParseByteCount("17179869184 GiB").has_value());  // 2^64 bytes
}

TEST(StoreSettingsTest, LogLevel) {
  EXPECT_EQ(LogLevelFromEnvironment(EnvOf({})), std::nullopt);
  EXPECT_EQ(LogLevelFromEnvironment(EnvOf({{"MEMKV_LOG_LEVEL", "off"}})), ClientLogLevel::kOff);
  EXPECT_EQ(LogLevelFromEnvironment(EnvOf({{"MEMKV_LOG_LEVEL", "nope"}})), std::nullopt);
}

}  // namespace
}  // namespace memkv::kvstore
