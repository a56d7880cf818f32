// HttpServer over HTTPS: a self-signed certificate made with the openssl
// command, an OpenSSL client (and curl, where installed) on 127.0.0.1.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "http/http_server.h"
#include "http/http_test_util.h"

namespace memkv::http {
namespace {

using testing::Connect;
using testing::DeadlineIn;
using testing::HaveCommand;
using testing::ParsedResponse;
using testing::PlainExchange;
using testing::ReadToClose;
using testing::Request;
using testing::RunShell;
using testing::SendString;
using memkv::testing::TempDir;
using testing::TlsClient;
using testing::TlsClientOptions;
using testing::TlsExchange;
using testing::WaitUntil;

class HttpTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveCommand("openssl")) return;
    dir_ = new TempDir();
    for (const char* name : {"a", "b"}) {
      int status = 0;
      std::string out = RunShell("openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -days 1 -keyout " +
                                     dir_->File(std::string(name) + ".key") + " -out " +
                                     dir_->File(std::string(name) + ".crt") + " 2>&1",
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

  static std::string Cert() { return dir_->File("a.crt"); }
  static std::string Key() { return dir_->File("a.key"); }

  std::unique_ptr<HttpServer> StartTlsServer(HttpServerOptions options = {}) {
    options.tls = CreateOpenSslServer;
    options.tls_cert_path = Cert();
    options.tls_key_path = Key();
    Result<std::unique_ptr<HttpServer>> created = HttpServer::Create(options);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    if (!created.ok()) return nullptr;
    auto server = std::move(created).value();
    EXPECT_TRUE(server->Handle("GET", "/v1/health", [](const HttpRequest&) {
                        return HttpResponse::Text(200, "ok\n");
                      }).ok());
    // Larger than the socket buffers: a client that does not read it keeps
    // its connection writing.
    EXPECT_TRUE(server->Handle("GET", "/v1/big", [](const HttpRequest&) {
                        return HttpResponse::Text(200, std::string(64 << 20, 'b'));
                      }).ok());
    EXPECT_TRUE(server->Start().ok());
    return server;
  }

  ParsedResponse TlsGet(const HttpServer& server, const std::string& path) {
    Result<ParsedResponse> r = TlsExchange(server.port(), Cert(), Request("GET", path));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r.value() : ParsedResponse{};
  }

  static TempDir* dir_;
  static bool have_certs_;
};

TempDir* HttpTlsTest::dir_ = nullptr;
bool HttpTlsTest::have_certs_ = false;

TEST_F(HttpTlsTest, ServesHttpsToOpenSslClientThatVerifiesTheCertificate) {
  auto server = StartTlsServer();
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->scheme(), "https");
  ParsedResponse r = TlsGet(*server, "/v1/health");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, "ok\n");
  EXPECT_EQ(r.headers["content-length"], "3");
  EXPECT_EQ(TlsGet(*server, "/v1/missing").status, 404);
  EXPECT_EQ(server->stats().tls_handshake_failures, 0u);
}

TEST_F(HttpTlsTest, ServesHttpsToCurl) {
  if (!HaveCommand("curl")) GTEST_SKIP() << "curl is not installed";
  auto server = StartTlsServer();
  ASSERT_NE(server, nullptr);
  const std::string url = "https://127.0.0.1:" + std::to_string(server->port()) + "/v1/health";
  int status = 0;
  std::string out = RunShell("curl -sk --max-time 10 -i " + url, &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
  EXPECT_EQ(out.substr(out.size() - 3), "ok\n") << out;
  // And curl's HEAD (-I) gets headers only.
  out = RunShell("curl -sk --max-time 10 -I " + url, &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("Content-Length: 3"), std::string::npos) << out;
}

TEST_F(HttpTlsTest, PlainHttpToHttpsPortGets400AndServerKeepsServing) {
  auto server = StartTlsServer();
  ASSERT_NE(server, nullptr);
  Result<ParsedResponse> plain = PlainExchange(server->port(), Request("GET", "/v1/health"));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->status, 400) << plain->raw;
  EXPECT_NE(plain->body.find("https"), std::string::npos) << plain->body;
  EXPECT_EQ(server->stats().tls_handshake_failures, 1u);
  EXPECT_EQ(TlsGet(*server, "/v1/health").status, 200);
}

TEST_F(HttpTlsTest, GarbageHandshakeClosesOnlyThatConnection) {
  auto server = StartTlsServer();
  ASSERT_NE(server, nullptr);
  Result<UniqueFd> bad = Connect(server->port());
  ASSERT_TRUE(bad.ok());
  // A TLS record header announcing a handshake, then nonsense.
  ASSERT_TRUE(SendString(bad->get(), std::string("\x16\x03\x01\x00\x20", 5) + std::string(32, '\x7f'),
                         DeadlineIn(5000)).ok());
  // Another client is served while the bad one is dealt with.
  EXPECT_EQ(TlsGet(*server, "/v1/health").status, 200);
  Result<std::string> raw = ReadToClose(bad->get(), DeadlineIn(10000));
  EXPECT_TRUE(raw.ok()) << raw.status().ToString();  // closed, not left hanging
  EXPECT_TRUE(WaitUntil([&] { return server->stats().tls_handshake_failures == 1; }));
  EXPECT_EQ(TlsGet(*server, "/v1/health").status, 200);
}

TEST_F(HttpTlsTest, RefusesTls11Clients) {
  auto server = StartTlsServer();
  ASSERT_NE(server, nullptr);
  TlsClientOptions old;
  old.max_version = TLS1_1_VERSION;
  Result<TlsClient> client = TlsClient::Connect(server->port(), old, DeadlineIn(10000));
  ASSERT_FALSE(client.ok());
  // The server, not the client library, refused: it saw a hello it rejected.
  EXPECT_TRUE(WaitUntil([&] { return server->stats().tls_handshake_failures == 1; }));
  EXPECT_NE(client.status().message().find("protocol version"), std::string::npos) << client.status().ToString();
  EXPECT_EQ(TlsGet(*server, "/v1/health").status, 200);
}

TEST_F(HttpTlsTest, SlowHandshakeTimesOutWhileAnotherClientIsServed) {
  HttpServerOptions options;
  options.tls = CreateOpenSslServer;
  options.read_timeout_ms = 1000;
  auto server = StartTlsServer(options);
  ASSERT_NE(server, nullptr);
  Result<UniqueFd> silent = Connect(server->port());
  ASSERT_TRUE(silent.ok());
  EXPECT_EQ(TlsGet(*server, "/v1/health").status, 200);
  EXPECT_EQ(server->stats().timeouts, 0u);
  Result<std::string> raw = ReadToClose(silent->get(), DeadlineIn(10000));
  EXPECT_TRUE(raw.ok()) << raw.status().ToString();
  EXPECT_EQ(*raw, "");  // no TLS, so nothing to say: just closed
  EXPECT_TRUE(WaitUntil([&] { return server->stats().timeouts == 1; }));
}

TEST_F(HttpTlsTest, ConnectionLimitClosesASilentConnectionForANewOne) {
  HttpServerOptions options;
  options.max_connections = 1;
  auto server = StartTlsServer(options);
  ASSERT_NE(server, nullptr);
  Result<UniqueFd> silent = Connect(server->port());  // never starts its handshake
  ASSERT_TRUE(silent.ok());
  ASSERT_TRUE(WaitUntil([&] { return server->stats().connections_open == 1; }));
  EXPECT_EQ(TlsGet(*server, "/v1/health").status, 200);
  EXPECT_EQ(server->stats().shed, 1u);
  EXPECT_EQ(server->stats().rejected_busy, 0u);
}

TEST_F(HttpTlsTest, ConnectionLimitAnswers503AfterTheHandshake) {
  HttpServerOptions options;
  options.max_connections = 1;
  options.write_timeout_ms = 20000;
  auto server = StartTlsServer(options);
  ASSERT_NE(server, nullptr);
  {
    // The one slot writes a large response its client does not read.
    Result<testing::TlsClient> holder = testing::TlsClient::Connect(server->port(), {}, DeadlineIn(5000));
    ASSERT_TRUE(holder.ok()) << holder.status().ToString();
    ASSERT_TRUE(holder->Send(Request("GET", "/v1/big"), DeadlineIn(5000)).ok());
    ASSERT_TRUE(WaitUntil([&] { return server->stats().requests == 1; }));
    EXPECT_EQ(TlsGet(*server, "/v1/health").status, 503);
  }
  ASSERT_TRUE(WaitUntil([&] { return server->stats().connections_open == 0; }));
  EXPECT_EQ(TlsGet(*server, "/v1/health").status, 200);
}

TEST_F(HttpTlsTest, CertWithoutKeyIsInvalidArgumentNamingTheMissingOne) {
  HttpServerOptions options;
  options.tls = CreateOpenSslServer;
  options.tls_cert_path = Cert();
  Result<std::unique_ptr<HttpServer>> no_key = HttpServer::Create(options);
  ASSERT_FALSE(no_key.ok());
  EXPECT_EQ(no_key.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_key.status().message().find("tls_key_path is missing"), std::string::npos)
      << no_key.status().ToString();

  options.tls_cert_path.clear();
  options.tls_key_path = Key();
  Result<std::unique_ptr<HttpServer>> no_cert = HttpServer::Create(options);
  ASSERT_FALSE(no_cert.ok());
  EXPECT_EQ(no_cert.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_cert.status().message().find("tls_cert_path is missing"), std::string::npos)
      << no_cert.status().ToString();
}

TEST_F(HttpTlsTest, UnloadableFilesNameTheFileAndTheReason) {
  HttpServerOptions options;
  options.tls = CreateOpenSslServer;
  options.tls_cert_path = dir_->File("missing.crt");
  options.tls_key_path = Key();
  Result<std::unique_ptr<HttpServer>> missing = HttpServer::Create(options);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find(options.tls_cert_path), std::string::npos) << missing.status().ToString();
  EXPECT_NE(missing.status().message().find("No such file"), std::string::npos) << missing.status().ToString();

  options.tls_cert_path = Key();  // a key where the certificate should be
  Result<std::unique_ptr<HttpServer>> wrong = HttpServer::Create(options);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("tls_cert_path " + Key()), std::string::npos) << wrong.status().ToString();

  options.tls_cert_path = Cert();
  options.tls_key_path = dir_->File("b.key");  // another pair's key
  Result<std::unique_ptr<HttpServer>> mismatch = HttpServer::Create(options);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("does not match"), std::string::npos) << mismatch.status().ToString();
}

}  // namespace
}  // namespace memkv::http
