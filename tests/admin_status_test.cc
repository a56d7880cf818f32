// `memkv admin status` against real `memkv start` processes (docs/cli.md,
// "memkv admin status"): data addresses (admin endpoint on PORT+1) and admin
// URLs, the table and --json (the /v1/status document passed through), an
// unreachable, a silent, a degraded and an unhealthy server among live ones,
// HTTPS with --cacert, and the usage errors.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/json.h"
#include "io/socket.h"
#include "tests/harness.h"
#include "tests/raw_connection.h"

namespace memkv::testing {
namespace {

std::string AdminUrl(const ServerProcess& s, const std::string& scheme = "http") {
  return scheme + "://127.0.0.1:" + std::to_string(s.AdminPort());
}

// A port nothing listens on (it was free a moment ago).
uint16_t DeadPort() {
  Result<UniqueFd> l = io::ListenTcp("127.0.0.1", 0, 1);
  EXPECT_TRUE(l.ok());
  return l.ok() ? *io::LocalPort(l->get()) : 1;
}

// A data port P with P+1 free as well, so a server given P has its admin
// endpoint on P+1.
uint16_t FreePortPair() {
  for (int attempt = 0; attempt < 50; ++attempt) {
    Result<UniqueFd> a = io::ListenTcp("127.0.0.1", 0, 1);
    if (!a.ok()) continue;
    uint16_t p = *io::LocalPort(a->get());
    if (p == 65535) continue;
    if (io::ListenTcp("127.0.0.1", static_cast<uint16_t>(p + 1), 1).ok()) return p;
  }
  return 0;
}

// The rows of the table: address -> the row's line and the indented line
// under it ("" when none).
struct Row {
  std::string line;
  std::string detail;              // the reason or error line
  std::vector<std::string> tiers;  // "  dram: ...", "  drives: ..." and "  journal: ..."
  std::vector<std::string> namespaces;  // "  namespace NAME: ..."
  std::string server;              // "  server ID: STATE"
};
std::map<std::string, Row> Rows(const std::string& out) {
  std::map<std::string, Row> rows;
  std::string last;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    std::string line = out.substr(start, end - start);
    start = end + 1;
    if (line.rfind("ADDRESS", 0) == 0 || line.empty()) continue;
    if (line.rfind("  dram: ", 0) == 0 || line.rfind("  drives: ", 0) == 0 || line.rfind("  journal: ", 0) == 0) {
      rows[last].tiers.push_back(line);
      continue;
    }
    if (line.rfind("  namespace ", 0) == 0) {
      rows[last].namespaces.push_back(line);
      continue;
    }
    if (line.rfind("  server ", 0) == 0) {
      rows[last].server = line;
      continue;
    }
    if (line.rfind("  ", 0) == 0) {
      rows[last].detail = line;
      continue;
    }
    last = line.substr(0, line.find(' '));
    rows[last].line = line;
  }
  return rows;
}

JsonValue ParseOk(const std::string& text) {
  Result<JsonValue> j = ParseJson(text);
  EXPECT_TRUE(j.ok()) << j.status().ToString() << "\n" << text;
  return j.ok() ? *j : JsonValue{};
}

// Answers every connection on 127.0.0.1 with the same HTTP response, until
// destroyed: an admin endpoint that says what the test wants.
class CannedAdmin {
 public:
  explicit CannedAdmin(std::string response) : response_(std::move(response)) {
    Result<UniqueFd> l = io::ListenTcp("127.0.0.1", 0, 16);
    EXPECT_TRUE(l.ok());
    listener_ = std::move(l).value();
    port_ = *io::LocalPort(listener_.get());
    thread_ = std::thread([this] { Serve(); });
  }
  ~CannedAdmin() {
    stop_ = true;
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  static std::string Json(const std::string& body) {
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{listener_.get(), POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0) continue;
      UniqueFd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn.valid()) continue;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        pollfd c{conn.get(), POLLIN, 0};
        if (::poll(&c, 1, 5000) <= 0) break;
        ssize_t n = ::recv(conn.get(), buf, sizeof(buf), 0);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      (void)::send(conn.get(), response_.data(), response_.size(), MSG_NOSIGNAL);
    }
  }

  const std::string response_;
  UniqueFd listener_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class AdminStatusTest : public ::testing::Test {
 protected:
  // A server on a fixed data port, so that its admin endpoint is on PORT+1
  // (on port 0 the admin port is any free one).
  void StartOnFixedPort(ServerProcess* server, const std::string& auth_key_hex = kTestKeyHex) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      const uint16_t port = FreePortPair();
      ASSERT_NE(port, 0);
      ServerSpec spec;
      spec.memory_max_size = "32 MiB";
      spec.memory_block_size = "1 MiB";
      spec.port = port;
      spec.auth_key_hex = auth_key_hex;
      Status s = server->Start(spec);
      if (s.ok()) {
        ASSERT_EQ(server->port(), port) << server->Stderr();
        ASSERT_EQ(server->AdminPort(), port + 1) << server->Stderr();
        return;
      }
    }
    FAIL() << "no server started on a fixed port";
  }

  TempDir dir_;
};

TEST_F(AdminStatusTest, DataAddressesOfHealthyServersGiveOneRowEachAndExitZero) {
  ServerProcess a, b;
  StartOnFixedPort(&a);
  StartOnFixedPort(&b);
  auto client = ClientFor({&a}, 10000);
  ASSERT_TRUE(client->Put("k", Pattern(3 << 20, 1)).ok());
  ASSERT_TRUE(client->Get("k").ok());

  CommandResult r = RunMemkv({"admin", "status", a.address(), b.address()}, {});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("ADDRESS", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("HIT RATIO"), std::string::npos) << r.out;
  std::map<std::string, Row> rows = Rows(r.out);
  ASSERT_EQ(rows.size(), 2u) << r.out;
  for (const ServerProcess* s : {&a, &b}) {
    const Row& row = rows[s->address()];
    EXPECT_NE(row.line.find(" healthy "), std::string::npos) << r.out;
    EXPECT_NE(row.line.find(" tcp"), std::string::npos) << r.out;
    EXPECT_EQ(row.detail, "") << "no reason line for a healthy server\n" << r.out;
    EXPECT_TRUE(row.server.starts_with("  server ") && row.server.ends_with(": serving")) << r.out;
  }
  // 3 MiB of the 32 MiB pool, and the one get a hit.
  EXPECT_NE(rows[a.address()].line.find("3 MiB / 32 MiB (9.4%)"), std::string::npos) << r.out;
  EXPECT_NE(rows[a.address()].line.find("100.0%"), std::string::npos) << r.out;
  EXPECT_EQ(rows[a.address()].tiers,
            std::vector<std::string>{"  dram: 3 MiB of 32 MiB used by 1 value (3 MiB), fragmentation 0.0%"})
      << "memory mode: no drives line\n" << r.out;
  // "k" has no '/': the namespace "". The idle server has no namespace line.
  EXPECT_EQ(rows[a.address()].namespaces,
            std::vector<std::string>{"  namespace \"\": 1 lookups, 100.0% hit, 3 MiB read, 1 puts (3 MiB), 0 evictions"})
      << r.out;
  EXPECT_TRUE(rows[b.address()].namespaces.empty()) << r.out;
  EXPECT_EQ(rows[b.address()].tiers,
            std::vector<std::string>{"  dram: 0 B of 32 MiB used by 0 values (0 B), fragmentation 0.0%"})
      << r.out;

  // Without ADDR: the client's servers.
  r = RunMemkv({"admin", "status"}, {{"MEMKV_SERVERS", a.address() + "," + b.address()}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  rows = Rows(r.out);
  EXPECT_EQ(rows.size(), 2u) << r.out;
  EXPECT_NE(rows[b.address()].line.find(" healthy "), std::string::npos) << r.out;
}

// A fleet whose servers hold different keys: each answers its status (which
// needs no key) healthy, but one refuses every client. Without ADDR, admin
// status asks as the client does, shows that server "refused" (auth failed)
// in its client view, names it on stderr and exits 5, in text and in JSON.
TEST_F(AdminStatusTest, AServerHoldingAnotherKeyIsNamedAsRefusingAndExitsFive) {
  ServerProcess a, b;
  StartOnFixedPort(&a);
  StartOnFixedPort(&b, std::string(64, 'e'));
  const std::map<std::string, std::string> env = {{"MEMKV_SERVERS", a.address() + "," + b.address()},
                                                   {"MEMKV_AUTH_KEY", kTestKeyHex}};
  CommandResult r = RunMemkv({"admin", "status"}, env);
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  ASSERT_NE(r.out.find("\nclient view:\n"), std::string::npos) << r.out;
  std::map<std::string, Row> rows = Rows(r.out.substr(0, r.out.find("\nclient view:\n")));
  EXPECT_NE(rows[a.address()].line.find(" healthy "), std::string::npos) << r.out;
  EXPECT_NE(rows[b.address()].line.find(" healthy "), std::string::npos) << "its status needs no key\n" << r.out;
  std::string row_a, row_b;
  std::istringstream lines(r.out.substr(r.out.find("client view:")));
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(a.address() + " ")) row_a = line;
    if (line.starts_with(b.address() + " ")) row_b = line;
  }
  EXPECT_NE(row_a.find(" up"), std::string::npos) << r.out;
  EXPECT_NE(row_b.find(" refused   auth failed: the client's key differs from the server's"), std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("server " + b.address() + " refuses the client's key"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(a.address()), std::string::npos) << r.err;

  r = RunMemkv({"admin", "status", "--json"}, env);
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("[", 0), 0u) << "--json prints only the array\n" << r.out;
  EXPECT_NE(r.err.find("server " + b.address() + " refuses the client's key"), std::string::npos) << r.err;

  // The servers that share the client's key: exit 0, nothing on stderr.
  r = RunMemkv({"admin", "status"}, {{"MEMKV_SERVERS", a.address()}, {"MEMKV_AUTH_KEY", kTestKeyHex}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
}

TEST_F(AdminStatusTest, JsonCarriesEachServersStatusDocument) {
  ServerProcess a, b;
  ASSERT_TRUE(a.Start(FileModeSpec(dir_.path(), 1)).ok());
  ASSERT_TRUE(b.Start().ok());
  auto client = ClientFor({&a}, 10000);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client->Put("j" + std::to_string(i), Pattern(100000, i)).ok());
  client.reset();

  CommandResult r = RunMemkv({"admin", "status", "--json", AdminUrl(a), AdminUrl(b)}, {});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  HttpResult direct = HttpRequestTo(a.AdminPort(), "GET", "/v1/status");
  ASSERT_EQ(direct.status, 200);
  JsonValue want = ParseOk(direct.body);

  JsonValue got = ParseOk(r.out);
  ASSERT_EQ(got.type, JsonValue::Type::kArray) << r.out;
  ASSERT_EQ(got.array.size(), 2u);
  const JsonValue& first = got.array[0];
  EXPECT_EQ(first.Find("address")->string, AdminUrl(a));
  EXPECT_TRUE(first.Find("reachable")->boolean);
  EXPECT_EQ(first.Find("error")->type, JsonValue::Type::kNull);
  const JsonValue* status = first.Find("status");
  ASSERT_NE(status, nullptr);
  ASSERT_EQ(status->type, JsonValue::Type::kObject);
  for (auto path : {std::initializer_list<std::string_view>{"version"}, {"address"}, {"health", "status"},
                    {"storage", "mode"}}) {
    ASSERT_NE(status->Path(path), nullptr) << *path.begin();
    EXPECT_EQ(status->Path(path)->string, want.Path(path)->string) << *path.begin();
  }
  for (auto path : {std::initializer_list<std::string_view>{"raw_bytes_total"}, {"usable_bytes_total"},
                    {"used_bytes_total"}, {"memory", "pool_bytes"}, {"memory", "keys"}, {"storage", "keys"}}) {
    ASSERT_NE(status->Path(path), nullptr) << *path.begin();
    EXPECT_EQ(status->Path(path)->number, want.Path(path)->number) << *path.begin();
  }
  EXPECT_EQ(status->Path({"storage", "keys"})->number, 3);
  EXPECT_EQ(status->Find("devices")->array.size(), want.Find("devices")->array.size());
  EXPECT_EQ(got.array[1].Find("error")->type, JsonValue::Type::kNull);
  EXPECT_EQ(got.array[1].Path({"status", "address"})->string, b.address());
  EXPECT_EQ(got.array[1].Path({"status", "storage", "mode"})->string, "memory");

  // The table: a line per tier under the file-mode server's row.
  r = RunMemkv({"admin", "status", AdminUrl(a)}, {});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<std::string> tiers = Rows(r.out)[AdminUrl(a)].tiers;
  ASSERT_EQ(tiers.size(), 3u) << r.out;
  EXPECT_EQ(tiers[0].rfind("  dram: 293.1 KiB of 32 MiB used by 3 values (293.0 KiB)", 0), 0u)
      << "1563 units of 64 bytes per value\n" << r.out;
  EXPECT_EQ(tiers[1].rfind("  drives: 300 KiB of ", 0), 0u) << "25 units of 4 KiB per value\n" << r.out;
  EXPECT_NE(tiers[1].find(" used by 3 values (293.0 KiB), fragmentation 0.0%"), std::string::npos) << r.out;
  EXPECT_EQ(tiers[2].rfind("  journal: ", 0), 0u) << r.out;
  EXPECT_NE(tiers[2].find(") the live index may take, sync interval"), std::string::npos) << r.out;
}

TEST_F(AdminStatusTest, ADeadAddressIsUnreachableWhileTheLiveOneIsStillReported) {
  ServerProcess live;
  ASSERT_TRUE(live.Start().ok());
  const std::string dead = "127.0.0.1:" + std::to_string(DeadPort());

  CommandResult r = RunMemkv({"admin", "status", AdminUrl(live), dead}, {});
  EXPECT_EQ(r.exit_code, 4) << "unreachable is kExitUnavailable\n" << r.out << r.err;
  std::map<std::string, Row> rows = Rows(r.out);
  ASSERT_EQ(rows.size(), 2u) << r.out;
  EXPECT_NE(rows[AdminUrl(live)].line.find(" healthy "), std::string::npos) << r.out;
  EXPECT_NE(rows[dead].line.find(" unreachable "), std::string::npos) << r.out;
  EXPECT_EQ(rows[dead].detail.rfind("  error: ", 0), 0u) << r.out;
  EXPECT_NE(rows[dead].detail.find("Connection refused"), std::string::npos) << r.out;

  r = RunMemkv({"admin", "status", "--json", dead, AdminUrl(live)}, {});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  JsonValue got = ParseOk(r.out);
  ASSERT_EQ(got.array.size(), 2u) << r.out;
  EXPECT_FALSE(got.array[0].Find("reachable")->boolean);
  EXPECT_NE(got.array[0].Find("error")->string.find("Connection refused"), std::string::npos) << r.out;
  EXPECT_EQ(got.array[0].Find("status")->type, JsonValue::Type::kNull);
  EXPECT_TRUE(got.array[1].Find("reachable")->boolean);
}

// Silent endpoints cost the timeout once, not once each: they are asked at
// the same time.
TEST_F(AdminStatusTest, SilentServersTimeOutTogether) {
  std::vector<UniqueFd> listeners;  // never accepted: TCP connects, nothing answers
  std::vector<std::string> args = {"admin", "status", "--timeout-ms", "1000"};
  for (int i = 0; i < 3; ++i) {
    Result<UniqueFd> l = io::ListenTcp("127.0.0.1", 0, 4);
    ASSERT_TRUE(l.ok());
    args.push_back("http://127.0.0.1:" + std::to_string(*io::LocalPort(l->get())));
    listeners.push_back(std::move(l).value());
  }
  const Nanos start = MonotonicNanos();
  CommandResult r = RunMemkv(args, {});
  const Nanos took_ms = (MonotonicNanos() - start) / 1'000'000;
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_GE(took_ms, 1000);
  EXPECT_LT(took_ms, 2500) << "three 1 s timeouts in sequence would take 3 s";
  std::map<std::string, Row> rows = Rows(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  for (const auto& [address, row] : rows) {
    EXPECT_NE(row.line.find(" unreachable "), std::string::npos) << r.out;
    EXPECT_NE(row.detail.find("timed out (deadline 1000 ms)"), std::string::npos) << r.out;
  }
}

TEST_F(AdminStatusTest, ADegradedServerShowsItsReasonAndStillExitsZero) {
  ServerSpec spec = FileModeSpec(dir_.path(), 2);
  {
    ServerProcess first;
    ASSERT_TRUE(first.Start(spec).ok());
    EXPECT_EQ(first.Stop(), 0);
  }
  ASSERT_EQ(::unlink((dir_.path() + "/d1.memkv").c_str()), 0);
  ServerProcess degraded, healthy;
  ASSERT_TRUE(degraded.Start(spec).ok()) << degraded.Stderr();
  ASSERT_TRUE(healthy.Start().ok());

  CommandResult r = RunMemkv({"admin", "status", AdminUrl(degraded), AdminUrl(healthy)}, {});
  EXPECT_EQ(r.exit_code, 0) << "degraded still serves\n" << r.out << r.err;
  std::map<std::string, Row> rows = Rows(r.out);
  const Row& row = rows[AdminUrl(degraded)];
  EXPECT_NE(row.line.find(" degraded "), std::string::npos) << r.out;
  EXPECT_EQ(row.detail.rfind("  reason: 1 of 2 drives offline", 0), 0u) << r.out;
  EXPECT_NE(row.detail.find("drive 1"), std::string::npos) << r.out;
  EXPECT_EQ(rows[AdminUrl(healthy)].detail, "") << r.out;
}

TEST_F(AdminStatusTest, AnUnhealthyServerExitsOneAndAForeignAnswerIsUnreachable) {
  CannedAdmin sick(CannedAdmin::Json(
      R"({"version":"9.9.9","address":"10.0.0.1:9900","uptime_seconds":11630,)"
      R"("health":{"status":"unhealthy","reason":"no drive is online: drive 0 (/d0): missing"},)"
      R"("usable_bytes_total":1073741824,"used_bytes_total":268435456,"hit_ratio":0.5,)"
      R"("ops_per_second":1520.4,"rdma":{"active":true}})"));
  CommandResult r = RunMemkv({"admin", "status", sick.url()}, {});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  std::map<std::string, Row> rows = Rows(r.out);
  const Row& row = rows[sick.url()];
  for (const char* cell : {" unhealthy ", " 3h13m ", " 256 MiB / 1 GiB (25.0%) ", " 50.0% ", " 1520 ", " rdma"}) {
    EXPECT_NE(row.line.find(cell), std::string::npos) << "'" << cell << "' in\n" << r.out;
  }
  EXPECT_EQ(row.detail, "  reason: no drive is online: drive 0 (/d0): missing") << r.out;

  // Not a MemKV endpoint: a 404, and a 200 that is not a status document.
  CannedAdmin other("HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\n\r\nnot here\r\n");
  CannedAdmin html("HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n<html></html>");
  r = RunMemkv({"admin", "status", sick.url(), other.url(), html.url()}, {});
  EXPECT_EQ(r.exit_code, 4) << "unreachable wins over unhealthy\n" << r.out << r.err;
  rows = Rows(r.out);
  EXPECT_NE(rows[other.url()].detail.find("HTTP 404 Not Found: not here"), std::string::npos) << r.out;
  EXPECT_NE(rows[html.url()].detail.find("not a MemKV status document"), std::string::npos) << r.out;
}

TEST_F(AdminStatusTest, HttpsWithCacert) {
  if (RunShell("command -v openssl").exit_code != 0) GTEST_SKIP() << "the openssl command is not installed";
  const std::string cert = dir_.path() + "/admin.crt", key = dir_.path() + "/admin.key";
  CommandResult made =
      RunShell("openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
               "-days 1 -keyout " + key + " -out " + cert + " 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.out;
  ServerSpec spec;
  spec.network_yaml = "  tls_cert: " + cert + "\n  tls_key: " + key + "\n";
  ServerProcess server;
  ASSERT_TRUE(server.Start(spec).ok());
  ASSERT_NE(server.Stderr().find("admin endpoint on https://"), std::string::npos) << server.Stderr();

  CommandResult r = RunMemkv({"admin", "status", "--cacert", cert, AdminUrl(server, "https")}, {});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(Rows(r.out)[AdminUrl(server, "https")].line.find(" healthy "), std::string::npos) << r.out;

  r = RunMemkv({"admin", "status", "--insecure", AdminUrl(server, "https")}, {});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;

  // Plain HTTP to it: the server's "use https" answer becomes advice.
  r = RunMemkv({"admin", "status", AdminUrl(server, "http")}, {});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.out.find("speaks HTTPS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--cacert"), std::string::npos) << r.out;

  // Verified against the system's store, a self-signed certificate fails.
  r = RunMemkv({"admin", "status", AdminUrl(server, "https")}, {});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.out.find("certificate verify failed"), std::string::npos) << r.out;

  // A CA file that is not there is a configuration error.
  r = RunMemkv({"admin", "status", "--cacert", dir_.path() + "/absent.pem", AdminUrl(server, "https")}, {});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("absent.pem"), std::string::npos) << r.err;
  // So is one that holds no certificate.
  const std::string junk = dir_.Write("junk.pem", "not a certificate\n");
  r = RunMemkv({"admin", "status", "--cacert", junk, AdminUrl(server, "https")}, {});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("junk.pem: cannot load the PEM certificates"), std::string::npos) << r.out;
}

// A server with tenants prints a line per tenant: what it holds against its
// quota, its lookups and evictions, its connections open and its refusals,
// a Connect past tenants[].max_connections among them (docs/tenants.md).
TEST_F(AdminStatusTest, EachTenantHasALineWithItsConnectionsAndRefusals) {
  const std::string tenant_key(64, 'b');
  ServerSpec spec;
  spec.extra_yaml = "tenants:\n  - name: team-a\n    prefix: \"team-a/\"\n    key: \"" + tenant_key +
                    "\"\n    dram_quota: 8MiB\n    max_connections: 1\n";
  ServerProcess s;
  ASSERT_TRUE(s.Start(spec).ok()) << s.Stderr();
  auto held = RawConnection::Open(s.port());
  ASSERT_TRUE(held.ok());
  Result<RawResponse> first = (*held)->Handshake(tenant_key);
  ASSERT_TRUE(first.ok() && first->header.status == StatusCode::kOk);
  auto extra = RawConnection::Open(s.port());
  ASSERT_TRUE(extra.ok());
  Result<RawResponse> second = (*extra)->Handshake(tenant_key);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->header.status, StatusCode::kResourceExhausted) << second->message();

  CommandResult r = RunMemkv({"admin", "status", AdminUrl(s)}, {});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("  tenant team-a: DRAM 0 B of 8 MiB (0 keys), 0 lookups, 0.0% hit, 0 evictions (0 by its "
                       "quota), 1 connections open, refused: 0 over quota, 0 read-only, 1 at its connection limit\n"),
            std::string::npos)
      << r.out;
}

TEST_F(AdminStatusTest, UsageErrorsExitTwo) {
  const std::vector<std::vector<std::string>> kBad = {
      {"admin"},
      {"admin", "stats"},
      {"admin", "status", "--bogus"},
      {"admin", "status", "--timeout-ms"},
      {"admin", "status", "--timeout-ms", "0"},
      {"admin", "status", "--timeout-ms", "soon"},
      {"admin", "status", "--cacert"},
      {"admin", "status", "--cacert", "/x.pem", "--insecure"},
      {"admin", "status", "no-port"},
      {"admin", "status", "127.0.0.1:65535"},
      {"admin", "status", "http://127.0.0.1:9901/v1/health"},
  };
  for (const auto& args : kBad) {
    CommandResult r = RunMemkv(args, {});
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.out << r.err;
    EXPECT_EQ(r.err.rfind("memkv admin: ", 0), 0u) << joined << "\n" << r.err;
    EXPECT_NE(r.err.find("memkv admin --help"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << joined;
  }
  CommandResult help = RunMemkv({"admin", "--help"}, {});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.rfind("Usage: memkv admin status", 0), 0u) << help.out;
  EXPECT_NE(help.out.find("Exit codes"), std::string::npos) << help.out;
  EXPECT_NE(RunMemkv({"--help"}, {}).out.find("admin status"), std::string::npos);
  // A broken client configuration (no ADDR given) is exit 3.
  CommandResult config = RunMemkv({"admin", "status"}, {{"MEMKV_SERVERS", "nowhere"}});
  EXPECT_EQ(config.exit_code, 3) << config.out << config.err;
  EXPECT_NE(config.err.find("MEMKV_SERVERS"), std::string::npos) << config.err;
}

}  // namespace
}  // namespace memkv::testing
