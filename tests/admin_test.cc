// The admin endpoint of a real `memkv start` (docs/admin.md, docs/metrics.md):
// health, readiness and status as JSON, Prometheus text that promtool
// accepts, counters that move exactly as a workload predicts, bad HTTP
// requests refused without disturbing the data plane, HTTPS with a
// self-signed certificate, and degraded health when a drive is lost.
#include <gtest/gtest.h>

#include <iconv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/json.h"
#include "base/temp_dir.h"
#include "io/socket.h"
#include "tests/harness.h"

namespace memkv::testing {
namespace {

JsonValue ParseOk(const std::string& text) {
  Result<JsonValue> j = ParseJson(text);
  EXPECT_TRUE(j.ok()) << j.status().ToString() << "\n" << text;
  return j.ok() ? *j : JsonValue{};
}

double Num(const JsonValue& j, std::initializer_list<std::string_view> path) {
  const JsonValue* v = j.Path(path);
  EXPECT_NE(v, nullptr) << "missing " << *path.begin();
  return v == nullptr ? -1 : v->NumberOr(-1);
}

std::string Str(const JsonValue& j, std::initializer_list<std::string_view> path) {
  const JsonValue* v = j.Path(path);
  return v == nullptr ? "<missing>" : v->string;
}

class AdminTest : public ::testing::Test {
 protected:
  void Start(const ServerSpec& spec) {
    Status s = server_.Start(spec);
    ASSERT_TRUE(s.ok()) << s.ToString();
    admin_ = server_.AdminPort();
    ASSERT_NE(admin_, 0) << server_.Stderr();
    client_ = ClientFor({&server_}, 10000);
  }
  std::map<std::string, double> Scrape() {
    HttpResult r = HttpRequestTo(admin_, "GET", "/v1/metrics");
    EXPECT_EQ(r.status, 200);
    EXPECT_NE(r.headers.find("text/plain; version=0.0.4"), std::string::npos) << r.headers;
    return PrometheusSamples(r.body);
  }

  TempDir dir_;
  ServerProcess server_;
  uint16_t admin_ = 0;
  std::unique_ptr<Client> client_;
};

TEST_F(AdminTest, HealthReadyAndStatusDescribeAFileModeServer) {
  Start(FileModeSpec(dir_.path(), 2));
  ASSERT_TRUE(client_->Put("a", Pattern(3 << 20, 1)).ok());

  HttpResult health = HttpRequestTo(admin_, "GET", "/v1/health");
  ASSERT_EQ(health.status, 200) << health.body;
  EXPECT_NE(health.headers.find("application/json"), std::string::npos);
  JsonValue h = ParseOk(health.body);
  EXPECT_EQ(Str(h, {"status"}), "healthy");
  EXPECT_EQ(h.Find("rdma_active")->boolean, false);
  EXPECT_EQ(Num(h, {"drives_online"}), 2);
  EXPECT_EQ(Num(h, {"drives_offline"}), 0);
  EXPECT_EQ(Num(h, {"drives_total"}), 2);

  HttpResult ready = HttpRequestTo(admin_, "GET", "/v1/ready");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body, "ok\n");

  HttpResult status = HttpRequestTo(admin_, "GET", "/v1/status");
  ASSERT_EQ(status.status, 200);
  JsonValue st = ParseOk(status.body);
  EXPECT_EQ(Str(st, {"address"}), server_.address());
  EXPECT_EQ(Str(st, {"storage", "mode"}), "file");
  EXPECT_EQ(Num(st, {"raw_bytes_total"}), 2.0 * (128 << 20));
  EXPECT_GT(Num(st, {"usable_bytes_total"}), 0);
  EXPECT_LE(Num(st, {"usable_bytes_total"}), Num(st, {"raw_bytes_total"}));
  EXPECT_EQ(Num(st, {"used_bytes_total"}), 3.0 * (1 << 20)) << "3 extents of 1 MiB";
  EXPECT_EQ(Num(st, {"memory", "pool_bytes"}), 32.0 * (1 << 20));
  EXPECT_EQ(Num(st, {"memory", "used_bytes"}), 3.0 * (1 << 20));
  const JsonValue* devices = st.Find("devices");
  ASSERT_NE(devices, nullptr);
  ASSERT_EQ(devices->array.size(), 3u) << "the DRAM pool and two drives";
  EXPECT_EQ(Str(devices->array[0], {"name"}), "dram");
  EXPECT_EQ(Str(devices->array[1], {"path"}), dir_.path() + "/d0.memkv");
  EXPECT_EQ(Str(devices->array[2], {"state"}), "online");
  EXPECT_EQ(Num(st, {"connections", "active"}), 1);
  EXPECT_EQ(st.Find("rdma")->Find("active")->boolean, false);
}

TEST_F(AdminTest, CountersMoveExactlyAsTheWorkloadPredicts) {
  Start(FileModeSpec(dir_.path(), 1));
  // A client with the wrong key: made before the counts start, as making
  // it asks the server who it is (and fails to authenticate).
  ClientOptions wrong = OptionsFor({&server_});
  wrong.auth_key_hex = std::string(64, 'f');
  auto intruder = std::move(Client::Create(wrong)).value();
  std::map<std::string, double> before = Scrape();
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(client_->Put("k" + std::to_string(i), Pattern(1000, i)).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client_->Get("k" + std::to_string(i)).ok());
  for (int i = 0; i < 2; ++i) EXPECT_EQ(client_->Get("absent" + std::to_string(i)).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(client_->Delete("k6").ok());
  EXPECT_EQ(client_->Delete("k6").code(), StatusCode::kNotFound);
  // Its put fails to authenticate.
  EXPECT_EQ(intruder->Put("x", Pattern(10, 1)).code(), StatusCode::kAuthFailed);

  std::map<std::string, double> after = Scrape();
  auto delta = [&](const std::string& sample) { return after[sample] - before[sample]; };
  const std::string put = "{op=\"put\",transport=\"tcp\"}";
  const std::string get = "{op=\"get\",transport=\"tcp\"}";
  const std::string del = "{op=\"delete\",transport=\"tcp\"}";
  EXPECT_EQ(delta("memkv_requests_total" + put), 7);
  EXPECT_EQ(delta("memkv_requests_total" + get), 5);
  EXPECT_EQ(delta("memkv_requests_total" + del), 2);
  EXPECT_EQ(delta("memkv_request_errors_total" + get), 0) << "a miss is not an error";
  EXPECT_EQ(delta("memkv_value_bytes_total" + put), 7000);
  EXPECT_EQ(delta("memkv_value_bytes_total" + get), 3000);
  EXPECT_EQ(delta("memkv_request_duration_seconds_count" + put), 7);
  EXPECT_EQ(delta("memkv_request_duration_seconds_bucket{op=\"put\",transport=\"tcp\",le=\"+Inf\"}"), 7);
  EXPECT_EQ(delta("memkv_cache_hits_total{tier=\"dram\"}"), 3);
  EXPECT_EQ(delta("memkv_cache_misses_total"), 2);
  EXPECT_EQ(delta("memkv_auth_failures_total"), 1);
  EXPECT_EQ(after["memkv_keys{tier=\"drive\"}"], 6);
  EXPECT_EQ(after["memkv_health{status=\"healthy\"}"], 1);
  EXPECT_EQ(after["memkv_drive_state{device=\"drive0\",state=\"online\"}"], 1);
  EXPECT_EQ(after["memkv_capacity_used_bytes{device=\"drive0\"}"], 6.0 * 4096) << "6 values of 1000 bytes, a 4 KiB unit each";
}

// Per-namespace counts (docs/metrics.md, "Namespaces"): each key counted in
// the namespace before its first '/', in /v1/status and in /metrics.
TEST_F(AdminTest, NamespacesCountLookupsHitsAndBytesPerModel) {
  Start(FileModeSpec(dir_.path(), 1));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client_->Put("llama/" + std::to_string(i), Pattern(1000, i)).ok());
  ASSERT_TRUE(client_->Put("qwen/0", Pattern(1000, 9)).ok());
  ASSERT_TRUE(client_->Get("llama/0").ok());
  ASSERT_TRUE(client_->Get("llama/1").ok());
  EXPECT_EQ(client_->Get("llama/absent").status().code(), StatusCode::kNotFound);
  const std::vector<std::string_view> chain = {"llama/0", "llama/1", "llama/absent", "llama/2"};
  Result<size_t> matched = client_->MatchPrefix(chain);
  ASSERT_TRUE(matched.ok()) << matched.status().ToString();
  EXPECT_EQ(*matched, 2u);
  ASSERT_TRUE(client_->Exists("qwen/0").ok());

  JsonValue st = ParseOk(HttpRequestTo(admin_, "GET", "/v1/status").body);
  const JsonValue* list = st.Find("namespaces");
  ASSERT_NE(list, nullptr);
  std::map<std::string, const JsonValue*> by_name;
  for (const JsonValue& ns : list->array) by_name[Str(ns, {"name"})] = &ns;
  ASSERT_TRUE(by_name.count("llama") && by_name.count("qwen") && by_name.count("other")) << HttpRequestTo(admin_, "GET", "/v1/status").body;
  const JsonValue& llama = *by_name["llama"];
  EXPECT_EQ(Num(llama, {"lookups"}), 7) << "3 gets and a prefix match of 4 keys";
  EXPECT_EQ(Num(llama, {"hits"}), 4) << "2 gets and the 2 matched keys";
  EXPECT_DOUBLE_EQ(Num(llama, {"hit_ratio"}), 4.0 / 7.0);
  EXPECT_EQ(Num(llama, {"read_bytes"}), 2000);
  EXPECT_EQ(Num(llama, {"puts"}), 3);
  EXPECT_EQ(Num(llama, {"written_bytes"}), 3000);
  EXPECT_EQ(Num(*by_name["qwen"], {"lookups"}), 1);
  EXPECT_EQ(Num(*by_name["qwen"], {"hits"}), 1);
  EXPECT_EQ(Num(*by_name["other"], {"lookups"}), 0);

  std::map<std::string, double> scrape = Scrape();
  EXPECT_EQ(scrape["memkv_namespace_lookups_total{namespace=\"llama\"}"], 7);
  EXPECT_EQ(scrape["memkv_namespace_hits_total{namespace=\"llama\"}"], 4);
  EXPECT_EQ(scrape["memkv_namespace_written_bytes_total{namespace=\"qwen\"}"], 1000);
}

// memory.read_check_interval_ms: the server hashes a value it sent over TCP
// at most once per interval (the client checks every response itself).
TEST_F(AdminTest, AValueSentAgainWithinTheReadCheckIntervalIsNotHashedAgain) {
  for (const auto& [interval, hashed, skipped] :
       {std::tuple{"3600000", 1.0, 3.0}, std::tuple{"0", 4.0, 0.0}}) {
    SCOPED_TRACE(std::string("read_check_interval_ms: ") + interval);
    ServerSpec spec;
    spec.memory_yaml = std::string("  read_check_interval_ms: ") + interval + "\n";
    server_.Stop();
    Start(spec);
    ASSERT_TRUE(client_->Put("hot", Pattern(70'000, 3)).ok());
    for (int i = 0; i < 4; ++i) {
      Result<std::vector<uint8_t>> got = client_->Get("hot");
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, Pattern(70'000, 3));
    }
    // The server checks a sent value after the send, so the last get's
    // check may land just after the client has its answer: poll for all 4.
    const std::string hashed_sample = "memkv_sent_value_checks_total{result=\"hashed\"}";
    const std::string skipped_sample = "memkv_sent_value_checks_total{result=\"skipped_recent\"}";
    std::map<std::string, double> m = Scrape();
    for (const Nanos deadline = MonotonicNanos() + 10'000'000'000;
         m[hashed_sample] + m[skipped_sample] < 4 && MonotonicNanos() < deadline;) {
      m = Scrape();
    }
    EXPECT_EQ(m[hashed_sample], hashed);
    EXPECT_EQ(m[skipped_sample], skipped);
    EXPECT_EQ(m["memkv_checksum_failures_total{where=\"dram\"}"], 0);
  }
}

// used_bytes is capacity consumed (values rounded up to the pool's 64-byte
// units), beside the value bytes, the count and the fragmentation.
TEST_F(AdminTest, DramAccountingIsCapacityConsumedBesideValueBytes) {
  Start(ServerSpec{});
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(client_->Put("v" + std::to_string(i), Pattern(1000, i)).ok());
  JsonValue st = ParseOk(HttpRequestTo(admin_, "GET", "/v1/status").body);
  const double pool = Num(st, {"memory", "pool_bytes"});
  EXPECT_EQ(Num(st, {"memory", "used_bytes"}), 10.0 * 1024) << "1000 bytes take 16 units of 64";
  EXPECT_EQ(Num(st, {"memory", "value_bytes"}), 10000.0);
  EXPECT_EQ(Num(st, {"memory", "keys"}), 10.0);
  EXPECT_EQ(Num(st, {"memory", "free_bytes"}), pool - 10.0 * 1024);
  EXPECT_EQ(Num(st, {"memory", "largest_free_bytes"}), pool - 10.0 * 1024);
  EXPECT_EQ(Num(st, {"memory", "fragmentation"}), 0.0);
  EXPECT_DOUBLE_EQ(Num(st, {"memory", "bytes_per_value_byte"}), 1.024);
  EXPECT_EQ(Num(st, {"used_bytes_total"}), 10.0 * 1024) << "memory mode: the pool is the capacity";

  // Deleting every other value leaves holes: the free room is in pieces.
  for (int i = 0; i < 10; i += 2) ASSERT_TRUE(client_->Delete("v" + std::to_string(i)).ok());
  std::map<std::string, double> m = Scrape();
  EXPECT_EQ(m["memkv_capacity_used_bytes{device=\"dram\"}"], 5.0 * 1024);
  EXPECT_EQ(m["memkv_stored_value_bytes{tier=\"dram\"}"], 5000.0);
  EXPECT_EQ(m["memkv_keys{tier=\"dram\"}"], 5.0);
  const double free_bytes = pool - 5.0 * 1024;
  EXPECT_DOUBLE_EQ(m["memkv_fragmentation_ratio{tier=\"dram\"}"], 1.0 - (free_bytes - 5 * 1024.0) / free_bytes)
      << "five 1 KiB holes beside the long free run after v9";
}

TEST_F(AdminTest, DriveAccountingIsCapacityConsumedBesideValueBytes) {
  Start(FileModeSpec(dir_.path(), 2));
  constexpr int kValues = 12;
  for (int i = 0; i < kValues; ++i) ASSERT_TRUE(client_->Put("d" + std::to_string(i), Pattern(5000, i)).ok());
  JsonValue st = ParseOk(HttpRequestTo(admin_, "GET", "/v1/status").body);
  constexpr double kUnits = 2 * 4096.0;  // 5000 bytes take two 4 KiB units
  EXPECT_EQ(Num(st, {"storage", "used_bytes"}), kValues * kUnits);
  EXPECT_EQ(Num(st, {"storage", "value_bytes"}), kValues * 5000.0);
  EXPECT_EQ(Num(st, {"storage", "keys"}), double(kValues));
  EXPECT_DOUBLE_EQ(Num(st, {"storage", "bytes_per_value_byte"}), kUnits / 5000.0);
  EXPECT_EQ(Num(st, {"storage", "free_bytes"}), Num(st, {"storage", "usable_bytes"}) - kValues * kUnits);
  EXPECT_EQ(Num(st, {"storage", "fragmentation"}), 0.0) << "puts fill each drive from its start";
  EXPECT_EQ(Num(st, {"used_bytes_total"}), kValues * kUnits) << "file mode: the drives are the capacity";
  const JsonValue* devices = st.Find("devices");
  ASSERT_NE(devices, nullptr);
  ASSERT_EQ(devices->array.size(), 3u);
  double device_used = 0, device_values = 0;
  for (size_t i = 1; i < devices->array.size(); ++i) {
    const JsonValue& d = devices->array[i];
    device_used += Num(d, {"used_bytes"});
    device_values += Num(d, {"value_bytes"});
    EXPECT_EQ(Num(d, {"free_bytes"}), Num(d, {"usable_bytes"}) - Num(d, {"used_bytes"}));
    EXPECT_GT(Num(d, {"journal_used_bytes"}), 0) << "each drive's journal records its puts";
    EXPECT_GT(Num(d, {"journal_area_bytes"}), Num(d, {"journal_used_bytes"}));
  }
  EXPECT_EQ(device_used, kValues * kUnits);
  EXPECT_EQ(device_values, kValues * 5000.0);

  // Deleting every other pair of values leaves holes on the drives.
  for (int i = 0; i < kValues; ++i) {
    if (i % 4 < 2) {
      ASSERT_TRUE(client_->Delete("d" + std::to_string(i)).ok());
    }
  }
  st = ParseOk(HttpRequestTo(admin_, "GET", "/v1/status").body);
  std::map<std::string, double> m = Scrape();
  EXPECT_EQ(m["memkv_stored_value_bytes{tier=\"drive\"}"], kValues / 2 * 5000.0);
  EXPECT_EQ(m["memkv_keys{tier=\"drive\"}"], kValues / 2.0);
  double used = 0, free_bytes = 0, runs = 0;
  devices = st.Find("devices");
  ASSERT_NE(devices, nullptr);
  ASSERT_EQ(devices->array.size(), 3u);
  for (size_t i = 1; i < devices->array.size(); ++i) {
    const JsonValue& d = devices->array[i];
    used += m["memkv_capacity_used_bytes{device=\"drive" + std::to_string(i - 1) + "\"}"];
    free_bytes += Num(d, {"free_bytes"});
    runs += Num(d, {"largest_free_bytes"});
    // The JSON carries 15 significant digits: equal to that, not to the last bit.
    const double expected = 1.0 - Num(d, {"largest_free_bytes"}) / Num(d, {"free_bytes"});
    EXPECT_NEAR(Num(d, {"fragmentation"}), expected, 1e-12 * expected);
  }
  EXPECT_EQ(used, kValues / 2 * kUnits);
  const double fragmentation = m["memkv_fragmentation_ratio{tier=\"drive\"}"];
  EXPECT_GT(fragmentation, 0.0) << "the holes are outside each drive's longest free run";
  EXPECT_DOUBLE_EQ(fragmentation, 1.0 - runs / free_bytes);
  EXPECT_NEAR(Num(st, {"storage", "fragmentation"}), fragmentation, 1e-12 * fragmentation);
}

TEST_F(AdminTest, PromtoolAcceptsALiveScrape) {
  Start(FileModeSpec(dir_.path(), 1));
  ASSERT_TRUE(client_->Put("p", Pattern(5000, 3)).ok());
  ASSERT_TRUE(client_->Get("p").ok());
  HttpResult r = HttpRequestTo(admin_, "GET", "/v1/metrics");
  ASSERT_EQ(r.status, 200);
  if (RunShell("command -v promtool").exit_code != 0) {
    const char* require = std::getenv("MEMKV_REQUIRE_PROMTOOL");
    if (require != nullptr && std::string(require) == "1") FAIL() << "promtool is required (package prometheus)";
    GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  }
  const std::string file = dir_.Write("scrape.txt", r.body);
  CommandResult check = RunShell("promtool check metrics < " + file + " 2>&1");
  EXPECT_EQ(check.exit_code, 0) << check.out;
  EXPECT_EQ(check.out, "") << "promtool lint findings:\n" << check.out;
}

// Whether `text` is valid UTF-8, as glibc's iconv decides (not MemKV's own check).
bool IsUtf8(const std::string& text) {
  iconv_t cd = ::iconv_open("UTF-8", "UTF-8");
  if (cd == reinterpret_cast<iconv_t>(-1)) return false;
  std::string in = text;
  std::string out(text.size() + 16, '\0');
  char* in_p = in.data();
  char* out_p = out.data();
  size_t in_left = in.size(), out_left = out.size();
  const size_t r = ::iconv(cd, &in_p, &in_left, &out_p, &out_left);
  ::iconv_close(cd);
  return r != static_cast<size_t>(-1) && in_left == 0;
}

// A key namespace is any bytes; printed, bytes that are not UTF-8 become the
// four characters \xNN, in /metrics label values and /v1/status strings
// alike, so Prometheus accepts the scrape and the status stays JSON.
TEST_F(AdminTest, NamespacesThatAreNotUtf8ArePrintedWithEscapesInMetricsAndStatus) {
  Start(ServerSpec{});
  ASSERT_TRUE(client_->Put("caf\xc3\xa9/0", Pattern(10, 1)).ok());          // UTF-8: printed as is
  ASSERT_TRUE(client_->Put("bad\xff\xfe\"q/0", Pattern(10, 2)).ok());       // two bad bytes and a quote
  ASSERT_TRUE(client_->Put("cut\xe2\x82/0", Pattern(10, 3)).ok());          // a sequence cut short
  ASSERT_TRUE(client_->Put("sur\xed\xa0\x80/0", Pattern(10, 4)).ok());      // an encoded surrogate
  ASSERT_TRUE(client_->Get("bad\xff\xfe\"q/0").ok());

  HttpResult m = HttpRequestTo(admin_, "GET", "/v1/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_TRUE(IsUtf8(m.body)) << "the exposition must be UTF-8";
  EXPECT_NE(m.body.find("memkv_namespace_puts_total{namespace=\"caf\xc3\xa9\"} 1\n"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("memkv_namespace_puts_total{namespace=\"bad\\\\xff\\\\xfe\\\"q\"} 1\n"), std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("memkv_namespace_hits_total{namespace=\"bad\\\\xff\\\\xfe\\\"q\"} 1\n"), std::string::npos);
  EXPECT_NE(m.body.find("{namespace=\"cut\\\\xe2\\\\x82\"} 1\n"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("{namespace=\"sur\\\\xed\\\\xa0\\\\x80\"} 1\n"), std::string::npos) << m.body;
  if (RunShell("command -v promtool").exit_code == 0) {
    const std::string file = dir_.Write("scrape.txt", m.body);
    CommandResult check = RunShell("promtool check metrics < " + file + " 2>&1");
    EXPECT_EQ(check.exit_code, 0) << check.out;
  }

  HttpResult st = HttpRequestTo(admin_, "GET", "/v1/status");
  ASSERT_EQ(st.status, 200);
  EXPECT_TRUE(IsUtf8(st.body)) << "JSON text must be UTF-8";
  JsonValue j = ParseOk(st.body);
  std::vector<std::string> names;
  if (const JsonValue* list = j.Find("namespaces")) {
    for (const JsonValue& ns : list->array) names.push_back(Str(ns, {"name"}));
  }
  for (const char* want : {"caf\xc3\xa9", "bad\\xff\\xfe\"q", "cut\\xe2\\x82", "sur\\xed\\xa0\\x80"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want << "\n" << st.body;
  }
}

TEST_F(AdminTest, BadRequestsAreRefusedAndTheDataPlaneKeepsServing) {
  Start(FileModeSpec(dir_.path(), 1));
  EXPECT_EQ(HttpRequestTo(admin_, "GET", "/v1/nope").status, 404);
  HttpResult post = HttpRequestTo(admin_, "POST", "/v1/status");
  EXPECT_EQ(post.status, 405);
  EXPECT_NE(post.headers.find("Allow: GET"), std::string::npos) << post.headers;
  EXPECT_EQ(HttpRequestTo(admin_, "", "", 5000, "GARBAGE\r\n\r\n").status, 400);
  EXPECT_EQ(HttpRequestTo(admin_, "", "", 5000,
                          "GET /v1/health HTTP/1.1\r\nX-Big: " + std::string(64 * 1024, 'x') + "\r\n\r\n")
                .status,
            431);
  // A client that opens the admin port and never finishes its request does
  // not hold up the data plane.
  Result<UniqueFd> stuck = io::ConnectTcp("127.0.0.1", admin_, MonotonicNanos() + 2'000'000'000);
  ASSERT_TRUE(stuck.ok());
  ASSERT_EQ(::send(stuck->get(), "GET /v1/he", 10, MSG_NOSIGNAL), 10);
  ASSERT_TRUE(client_->Put("still", Pattern(2 << 20, 9)).ok());
  Result<std::vector<uint8_t>> got = client_->Get("still");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(*got == Pattern(2 << 20, 9));
  EXPECT_EQ(HttpRequestTo(admin_, "GET", "/v1/health").status, 200) << "the admin endpoint serves others meanwhile";
}

// Connections that open the admin port and send nothing (or half a request)
// held its 64 slots for the whole request timeout, so a probe found none
// free: /v1/health answered 503 nine times in ten and a liveness probe would
// restart a healthy server. A new connection now takes the slot of the
// oldest one without a complete request, so probes answer 200 every time.
TEST_F(AdminTest, HealthAndReadyAnswerWhileIdleConnectionsCrowdTheAdminPort) {
  ASSERT_TRUE(RaiseOpenFilesLimit(1024));
  Start(ServerSpec{});
  std::vector<UniqueFd> idle;
  auto open_idle = [&](int n) {
    for (int i = 0; i < n; ++i) {
      Result<UniqueFd> c = io::ConnectTcp("127.0.0.1", admin_, MonotonicNanos() + 2'000'000'000);
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      if (i % 3 == 0) {
        ASSERT_EQ(::send(c->get(), "GET /v1/st", 10, MSG_NOSIGNAL), 10);  // half a request
      }
      idle.push_back(std::move(c).value());
    }
  };
  open_idle(100);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(HttpRequestTo(admin_, "GET", "/v1/health").status, 200) << "probe " << i;
    EXPECT_EQ(HttpRequestTo(admin_, "GET", "/v1/ready").status, 200) << "probe " << i;
    open_idle(10);  // the crowd keeps coming back
  }
  // The crowd is bounded: at most max_connections of them are held, and the
  // server says why it closed the others, in one line per 10 s at most.
  const std::string err = server_.Stderr();
  const std::string line = "http server on port " + std::to_string(admin_) + ": 64 connections open";
  size_t lines = 0;
  for (size_t at = err.find(line); at != std::string::npos; at = err.find(line, at + 1)) ++lines;
  EXPECT_GE(lines, 1u) << err;
  EXPECT_LE(lines, 2u) << err;
  EXPECT_GT(Scrape()["memkv_admin_connections_shed_total"], 100.0);
}

TEST_F(AdminTest, HttpsWithASelfSignedCertificate) {
  if (RunShell("command -v openssl && command -v curl").exit_code != 0) {
    GTEST_SKIP() << "openssl and curl are needed (scripts/install-deps.sh installs them)";
  }
  const std::string cert = dir_.path() + "/admin.crt", key = dir_.path() + "/admin.key";
  CommandResult made = RunShell("openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -days 1 -keyout " +
                                key + " -out " + cert + " 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.out;
  ServerSpec spec = FileModeSpec(dir_.path(), 1);
  spec.network_yaml = "  tls_cert: " + cert + "\n  tls_key: " + key + "\n";
  Start(spec);
  EXPECT_NE(server_.Stderr().find("admin endpoint on https://"), std::string::npos) << server_.Stderr();
  CommandResult https = RunShell("curl -s --max-time 5 --cacert " + cert + " https://127.0.0.1:" +
                                 std::to_string(admin_) + "/v1/health");
  ASSERT_EQ(https.exit_code, 0) << https.out;
  EXPECT_EQ(Str(ParseOk(https.out), {"status"}), "healthy");
  EXPECT_NE(HttpRequestTo(admin_, "GET", "/v1/health").status, 200) << "plain HTTP on the HTTPS port";
  ASSERT_TRUE(client_->Put("tls", Pattern(100, 1)).ok());
}

TEST_F(AdminTest, ALostDriveMakesHealthDegradedNamingIt) {
  ServerSpec spec = FileModeSpec(dir_.path(), 2);
  {
    ServerProcess first;
    ASSERT_TRUE(first.Start(spec).ok());
    EXPECT_EQ(first.Stop(), 0);
  }
  ASSERT_EQ(::unlink((dir_.path() + "/d1.memkv").c_str()), 0);
  Start(spec);
  HttpResult health = HttpRequestTo(admin_, "GET", "/v1/health");
  EXPECT_EQ(health.status, 200) << "degraded still serves";
  JsonValue h = ParseOk(health.body);
  EXPECT_EQ(Str(h, {"status"}), "degraded");
  EXPECT_EQ(Num(h, {"drives_offline"}), 1);
  EXPECT_EQ(Num(h, {"drives_online"}), 1);
  EXPECT_NE(Str(h, {"reason"}).find("drive 1"), std::string::npos) << Str(h, {"reason"});
  EXPECT_EQ(Scrape()["memkv_health{status=\"degraded\"}"], 1);
}

}  // namespace
}  // namespace memkv::testing

namespace memkv::testing {
namespace {

// `memkv admin reload` against a real `memkv start`: signed with the key the
// CLI finds, refused with a wrong one, and the endpoint's other requests
// still open without a key.
TEST(AdminReloadCliTest, SignsWithTheAdministratorKeyAndReportsRefusals) {
  TempDir dir;
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok()) << server.Stderr();
  const uint16_t admin = server.AdminPort();
  const std::string url = "http://127.0.0.1:" + std::to_string(admin);
  auto write_key = [&](const std::string& name, const std::string& hex) {
    const std::string path = dir.path() + "/" + name;
    std::ofstream(path) << hex << "\n";
    ::chmod(path.c_str(), 0600);
    return path;
  };
  auto failures = [&](const std::string& reason) {
    HttpResult r = HttpRequestTo(admin, "GET", "/v1/metrics");
    return PrometheusSamples(r.body)["memkv_admin_auth_failures_total{reason=\"" + reason + "\"}"];
  };

  // The right key, from a key file: the signature is accepted. The server
  // either reloads (0, its JSON report) or, without a reload to run, says
  // it needs a config file (6, the server's message) -- never 401.
  const std::string good = write_key("good.key", kTestKeyHex);
  CommandResult r = RunMemkv({"admin", "reload", "--server", url, "--key-file", good}, {});
  if (r.exit_code == 0) {
    EXPECT_EQ(r.out.rfind("{", 0), 0u) << r.out;
  } else {
    EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
    EXPECT_NE(r.err.find("HTTP 409"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("reload needs a config file"), std::string::npos) << r.err;
  }
  EXPECT_EQ(failures("signature"), 0) << r.err;
  EXPECT_EQ(failures("missing"), 0);

  // The same key from MEMKV_AUTH_KEY, as the client verbs take it.
  CommandResult env = RunMemkv({"admin", "reload", url}, {{"MEMKV_AUTH_KEY", kTestKeyHex}});
  EXPECT_EQ(env.exit_code, r.exit_code) << env.out << env.err;
  EXPECT_EQ(failures("signature"), 0) << env.err;

  // A wrong key: refused, exit 5, the server's reason on stderr.
  const std::string wrong = write_key("wrong.key", std::string(64, 'e'));
  r = RunMemkv({"admin", "reload", "--server", url, "--key-file", wrong}, {});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.err.find("HTTP 401"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wrong signature"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(failures("signature"), 1);

  // No usable key: a configuration error before anything is sent.
  const std::string bad = write_key("bad.key", "not-hex");
  r = RunMemkv({"admin", "reload", "--server", url, "--key-file", bad}, {});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("--key-file " + bad), std::string::npos) << r.err;

  // Unsigned, by hand: 401 naming the expected header.
  HttpResult unsigned_post = HttpRequestTo(admin, "POST", "/v1/admin/reload");
  EXPECT_EQ(unsigned_post.status, 401) << unsigned_post.body;
  EXPECT_NE(unsigned_post.body.find("MemKV-HMAC-SHA256 ts=<unix ms>, nonce=<32 hex>, sig=<64 hex>"),
            std::string::npos)
      << unsigned_post.body;
  EXPECT_EQ(failures("missing"), 1);

  // The read-only requests stay open.
  for (const char* path : {"/v1/health", "/v1/ready", "/v1/status", "/v1/metrics"}) {
    EXPECT_EQ(HttpRequestTo(admin, "GET", path).status, 200) << path;
  }
  // Usage errors.
  EXPECT_EQ(RunMemkv({"admin", "status", "--key-file", good}, {}).exit_code, 2);
  EXPECT_EQ(RunMemkv({"admin", "reload", "--json", url}, {}).exit_code, 2);
}

}  // namespace
}  // namespace memkv::testing
