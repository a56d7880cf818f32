// Signed admin requests against a real AdminService on loopback (its HTTP
// server, the HTTP client memkv admin uses, raw sockets for what no client
// would send). The reload it serves is a function of this test's own.
#include "server/admin_auth.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/bytes.h"
#include "base/clock.h"
#include "base/json.h"
#include "http/http_client.h"
#include "io/socket.h"
#include "server/admin.h"
#include "storage/memory_store.h"
#include "tier/tiered_store.h"

namespace memkv::server {
namespace {

constexpr std::string_view kReload = "/v1/admin/reload";

std::vector<uint8_t> Key(uint8_t fill) { return std::vector<uint8_t>(32, fill); }

class AdminAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage::MemoryStoreOptions mo;
    mo.max_size_bytes = 8 << 20;
    mo.block_size_bytes = 1 << 20;
    mo.hugepages = storage::HugePagePolicy::kNever;
    auto memory = storage::MemoryStore::Create(mo);
    ASSERT_TRUE(memory.ok()) << memory.status().ToString();
    tier_ = std::make_unique<tier::TieredStore>(std::move(memory).value(), nullptr, tier::TieredStoreOptions{});
    StartAdmin(true);
  }
  void StartAdmin(bool with_reload) {
    admin_.reset();
    AdminOptions options;
    options.host = "127.0.0.1";
    options.admin_key = key_;
    AdminSources sources;
    sources.metrics = &metrics_;
    sources.tier = tier_.get();
    sources.storage_mode = "memory";
    sources.version = "test";
    sources.serving = [] { return true; };
    if (with_reload) {
      sources.reload = [this]() -> Result<std::string> {
        reloads_.fetch_add(1);
        return std::string("{\"reloaded\": true}");
      };
    }
    auto admin = AdminService::Start(options, sources);
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    admin_ = std::move(admin).value();
  }

  // A request through the HTTP client `memkv admin` uses.
  http::HttpClientResponse Send(const std::string& method, std::string_view path, const std::string& body,
                                std::vector<http::HttpHeader> headers) {
    http::HttpGetOptions o;
    o.host = "127.0.0.1";
    o.port = admin_->port();
    o.path = std::string(path);
    o.method = method;
    o.body = body;
    o.headers = std::move(headers);
    auto r = http::HttpGet(o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : http::HttpClientResponse{};
  }
  static std::string Nonce() { return *NewAdminNonce(); }
  std::string Sign(const std::vector<uint8_t>& key, std::string_view body = "", int64_t skew_ms = 0,
                   std::string nonce = "", std::string_view method = "POST", std::string_view path = kReload) {
    return SignAdminRequest(key, method, path, body, UnixMillis() + skew_ms, nonce.empty() ? Nonce() : nonce);
  }
  http::HttpClientResponse Reload(const std::string& authorization, const std::string& body = "") {
    std::vector<http::HttpHeader> h;
    if (!authorization.empty()) h.push_back({"Authorization", authorization});
    return Send("POST", kReload, body, std::move(h));
  }
  uint64_t Failures(AdminAuthFailure why) { return metrics_.admin_auth_failures[static_cast<size_t>(why)].Value(); }
  std::string ErrorOf(const http::HttpClientResponse& r) {
    auto j = ParseJson(r.body);
    EXPECT_TRUE(j.ok()) << r.body;
    const JsonValue* e = j.ok() ? j->Find("error") : nullptr;
    return e == nullptr ? "<no error field: " + r.body + ">" : e->string;
  }
  // The raw bytes of whatever the server answers to `request`.
  std::string Raw(const std::string& request) {
    auto fd = io::ConnectTcp("127.0.0.1", admin_->port(), MonotonicNanos() + 5'000'000'000);
    EXPECT_TRUE(fd.ok());
    if (!fd.ok()) return "";
    iovec v{const_cast<char*>(request.data()), request.size()};
    Status s = io::SendAll(fd->get(), std::span<iovec>(&v, 1), MonotonicNanos() + 5'000'000'000);
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::string out;
    const Nanos deadline = MonotonicNanos() + 5'000'000'000;
    char buf[4096];
    while (MonotonicNanos() < deadline) {
      pollfd p{fd->get(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      ssize_t n = ::recv(fd->get(), buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

  std::vector<uint8_t> key_ = Key(0x5a);
  ServerMetrics metrics_;
  std::unique_ptr<tier::TieredStore> tier_;
  std::unique_ptr<AdminService> admin_;
  std::atomic<int> reloads_{0};
};

TEST_F(AdminAuthTest, SignedReloadRunsAndAnswersItsReport) {
  http::HttpClientResponse r = Reload(Sign(key_));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "{\"reloaded\": true}\n");
  EXPECT_EQ(reloads_.load(), 1);
  // A second signed request (its own nonce) runs too.
  EXPECT_EQ(Reload(Sign(key_)).status, 200);
  EXPECT_EQ(reloads_.load(), 2);
}

TEST_F(AdminAuthTest, NoHeaderIsRefusedNamingTheExpectedForm) {
  http::HttpClientResponse r = Reload("");
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(ErrorOf(r).find("must be signed"), std::string::npos) << r.body;
  EXPECT_NE(ErrorOf(r).find(kAdminAuthForm), std::string::npos) << r.body;
  EXPECT_EQ(r.Header("www-authenticate").value_or(""), kAdminAuthScheme);
  EXPECT_EQ(reloads_.load(), 0);
  EXPECT_EQ(Failures(AdminAuthFailure::kMissing), 1u);
}

TEST_F(AdminAuthTest, WrongKeyIsRefused) {
  http::HttpClientResponse r = Reload(Sign(Key(0x5b)));
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(ErrorOf(r).find("wrong signature"), std::string::npos) << r.body;
  EXPECT_EQ(reloads_.load(), 0);
  EXPECT_EQ(Failures(AdminAuthFailure::kSignature), 1u);
}

TEST_F(AdminAuthTest, TamperedBodyMethodOrPathIsRefused) {
  // Signed over one body, sent with another.
  http::HttpClientResponse r = Reload(Sign(key_, "{\"a\":1}"), "{\"a\":2}");
  EXPECT_EQ(r.status, 401) << r.body;
  // Signed for another path or method.
  EXPECT_EQ(Reload(Sign(key_, "", 0, "", "POST", "/v1/admin/drain")).status, 401);
  EXPECT_EQ(Reload(Sign(key_, "", 0, "", "GET")).status, 401);
  // The same signature over the right body passes.
  EXPECT_EQ(Reload(Sign(key_, "{\"a\":2}"), "{\"a\":2}").status, 200);
  EXPECT_EQ(reloads_.load(), 1);
  EXPECT_EQ(Failures(AdminAuthFailure::kSignature), 3u);
}

TEST_F(AdminAuthTest, ReplayedRequestIsRefusedTheSecondTime) {
  const std::string header = Sign(key_);
  EXPECT_EQ(Reload(header).status, 200);
  http::HttpClientResponse again = Reload(header);
  EXPECT_EQ(again.status, 401);
  EXPECT_NE(ErrorOf(again).find("replayed"), std::string::npos) << again.body;
  EXPECT_EQ(reloads_.load(), 1);
  EXPECT_EQ(Failures(AdminAuthFailure::kReplayed), 1u);
}

TEST_F(AdminAuthTest, StaleAndFutureTimestampsAreRefusedNamingTheSkew) {
  http::HttpClientResponse stale = Reload(Sign(key_, "", -400'000));
  EXPECT_EQ(stale.status, 401);
  EXPECT_NE(ErrorOf(stale).find("behind the server's clock"), std::string::npos) << stale.body;
  EXPECT_NE(ErrorOf(stale).find("300.0 s"), std::string::npos) << stale.body;
  http::HttpClientResponse future = Reload(Sign(key_, "", 400'000));
  EXPECT_EQ(future.status, 401);
  EXPECT_NE(ErrorOf(future).find("ahead of the server's clock"), std::string::npos) << future.body;
  // Well inside the window either way: accepted.
  EXPECT_EQ(Reload(Sign(key_, "", -200'000)).status, 200);
  EXPECT_EQ(Reload(Sign(key_, "", 200'000)).status, 200);
  EXPECT_EQ(reloads_.load(), 2);
  EXPECT_EQ(Failures(AdminAuthFailure::kSkew), 2u);
}

TEST_F(AdminAuthTest, MalformedHeadersAreRefusedSayingWhatIsWrong) {
  const std::string good = Sign(key_);
  const std::string nonce(32, 'a');
  const std::string sig(64, 'b');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"Bearer abc", "does not start with"},
      {"MemKV-HMAC-SHA256", "does not start with"},
      {"memkv-hmac-sha256 ts=1, nonce=" + nonce + ", sig=" + sig, "does not start with"},
      {"MemKV-HMAC-SHA256 nonce=" + nonce + ", ts=1, sig=" + sig, "expected 'ts='"},
      {"MemKV-HMAC-SHA256 ts=1,nonce=" + nonce + ", sig=" + sig, "expected 'nonce=' after ', '"},
      {"MemKV-HMAC-SHA256 ts=1 nonce=" + nonce + " sig=" + sig, "separated by ', '"},
      {"MemKV-HMAC-SHA256 ts=, nonce=" + nonce + ", sig=" + sig, "ts must be"},
      {"MemKV-HMAC-SHA256 ts=-5, nonce=" + nonce + ", sig=" + sig, "ts must be"},
      {"MemKV-HMAC-SHA256 ts=12345678901234567, nonce=" + nonce + ", sig=" + sig, "ts must be"},
      {"MemKV-HMAC-SHA256 ts=1, nonce=abc, sig=" + sig, "nonce must be"},
      {"MemKV-HMAC-SHA256 ts=1, nonce=" + std::string(32, 'A') + ", sig=" + sig, "nonce must be"},
      {"MemKV-HMAC-SHA256 ts=1, nonce=" + nonce + ", sig=" + sig.substr(1), "sig must be"},
      {"MemKV-HMAC-SHA256 ts=1, nonce=" + nonce + ", sig=" + sig + "0", "sig must be"},
      {"MemKV-HMAC-SHA256 ts=1, nonce=" + nonce + ", sig=" + std::string(64, 'g'), "sig must be"},
      {good + ", extra=1", "sig must be"},
  };
  for (const auto& [header, why] : cases) {
    http::HttpClientResponse r = Reload(header);
    EXPECT_EQ(r.status, 401) << header;
    EXPECT_NE(ErrorOf(r).find("malformed Authorization header"), std::string::npos) << header << ": " << r.body;
    EXPECT_NE(ErrorOf(r).find(why), std::string::npos) << header << ": " << r.body;
  }
  EXPECT_EQ(reloads_.load(), 0);
  EXPECT_EQ(Failures(AdminAuthFailure::kMalformed), cases.size());
  // The good one was never used: it still passes.
  EXPECT_EQ(Reload(good).status, 200);
}

TEST_F(AdminAuthTest, OversizedBodyIs413UnreadAndTheServerKeepsServing) {
  // Announced over the limit: answered 413 before the body is sent at all.
  std::string head = "POST /v1/admin/reload HTTP/1.1\r\nHost: x\r\nAuthorization: " + Sign(key_, "") +
                     "\r\nContent-Length: 10000000\r\n\r\n";
  std::string answer = Raw(head + std::string(1000, 'x'));
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  EXPECT_NE(answer.find("over the limit of " + std::to_string(kAdminMaxBodyBytes) + " bytes"), std::string::npos)
      << answer;
  // Chunked bodies have no length to check up front: refused too.
  answer = Raw("POST /v1/admin/reload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  EXPECT_EQ(reloads_.load(), 0);
  // A body at the limit, signed, is read whole and passes.
  const std::string body(kAdminMaxBodyBytes, 'y');
  EXPECT_EQ(Reload(Sign(key_, body), body).status, 200);
  // The read-only routes are still served.
  EXPECT_EQ(Send("GET", "/v1/health", "", {}).status, 200);
}

TEST_F(AdminAuthTest, ABodyThatNeverArrivesWholeIsTimedOutNotDispatched) {
  // The head promises 100 bytes, 10 arrive: the read deadline (5 s) answers
  // 408 and the handler never runs.
  std::string answer = Raw("POST /v1/admin/reload HTTP/1.1\r\nHost: x\r\nAuthorization: " + Sign(key_, "") +
                           "\r\nContent-Length: 100\r\n\r\n0123456789");
  EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
  EXPECT_EQ(reloads_.load(), 0);
}

TEST_F(AdminAuthTest, ReadOnlyRoutesStayOpenWithoutAHeader) {
  for (const char* path : {"/v1/health", "/v1/ready", "/v1/status", "/v1/metrics", "/metrics"}) {
    EXPECT_EQ(Send("GET", path, "", {}).status, 200) << path;
  }
  // And a failure is counted by reason in the metrics.
  Reload("");
  http::HttpClientResponse m = Send("GET", "/v1/metrics", "", {});
  EXPECT_NE(m.body.find("memkv_admin_auth_failures_total{reason=\"missing\"} 1"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("memkv_admin_auth_failures_total{reason=\"replayed\"} 0"), std::string::npos);
}

TEST_F(AdminAuthTest, RotatedKeyTakesOverAtOnce) {
  const std::vector<uint8_t> next = Key(0x77);
  admin_->SetAdminKey(next);
  EXPECT_EQ(Reload(Sign(key_)).status, 401);
  EXPECT_EQ(Reload(Sign(next)).status, 200);
  // No key at all: every signed request is refused, saying so.
  admin_->SetAdminKey({});
  http::HttpClientResponse r = Reload(Sign(next));
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(ErrorOf(r).find("no administrator key"), std::string::npos) << r.body;
}

TEST_F(AdminAuthTest, WithoutAReloadFunctionSignedReloadIs409) {
  StartAdmin(false);
  http::HttpClientResponse r = Reload(Sign(key_));
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(ErrorOf(r).find("reload needs a config file"), std::string::npos) << r.body;
  // Unsigned is still 401 first: nothing about the server is told.
  EXPECT_EQ(Reload("").status, 401);
}

// The authenticator alone, with a clock of the test's own.
TEST(AdminAuthenticatorTest, NonceSetIsBoundedRefusingNewOnesUntilOldOnesExpire) {
  AdminAuthenticator auth(/*window_ms=*/1000, /*max_nonces=*/3);
  const std::vector<uint8_t> key = Key(1);
  auth.SetKey(key);
  const int64_t t0 = 1'700'000'000'000;
  auto check = [&](int64_t ts, int64_t now, const std::string& nonce) {
    return auth.Check("POST", kReload, SignAdminRequest(key, "POST", kReload, "", ts, nonce), "", now);
  };
  const std::string n[] = {std::string(31, '0') + "1", std::string(31, '0') + "2", std::string(31, '0') + "3",
                           std::string(31, '0') + "4"};
  EXPECT_TRUE(check(t0, t0, n[0]).ok());
  EXPECT_TRUE(check(t0 + 100, t0 + 100, n[1]).ok());
  EXPECT_TRUE(check(t0 + 200, t0 + 200, n[2]).ok());
  AdminAuthenticator::Verdict full = check(t0 + 300, t0 + 300, n[3]);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(*full.failure, AdminAuthFailure::kNoncesFull);
  EXPECT_EQ(full.http_status, 429);
  // A remembered nonce is still refused as a replay while the set is full.
  EXPECT_EQ(*check(t0 + 300, t0 + 300, n[0]).failure, AdminAuthFailure::kReplayed);
  // Once the first nonce's timestamp leaves the window it is forgotten, and
  // its replay fails the skew check instead.
  EXPECT_TRUE(check(t0 + 1050, t0 + 1050, n[3]).ok());
  EXPECT_EQ(*check(t0, t0 + 1050, n[0]).failure, AdminAuthFailure::kSkew);
  EXPECT_EQ(auth.nonces_held(), 3u);
}

TEST(AdminAuthenticatorTest, TheSignatureCoversExactlyTheDocumentedBytes) {
  // docs/admin.md's worked example.
  const std::vector<uint8_t> key(32, 0x11);
  const std::string header =
      SignAdminRequest(key, "POST", "/v1/admin/reload", "", 1767225600000, "00112233445566778899aabbccddeeff");
  EXPECT_EQ(AdminStringToSign("POST", "/v1/admin/reload", "1767225600000", "00112233445566778899aabbccddeeff", ""),
            "memkv admin v1\nPOST\n/v1/admin/reload\n1767225600000\n00112233445566778899aabbccddeeff\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // Computed independently with openssl(1), as docs/admin.md shows.
  const Key32 derived = DeriveAdminKey(key);
  EXPECT_EQ(HexEncode(derived.data(), derived.size()),
            "fc59e05736096c3b8a0516b185130666d0b133d018e6bb19b4529a9ee4dc730a");
  EXPECT_EQ(header,
            "MemKV-HMAC-SHA256 ts=1767225600000, nonce=00112233445566778899aabbccddeeff, "
            "sig=a44039cc276314c4cf38d7dff185bbd7e269d25581595f902b6fcccb89964391");
}

}  // namespace
}  // namespace memkv::server
