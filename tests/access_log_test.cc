// The client's access log (access_log_path; docs/client-library.md, "Access
// log") against a real server: every operation on a sampled key becomes one
// JSON line with the documented fields, outcomes and a hash in place of the
// key; sampling is by key hash; lines over the rate cap are counted, never
// lost silently.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/temp_dir.h"
#include "base/unique_fd.h"
#include "client/access_log.h"
#include "io/socket.h"
#include "tests/harness.h"

namespace memkv::testing {
namespace {

std::vector<JsonValue> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<JsonValue> out;
  std::string line;
  while (std::getline(in, line)) {
    Result<JsonValue> v = ParseJson(line);
    EXPECT_TRUE(v.ok()) << line << ": " << v.status().ToString();
    if (v.ok()) out.push_back(std::move(v).value());
  }
  return out;
}

std::string FileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Text(const JsonValue& line, std::string_view field) {
  const JsonValue* v = line.Find(field);
  return v != nullptr && v->type == JsonValue::Type::kString ? v->string : "<missing " + std::string(field) + ">";
}

double Number(const JsonValue& line, std::string_view field) {
  const JsonValue* v = line.Find(field);
  return v != nullptr ? v->NumberOr(-1) : -1;
}

// op key_hash outcome size, as one string per line.
std::string Summary(const JsonValue& line) {
  return Text(line, "op") + " " + Text(line, "key_hash") + " " + Text(line, "outcome") + " " +
         std::to_string(static_cast<uint64_t>(Number(line, "size")));
}

uint16_t FreePort() {
  Result<UniqueFd> fd = io::ListenTcp("127.0.0.1", 0, 1);
  EXPECT_TRUE(fd.ok());
  return fd.ok() ? *io::LocalPort(fd->get()) : 0;
}

TEST(AccessLogTest, EveryOperationOnASampledKeyIsOneJsonLineWithAHashForTheKey) {
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  TempDir dir;
  ClientOptions options = OptionsFor({&server});
  options.access_log_path = dir.File("access.jsonl");
  options.access_log_sample = 1.0;
  const auto before = std::chrono::system_clock::now();
  {
    Result<std::unique_ptr<Client>> created = Client::Create(options);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    Client& client = **created;
    ASSERT_TRUE(client.Put("secret-alpha", Pattern(4096, 1)).ok());
    ASSERT_TRUE(client.Get("secret-alpha").ok());
    EXPECT_EQ(client.Get("secret-absent").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(client.Exists("secret-alpha").value(), true);
    const std::vector<uint8_t> a = Pattern(100, 2), b = Pattern(200, 3);
    const std::string_view keys[] = {"secret-b1", "secret-b2"};
    const std::span<const uint8_t> values[] = {a, b};
    EXPECT_EQ(client.BatchPut(keys, values).present_prefix, 2u);
    std::vector<uint8_t> buf1(256), buf2(256), buf3(256);
    const std::string_view get_keys[] = {"secret-b1", "secret-b2", "secret-nope"};
    const std::span<uint8_t> buffers[] = {buf1, buf2, buf3};
    std::vector<size_t> sizes;
    EXPECT_EQ(client.BatchGetInto(get_keys, buffers, &sizes).present_prefix, 2u);
    ASSERT_TRUE(client.Delete("secret-alpha").ok());
  }  // closing the client writes what is buffered
  const auto after = std::chrono::system_clock::now();

  const std::string text = FileText(options.access_log_path);
  EXPECT_EQ(text.find("secret"), std::string::npos) << "a key in the log:\n" << text;
  const std::vector<JsonValue> lines = ReadLines(options.access_log_path);
  using client::AccessKeyHash;
  const std::vector<std::string> want = {
      "put " + AccessKeyHash("secret-alpha") + " stored 4096",
      "get " + AccessKeyHash("secret-alpha") + " hit 4096",
      "get " + AccessKeyHash("secret-absent") + " miss 0",
      "exists " + AccessKeyHash("secret-alpha") + " hit 0",
      "batch_put " + AccessKeyHash("secret-b1") + " stored 100",
      "batch_put " + AccessKeyHash("secret-b2") + " stored 200",
      "batch_get " + AccessKeyHash("secret-b1") + " hit 100",
      "batch_get " + AccessKeyHash("secret-b2") + " hit 200",
      "batch_get " + AccessKeyHash("secret-nope") + " miss 0",
      "delete " + AccessKeyHash("secret-alpha") + " deleted 0",
  };
  std::vector<std::string> got;
  for (const JsonValue& line : lines) got.push_back(Summary(line));
  EXPECT_EQ(got, want) << text;

  const double t0 = std::chrono::duration<double>(before.time_since_epoch()).count();
  const double t1 = std::chrono::duration<double>(after.time_since_epoch()).count();
  std::map<double, std::set<double>> keys_of_call;  // call -> its "keys" values
  for (const JsonValue& line : lines) {
    EXPECT_GE(Number(line, "time"), t0 - 0.001) << Summary(line);
    EXPECT_LE(Number(line, "time"), t1 + 0.001) << Summary(line);
    EXPECT_EQ(Text(line, "tenant"), "");
    EXPECT_EQ(Text(line, "identity"), "");
    EXPECT_EQ(Text(line, "key_hash").size(), 16u);
    EXPECT_GE(Number(line, "latency_us"), 0);
    EXPECT_LE(Number(line, "latency_us"), (t1 - t0) * 1e6 + 1);
    keys_of_call[Number(line, "call")].insert(Number(line, "keys"));
  }
  // One call per single op, one per batch: its lines share the call and its size.
  ASSERT_EQ(keys_of_call.size(), 7u);
  EXPECT_EQ(keys_of_call.rbegin()->second, std::set<double>{1});
  EXPECT_EQ(std::next(keys_of_call.rbegin())->second, std::set<double>{3}) << "the batch get of 3 keys";
}

// Sampling is by key hash: a sampled key has every operation logged, an
// unsampled one none, and which keys those are does not depend on the process.
TEST(AccessLogTest, SamplingKeepsWholeKeysChosenByTheirHash) {
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  TempDir dir;
  ClientOptions options = OptionsFor({&server});
  options.access_log_path = dir.File("access.jsonl");
  options.access_log_sample = 0.25;
  std::set<std::string> sampled;  // the hashes below a quarter of the hash space
  {
    Result<std::unique_ptr<Client>> created = Client::Create(options);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    for (int i = 0; i < 200; ++i) {
      const std::string key = "k" + std::to_string(i);
      ASSERT_TRUE((*created)->Put(key, Pattern(64, i)).ok());
      ASSERT_TRUE((*created)->Get(key).ok());
      const std::string hash = client::AccessKeyHash(key);
      if (hash < "4000000000000000") sampled.insert(hash);
    }
  }
  ASSERT_GT(sampled.size(), 20u);
  ASSERT_LT(sampled.size(), 80u);
  std::map<std::string, std::vector<std::string>> ops;  // key hash -> ops in order
  for (const JsonValue& line : ReadLines(options.access_log_path)) ops[Text(line, "key_hash")].push_back(Text(line, "op"));
  EXPECT_EQ(ops.size(), sampled.size());
  for (const std::string& hash : sampled) {
    EXPECT_EQ(ops[hash], (std::vector<std::string>{"put", "get"})) << hash;
  }
}

// Past access_log_max_lines_per_sec a call's lines are dropped and counted
// (memkv_client_access_log_dropped_total{reason="rate"}); every line is
// either written or counted.
TEST(AccessLogTest, LinesOverTheRateCapAreCountedAsDropped) {
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  TempDir dir;
  ClientOptions options = OptionsFor({&server});
  options.access_log_path = dir.File("access.jsonl");
  options.access_log_sample = 1.0;
  options.access_log_max_lines_per_sec = 3;
  const uint16_t port = FreePort();
  options.prometheus_bind = "127.0.0.1:" + std::to_string(port);
  Result<std::unique_ptr<Client>> created = Client::Create(options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const auto start = std::chrono::steady_clock::now();
  constexpr int kCalls = 40;
  for (int i = 0; i < kCalls; ++i) ASSERT_TRUE((*created)->Put("r" + std::to_string(i), Pattern(64, i)).ok());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // The writer runs on its own thread: poll until every line is accounted for.
  std::map<std::string, double> m;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    HttpResult r = HttpRequestTo(port, "GET", "/metrics");
    ASSERT_EQ(r.status, 200);
    m = PrometheusSamples(r.body);
    if (m["memkv_client_access_log_lines_total"] + m["memkv_client_access_log_dropped_total{reason=\"rate\"}"] ==
            kCalls ||
        std::chrono::steady_clock::now() > deadline) {
      break;
    }
  }
  const double lines = m["memkv_client_access_log_lines_total"];
  const double dropped = m["memkv_client_access_log_dropped_total{reason=\"rate\"}"];
  EXPECT_EQ(lines + dropped, kCalls);
  EXPECT_GE(lines, 3);                                   // the first second's three
  EXPECT_LE(lines, 3 * (static_cast<int>(seconds) + 2));  // three a second at most
  EXPECT_EQ(m["memkv_client_access_log_dropped_total{reason=\"buffer\"}"], 0);
  EXPECT_EQ(m["memkv_client_access_log_dropped_total{reason=\"write\"}"], 0);
  created->reset();
  EXPECT_EQ(ReadLines(options.access_log_path).size(), static_cast<size_t>(lines));
}

// The cap by the second the call began, the module alone: a call's lines
// stay together.
TEST(AccessLogTest, TheRateCapCountsWholeCallsPerSecond) {
  TempDir dir;
  client::AccessLogSettings settings;
  settings.path = dir.File("cap.jsonl");
  settings.sample = 1.0;
  settings.max_lines_per_sec = 5;
  Result<std::unique_ptr<client::AccessLog>> log = client::AccessLog::Open(settings);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  const client::AccessItem one[] = {{"a", 1, StatusCode::kOk}};
  const client::AccessItem three[] = {{"a", 1, StatusCode::kOk}, {"b", 2, StatusCode::kNotFound}, {"c", 0, StatusCode::kBusy}};
  const int64_t second = 1'800'000'000LL * 1'000'000;
  (*log)->Append("batch_get", second, 1000, 3, three);      // 3
  (*log)->Append("get", second + 10, 1000, 1, one);         // 4
  (*log)->Append("batch_put", second + 20, 1000, 3, three); // 7 > 5: dropped whole
  (*log)->Append("get", second + 30, 1000, 1, one);         // 5
  (*log)->Append("get", second + 40, 1000, 1, one);         // 6 > 5: dropped
  (*log)->Append("batch_put", second + 1'000'000, 1000, 3, three);  // the next second: 3
  (*log)->Flush();
  client::AccessLogCounts c = (*log)->Counts();
  EXPECT_EQ(c.lines, 8u);
  EXPECT_EQ(c.dropped_rate, 4u);
  log->reset();
  std::vector<std::string> got;
  for (const JsonValue& line : ReadLines(settings.path)) got.push_back(Text(line, "op") + " " + Text(line, "outcome"));
  EXPECT_EQ(got, (std::vector<std::string>{"batch_get hit", "batch_get miss", "batch_get error:Busy", "get hit",
                                           "get hit", "batch_put stored", "batch_put miss", "batch_put shed"}));
}

TEST(AccessLogTest, AFileTheClientCannotOpenFailsCreateNamingIt) {
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  ClientOptions options = OptionsFor({&server});
  options.access_log_path = "/nonexistent-dir/access.jsonl";
  Result<std::unique_ptr<Client>> created = Client::Create(options);
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.status().message().find("access_log_path: open(/nonexistent-dir/access.jsonl)"), std::string::npos)
      << created.status().message();
}

}  // namespace
}  // namespace memkv::testing
