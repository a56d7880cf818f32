// HttpGet: the response parser alone, then real exchanges on 127.0.0.1 with
// the HttpServer (plain and HTTPS, certificates made by the openssl command)
// and with scripted peers that answer oddly, stay silent or are not there.
#include "http/http_client.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "http/http_server.h"
#include "http/http_test_util.h"
#include "io/socket.h"

namespace memkv::http {
namespace {

using testing::DeadlineIn;
using testing::HaveCommand;
using testing::RunShell;
using memkv::testing::TempDir;

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ------------------------------------------------------------ the parser

TEST(HttpResponseParseTest, StatusLineAndHeaders) {
  Result<HttpResponseHead> h =
      ParseResponseHead("HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nX-Thing:  a b \r\nContent-Length: 7\r\n\r\n");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->response.status, 404);
  EXPECT_EQ(h->response.reason, "Not Found");
  ASSERT_EQ(h->response.headers.size(), 3u);
  EXPECT_EQ(h->response.headers[0].name, "content-type");
  EXPECT_EQ(h->response.Header("X-THING").value_or(""), "a b");
  EXPECT_EQ(h->content_length, 7u);
  EXPECT_FALSE(h->chunked);
  EXPECT_FALSE(h->no_body);
}

TEST(HttpResponseParseTest, BareLineFeedsAndEmptyReason) {
  Result<HttpResponseHead> h = ParseResponseHead("HTTP/1.0 200\nServer: x\n\n");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->response.status, 200);
  EXPECT_EQ(h->response.reason, "");
  EXPECT_FALSE(h->content_length.has_value());
}

TEST(HttpResponseParseTest, NoBodyStatusesAndChunkedOverLength) {
  for (const char* head : {"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", "HTTP/1.1 304 x\r\n\r\n",
                           "HTTP/1.1 101 Switching\r\n\r\n"}) {
    Result<HttpResponseHead> h = ParseResponseHead(head);
    ASSERT_TRUE(h.ok()) << head;
    EXPECT_TRUE(h->no_body) << head;
  }
  Result<HttpResponseHead> h =
      ParseResponseHead("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: Chunked\r\n\r\n");
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->chunked);
  EXPECT_FALSE(h->content_length.has_value());
}

TEST(HttpResponseParseTest, RefusesMalformedHeads) {
  const struct {
    const char* head;
    const char* why;
  } kCases[] = {
      {"HTTP/2 200 OK\r\n\r\n", "status line"},
      {"HTTP/1.1 20 OK\r\n\r\n", "status"},
      {"HTTP/1.1 2000 OK\r\n\r\n", "status code"},
      {"HTTP/1.1 099 x\r\n\r\n", "status code"},
      {"HTTP/1.1 700 x\r\n\r\n", "out of range"},
      {"SSH-2.0-OpenSSH_9.6\r\n\r\n", "status line"},
      {"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "without ':'"},
      {"HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n", "folding"},
      {"HTTP/1.1 200 OK\r\nBad Name: b\r\n\r\n", "header name"},
      {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "conflicting"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", "Content-Length"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "Transfer-Encoding"},
      {"HTTP/1.1 200 OK\r\n", "empty line"},
  };
  for (const auto& c : kCases) {
    Result<HttpResponseHead> h = ParseResponseHead(c.head);
    ASSERT_FALSE(h.ok()) << c.head;
    EXPECT_EQ(h.status().code(), StatusCode::kProtocolError) << c.head;
    EXPECT_TRUE(Contains(h.status().message(), c.why)) << c.head << " -> " << h.status().message();
  }
}

TEST(HttpResponseParseTest, EveryTruncationOfAHeadIsRefusedOrParsed) {
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n";
  for (size_t cut = 0; cut < head.size(); ++cut) {
    Result<HttpResponseHead> h = ParseResponseHead(std::string_view(head).substr(0, cut));
    EXPECT_FALSE(h.ok()) << cut;  // never a complete head before the end
  }
  EXPECT_TRUE(ParseResponseHead(head).ok());
}

TEST(HttpResponseParseTest, ChunkedBodies) {
  const std::string body = "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nTrailer: x\r\n\r\n";
  Result<std::string> decoded = DecodeChunked(body);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, "hello, world");
  EXPECT_TRUE(ChunkedComplete(body));
  for (size_t cut = 0; cut < body.size(); ++cut) {
    EXPECT_FALSE(ChunkedComplete(std::string_view(body).substr(0, cut))) << cut;
    EXPECT_FALSE(DecodeChunked(std::string_view(body).substr(0, cut)).ok()) << cut;
  }
  EXPECT_EQ(*DecodeChunked("A\nabcdefghij\n0\n\n"), "abcdefghij");  // bare LFs, upper-case hex
  EXPECT_FALSE(DecodeChunked("zz\r\nab\r\n0\r\n\r\n").ok());
  EXPECT_FALSE(DecodeChunked("2\r\nabc\r\n0\r\n\r\n").ok());           // data longer than its size
  EXPECT_FALSE(DecodeChunked("ffffffffffffffffff\r\n").ok());          // size over 64 bits
}

// ------------------------------------------------- against the real server

std::unique_ptr<HttpServer> StartServer(HttpServerOptions options = {}, size_t big_bytes = 0) {
  Result<std::unique_ptr<HttpServer>> created = HttpServer::Create(options);
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  if (!created.ok()) return nullptr;
  auto server = std::move(created).value();
  EXPECT_TRUE(server->Handle("GET", "/v1/status", [](const HttpRequest& r) {
                      HttpResponse out;
                      out.content_type = "application/json";
                      out.body = "{\"ok\": true, \"host\": \"" + std::string(r.Header("host").value_or("")) + "\"}\n";
                      return out;
                    }).ok());
  EXPECT_TRUE(server->Handle("GET", "/big", [big_bytes](const HttpRequest&) {
                      std::string body(big_bytes, 'x');
                      for (size_t i = 0; i < body.size(); i += 4093) body[i] = char('a' + i % 26);
                      return HttpResponse::Text(200, body);
                    }).ok());
  EXPECT_TRUE(server->Start().ok());
  return server;
}

HttpGetOptions Local(uint16_t port, const std::string& path = "/v1/status") {
  HttpGetOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.path = path;
  o.timeout_ms = 10000;
  return o;
}

TEST(HttpClientTest, GetsAStatusDocumentOverPlainHttp) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  Result<HttpClientResponse> r = HttpGet(Local(server->port()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->reason, "OK");
  EXPECT_EQ(r->Header("content-type").value_or(""), "application/json");
  EXPECT_EQ(r->body, "{\"ok\": true, \"host\": \"127.0.0.1:" + std::to_string(server->port()) + "\"}\n");
}

TEST(HttpClientTest, AnErrorStatusIsAResponseNotAnError) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  Result<HttpClientResponse> r = HttpGet(Local(server->port(), "/v1/missing"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 404);
  EXPECT_FALSE(r->body.empty());
}

TEST(HttpClientTest, LargeBodyArrivesWholeAndTheCapRefusesABiggerOne) {
  const size_t kBig = 3 * 1024 * 1024 + 17;
  auto server = StartServer({}, kBig);
  ASSERT_NE(server, nullptr);
  Result<HttpClientResponse> r = HttpGet(Local(server->port(), "/big"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->body.size(), kBig);
  std::string want(kBig, 'x');
  for (size_t i = 0; i < want.size(); i += 4093) want[i] = char('a' + i % 26);
  EXPECT_TRUE(r->body == want);

  HttpGetOptions small = Local(server->port(), "/big");
  small.max_response_bytes = 1024 * 1024;
  r = HttpGet(small);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooLarge);
  EXPECT_TRUE(Contains(r.status().message(), "1048576")) << r.status().message();
}

TEST(HttpClientTest, RefusedPortNamesTheAddress) {
  uint16_t port = 0;
  {
    Result<UniqueFd> l = io::ListenTcp("127.0.0.1", 0, 1);
    ASSERT_TRUE(l.ok());
    port = *io::LocalPort(l->get());
  }  // closed: nothing listens there now
  Result<HttpClientResponse> r = HttpGet(Local(port));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(r.status().message(), "http://127.0.0.1:" + std::to_string(port) + "/v1/status"))
      << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "refused")) << r.status().message();
}

TEST(HttpClientTest, BadOptionsAreInvalidArgument) {
  HttpGetOptions o = Local(9);
  o.path = "v1/status";
  EXPECT_EQ(HttpGet(o).status().code(), StatusCode::kInvalidArgument);
  o = Local(0);
  EXPECT_EQ(HttpGet(o).status().code(), StatusCode::kInvalidArgument);
  o = Local(9);
  o.timeout_ms = 0;
  EXPECT_EQ(HttpGet(o).status().code(), StatusCode::kInvalidArgument);
}

// A listener that accepts one connection and, by `mode`: reads the request
// head and answers with `reply`, then closes (kAnswer); answers as soon as
// any byte arrives (kAnswerAtOnce: a TLS ClientHello has no head end);
// answers nothing and holds the connection until destroyed (kSilent); or
// never accepts, so the kernel completes the TCP handshake and nothing more
// happens (kNeverAccept).
class ScriptedPeer {
 public:
  enum class Mode { kAnswer, kAnswerAtOnce, kSilent, kNeverAccept };
  explicit ScriptedPeer(std::string reply, Mode mode = Mode::kAnswer) {
    Result<UniqueFd> l = io::ListenTcp("127.0.0.1", 0, 4);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    listener_ = std::move(l).value();
    port_ = *io::LocalPort(listener_.get());
    if (mode == Mode::kNeverAccept) return;
    thread_ = std::thread([this, reply = std::move(reply), mode] { Serve(reply, mode); });
  }
  ~ScriptedPeer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return port_; }
  // What the client sent; waits for the peer to finish (kAnswer, kAnswerAtOnce).
  const std::string& request() {
    if (thread_.joinable()) thread_.join();
    return request_;
  }

 private:
  bool WaitFor(int fd, short events) {
    while (!stop_) {
      pollfd p{fd, events, 0};
      if (::poll(&p, 1, 10) > 0) return true;
    }
    return false;
  }
  void Serve(const std::string& reply, Mode mode) {
    if (!WaitFor(listener_.get(), POLLIN)) return;
    UniqueFd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!conn.valid()) return;
    char buf[4096];
    while (WaitFor(conn.get(), POLLIN)) {
      ssize_t n = ::recv(conn.get(), buf, sizeof(buf), 0);
      if (n <= 0) break;
      request_.append(buf, static_cast<size_t>(n));
      if (mode == Mode::kAnswerAtOnce || request_.find("\r\n\r\n") != std::string::npos) break;
    }
    if (mode == Mode::kSilent) {
      while (!stop_) ::poll(nullptr, 0, 10);
      return;
    }
    iovec v{const_cast<char*>(reply.data()), reply.size()};
    (void)io::SendAll(conn.get(), std::span<iovec>(&v, 1), DeadlineIn(10000));
  }

  UniqueFd listener_;
  uint16_t port_ = 0;
  std::string request_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(HttpClientTest, SendsAMinimalRequestThatAsksForClose) {
  ScriptedPeer peer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  Result<HttpClientResponse> r = HttpGet(Local(peer.port(), "/v1/status?x=1"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "ok");
  EXPECT_EQ(peer.request().rfind("GET /v1/status?x=1 HTTP/1.1\r\n", 0), 0u) << peer.request();
  EXPECT_TRUE(Contains(peer.request(), "\r\nConnection: close\r\n")) << peer.request();
  EXPECT_TRUE(Contains(peer.request(), "\r\nHost: 127.0.0.1:" + std::to_string(peer.port()) + "\r\n"));
}

TEST(HttpClientTest, ReadsChunkedAndCloseDelimitedBodies) {
  {
    ScriptedPeer peer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
    Result<HttpClientResponse> r = HttpGet(Local(peer.port()));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, "abcde");
  }
  {
    ScriptedPeer peer("HTTP/1.0 200 OK\r\n\r\nuntil the close");
    Result<HttpClientResponse> r = HttpGet(Local(peer.port()));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, "until the close");
  }
}

TEST(HttpClientTest, TruncatedOrMalformedResponsesAreProtocolErrors) {
  const struct {
    const char* reply;
    const char* why;
  } kCases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "5 of 10 body bytes"},
      {"HTTP/1.1 200 OK\r\nContent-Le", "before the end of the response head"},
      {"", "without a response"},
      {"SSH-2.0-OpenSSH_9.6\r\n\r\n", "malformed response"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "before its last chunk"},
  };
  for (const auto& c : kCases) {
    ScriptedPeer peer(c.reply);
    Result<HttpClientResponse> r = HttpGet(Local(peer.port()));
    ASSERT_FALSE(r.ok()) << c.reply;
    EXPECT_EQ(r.status().code(), StatusCode::kProtocolError) << r.status().ToString();
    EXPECT_TRUE(Contains(r.status().message(), c.why)) << r.status().message();
    EXPECT_TRUE(Contains(r.status().message(), "127.0.0.1:" + std::to_string(peer.port())));
  }
}

// The deadline covers the whole exchange: a peer that accepts and never
// answers, or never even accepts, costs the timeout and no more.
TEST(HttpClientTest, SilentPeersTimeOutAtTheDeadline) {
  for (ScriptedPeer::Mode mode : {ScriptedPeer::Mode::kSilent, ScriptedPeer::Mode::kNeverAccept}) {
    for (bool https : {false, true}) {
      ScriptedPeer peer("", mode);
      HttpGetOptions o = Local(peer.port());
      o.timeout_ms = 300;
      o.https = https;
      o.insecure = true;
      const Nanos start = MonotonicNanos();
      Result<HttpClientResponse> r = HttpGet(o);
      const Nanos took_ms = (MonotonicNanos() - start) / 1'000'000;
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
      EXPECT_TRUE(Contains(r.status().message(), https ? "TLS handshake timed out" : "reading the response timed out"))
          << r.status().message();
      EXPECT_GE(took_ms, 290);
      EXPECT_LT(took_ms, 3000);
    }
  }
}

// ----------------------------------------------------------------- HTTPS

class HttpClientTlsTest : public ::testing::Test {
 protected:
  // san: a certificate naming 127.0.0.1 as an IP subjectAltName (what a
  // verifying client needs); cn: CN=127.0.0.1 only; other: another CA.
  static void SetUpTestSuite() {
    if (!HaveCommand("openssl")) return;
    dir_ = new TempDir();
    const std::string make = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 ";
    for (const auto& [name, extra] : {std::pair<std::string, std::string>{"san", "-addext subjectAltName=IP:127.0.0.1 "},
                                      {"cn", ""},
                                      {"other", "-addext subjectAltName=IP:127.0.0.1 "}}) {
      int status = 0;
      std::string out = RunShell(make + extra + "-keyout " + dir_->File(name + ".key") + " -out " +
                                     dir_->File(name + ".crt") + " 2>&1",
                                 &status);
      if (status != 0) {
        ADD_FAILURE() << "openssl req failed: " << out;
        return;
      }
    }
    have_certs_ = true;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!HaveCommand("openssl")) GTEST_SKIP() << "the openssl command is not installed";
    ASSERT_TRUE(have_certs_);
  }

  static std::string Crt(const std::string& name) { return dir_->File(name + ".crt"); }

  std::unique_ptr<HttpServer> StartTls(const std::string& name) {
    HttpServerOptions options;
    options.tls = CreateOpenSslServer;
    options.tls_cert_path = Crt(name);
    options.tls_key_path = dir_->File(name + ".key");
    return StartServer(options);
  }

  static HttpGetOptions Https(uint16_t port, const std::string& ca_file, bool insecure = false) {
    HttpGetOptions o = Local(port);
    o.https = true;
    o.ca_file = ca_file;
    o.insecure = insecure;
    return o;
  }

  static TempDir* dir_;
  static bool have_certs_;
};

TempDir* HttpClientTlsTest::dir_ = nullptr;
bool HttpClientTlsTest::have_certs_ = false;

TEST_F(HttpClientTlsTest, VerifiesTheServerAgainstTheCaFile) {
  auto server = StartTls("san");
  ASSERT_NE(server, nullptr);
  Result<HttpClientResponse> r = HttpGet(Https(server->port(), Crt("san")));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(Contains(r->body, "\"ok\": true"));
  EXPECT_EQ(server->stats().tls_handshake_failures, 0u);
}

TEST_F(HttpClientTlsTest, InsecureSkipsVerification) {
  auto server = StartTls("cn");
  ASSERT_NE(server, nullptr);
  Result<HttpClientResponse> r = HttpGet(Https(server->port(), "", /*insecure=*/true));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpClientTlsTest, VerificationFailuresSayWhichCheckFailed) {
  auto server = StartTls("san");
  ASSERT_NE(server, nullptr);
  // Another CA: the chain does not verify.
  Result<HttpClientResponse> r = HttpGet(Https(server->port(), Crt("other")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(r.status().message(), "TLS handshake: certificate verify failed: self-signed certificate"))
      << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), Crt("other"))) << r.status().message();
  // The system store does not know a self-signed certificate either.
  r = HttpGet(Https(server->port(), ""));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "system's trusted certificates")) << r.status().message();

  // A trusted certificate that does not name the address (CN only, no
  // subjectAltName): the host check fails.
  auto cn_only = StartTls("cn");
  ASSERT_NE(cn_only, nullptr);
  r = HttpGet(Https(cn_only->port(), Crt("cn")));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "IP address mismatch")) << r.status().message();
}

TEST_F(HttpClientTlsTest, UnreadableCaFileIsInvalidArgument) {
  auto server = StartTls("san");
  ASSERT_NE(server, nullptr);
  Result<HttpClientResponse> r = HttpGet(Https(server->port(), dir_->File("absent.pem")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(r.status().message(), "absent.pem")) << r.status().message();
}

TEST_F(HttpClientTlsTest, PlainHttpToTheHttpsPortGetsTheServersAnswer) {
  auto server = StartTls("san");
  ASSERT_NE(server, nullptr);
  Result<HttpClientResponse> r = HttpGet(Local(server->port()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 400);
  EXPECT_TRUE(Contains(r->body, "https")) << r->body;
}

TEST_F(HttpClientTlsTest, HttpsToAPlainPortFailsTheHandshake) {
  // A peer that answers the ClientHello with plain HTTP at once.
  ScriptedPeer peer("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", ScriptedPeer::Mode::kAnswerAtOnce);
  Result<HttpClientResponse> r = HttpGet(Https(peer.port(), "", /*insecure=*/true));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(r.status().message(), "TLS handshake")) << r.status().message();
}

}  // namespace
}  // namespace memkv::http
