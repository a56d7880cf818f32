// The C API against a real server: same behaviour and codes as the C++ API,
// every option reaching the client, batches, get_alloc, stats, version,
// logging, and the boundary's own rules (NULL arguments, per-thread errors).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "config/client_option_samples.h"
#include "io/socket.h"
#include "memkv/memkv.h"
#include "tests/harness.h"
#include "tests/shared_server.h"

extern "C" int memkv_c_header_check(void);

namespace memkv::testing {
namespace {

struct OptionsDeleter {
  void operator()(memkv_options_t* o) const { memkv_options_destroy(o); }
};
using OptionsPtr = std::unique_ptr<memkv_options_t, OptionsDeleter>;
struct ClientCloser {
  void operator()(memkv_client_t* c) const { memkv_client_close(c); }
};
using ClientPtr = std::unique_ptr<memkv_client_t, ClientCloser>;

uint16_t FreePort() {
  Result<UniqueFd> fd = io::ListenTcp("127.0.0.1", 0, 1);
  return fd.ok() ? *io::LocalPort(fd->get()) : 0;
}

// Options for a TCP client of `server`: only what every test needs.
OptionsPtr TcpOptions(const ServerProcess& server) {
  OptionsPtr o(memkv_options_create());
  EXPECT_NE(o, nullptr);
  EXPECT_EQ(memkv_options_set_servers(o.get(), server.address().c_str()), MEMKV_OK);
  EXPECT_EQ(memkv_options_set_auth_key(o.get(), kTestKeyHex), MEMKV_OK);
  EXPECT_EQ(memkv_options_set_transport(o.get(), "tcp"), MEMKV_OK);
  return o;
}

ClientPtr Open(const memkv_options_t* o) {
  memkv_client_t* c = nullptr;
  EXPECT_EQ(memkv_client_open_options(o, &c), MEMKV_OK) << memkv_last_error();
  return ClientPtr(c);
}

std::string LastError() { return memkv_last_error(); }

// What a log callback received, from whichever thread logged.
class LogLines {
 public:
  struct Line {
    int level;
    std::string component;
    std::string message;
  };
  static void Collect(void* ctx, int level, const char* component, const char* message) {
    auto* self = static_cast<LogLines*>(ctx);
    std::lock_guard<std::mutex> lock(self->mu_);
    self->lines_.push_back({level, component, message});
  }
  std::vector<Line> Lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  bool Has(int level, const std::string& text) {
    for (const Line& line : Lines()) {
      if (line.level == level && line.message.find(text) != std::string::npos) return true;
    }
    return false;
  }

 private:
  std::mutex mu_;
  std::vector<Line> lines_;
};

// One server for the suite; each test opens its own clients.
class CApiTest : public SharedServerTest {
 protected:
  static ServerProcess& server() { return *server_; }
};

TEST_F(CApiTest, RoundTripMissAndErrors) {
  ASSERT_EQ(memkv_c_header_check(), 0);
  memkv_client_t* c = nullptr;
  ASSERT_EQ(memkv_client_open(server().address().c_str(), kTestKeyHex, 3000, &c), MEMKV_OK) << memkv_last_error();

  std::vector<uint8_t> value = Pattern(3 << 20, 11);
  ASSERT_EQ(memkv_put(c, "k", 1, value.data(), value.size()), MEMKV_OK) << memkv_last_error();
  std::vector<uint8_t> buf(value.size() + 10);
  size_t len = 0;
  ASSERT_EQ(memkv_get(c, "k", 1, buf.data(), buf.size(), &len), MEMKV_OK) << memkv_last_error();
  ASSERT_EQ(len, value.size());
  EXPECT_EQ(std::memcmp(buf.data(), value.data(), len), 0);

  size_t unchanged = 7;
  EXPECT_EQ(memkv_get(c, "k", 1, buf.data(), 100, &unchanged), MEMKV_TOO_LARGE);
  EXPECT_EQ(unchanged, 7u);
  EXPECT_NE(std::string(memkv_last_error()).find("100"), std::string::npos) << memkv_last_error();

  EXPECT_EQ(memkv_get(c, "missing", 7, buf.data(), buf.size(), &len), MEMKV_NOT_FOUND);
  int present = -1;
  ASSERT_EQ(memkv_exists(c, "k", 1, &present), MEMKV_OK);
  EXPECT_EQ(present, 1);

  const void* keys[] = {"k", "missing", "k"};
  const size_t lens[] = {1, 7, 1};
  memkv_status_t statuses[3];
  size_t prefix = 99;
  ASSERT_EQ(memkv_batch_exists(c, keys, lens, 3, statuses, &prefix), MEMKV_OK);
  EXPECT_EQ(prefix, 1u);
  EXPECT_EQ(statuses[1], MEMKV_NOT_FOUND);
  EXPECT_EQ(statuses[2], MEMKV_OK);

  EXPECT_EQ(memkv_delete(c, "k", 1), MEMKV_OK);
  EXPECT_EQ(memkv_delete(c, "k", 1), MEMKV_NOT_FOUND);
  EXPECT_EQ(memkv_put(c, nullptr, 0, nullptr, 0), MEMKV_INVALID_ARGUMENT);
  EXPECT_STREQ(memkv_status_name(MEMKV_AUTH_FAILED), "AuthFailed");
  // Without an RDMA device (the usual test machine) the client is on TCP and
  // registering memory is accepted and does nothing.
  const std::string transport = memkv_transport(c);
  EXPECT_TRUE(transport == "tcp" || transport == "rdma") << transport;
  EXPECT_EQ(memkv_register_memory(c, buf.data(), buf.size()), MEMKV_OK) << memkv_last_error();
  EXPECT_EQ(memkv_unregister_memory(c, buf.data()), MEMKV_OK);
  EXPECT_EQ(memkv_register_memory(c, nullptr, 10), MEMKV_INVALID_ARGUMENT);
  memkv_client_close(c);

  memkv_client_t* bad = nullptr;
  EXPECT_EQ(memkv_client_open(server().address().c_str(), "not-hex", 0, &bad), MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(bad, nullptr);
  EXPECT_NE(std::string(memkv_last_error()).size(), 0u);
}

// Each setter reaches its ClientOptions field: a bad value is refused at
// open, by Client::Create, with a message naming the field.
TEST_F(CApiTest, BadOptionsAreRefusedAtOpenNamingTheField) {
  struct Case {
    std::function<memkv_status_t(memkv_options_t*)> set;
    std::string named;
  };
  const std::vector<Case> cases = {
      {[](memkv_options_t* o) { return memkv_options_set_transport(o, "pigeon"); }, "transport: 'pigeon'"},
      {[](memkv_options_t* o) { return memkv_options_set_num_connections(o, 0); }, "num_connections: 0"},
      {[](memkv_options_t* o) { return memkv_options_set_timeout_ms(o, 0); }, "timeout_ms"},
      {[](memkv_options_t* o) { return memkv_options_set_connect_timeout_ms(o, 0); }, "connect_timeout_ms"},
      {[](memkv_options_t* o) { return memkv_options_set_rdma_mtu(o, 1000); }, "rdma_mtu: '1000'"},
      {[](memkv_options_t* o) { return memkv_options_set_rdma_retry_count(o, 8); }, "rdma_retry_count: 8"},
      {[](memkv_options_t* o) { return memkv_options_set_rdma_timeout(o, 32); }, "rdma_timeout: 32"},
      {[](memkv_options_t* o) { return memkv_options_set_rdma_qps(o, 0); }, "rdma_qps: 0"},
      {[](memkv_options_t* o) { return memkv_options_set_servers(o, " , "); }, "servers: none given"},
      {[](memkv_options_t* o) { return memkv_options_add_server(o, "no-port"); }, "servers: 'no-port'"},
      {[](memkv_options_t* o) { return memkv_options_set_auth_key(o, "abc"); }, "auth_key: "},
  };
  for (const Case& test : cases) {
    OptionsPtr o = TcpOptions(server());
    ASSERT_EQ(test.set(o.get()), MEMKV_OK) << test.named;
    memkv_client_t* c = nullptr;
    EXPECT_EQ(memkv_client_open_options(o.get(), &c), MEMKV_INVALID_ARGUMENT) << test.named;
    EXPECT_EQ(c, nullptr);
    EXPECT_NE(LastError().find(test.named), std::string::npos) << test.named << " vs " << LastError();
  }
}

// memkv_options_set takes every option of the table by name: a good value
// is stored (the client opens with all of them but the RDMA ones, which need
// a device), a bad one is refused at once naming the option.
TEST_F(CApiTest, GenericSetterTakesEveryTableOptionByName) {
  for (const memkv::config::test_samples::Sample& s : memkv::config::test_samples::Samples()) {
    OptionsPtr o = TcpOptions(server());
    EXPECT_EQ(memkv_options_set(o.get(), s.name.c_str(), s.good.c_str()), MEMKV_OK) << s.name << ": " << LastError();
    EXPECT_EQ(memkv_options_set(o.get(), s.name.c_str(), s.bad.c_str()), MEMKV_INVALID_ARGUMENT) << s.name;
    EXPECT_NE(LastError().find(s.name + ": "), std::string::npos) << LastError();
  }
  OptionsPtr o = TcpOptions(server());
  EXPECT_EQ(memkv_options_set(o.get(), "connect_timeout_ms", "250"), MEMKV_OK);
  EXPECT_EQ(memkv_options_set(o.get(), "rdma_traffic_class", "auto"), MEMKV_OK);
  EXPECT_EQ(memkv_options_set(o.get(), "log_level", "error"), MEMKV_OK);
  ClientPtr c = Open(o.get());
  ASSERT_NE(c, nullptr) << LastError();
  EXPECT_EQ(memkv_options_set(o.get(), "sever", "x"), MEMKV_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("unknown client option 'sever'"), std::string::npos) << LastError();
}

TEST_F(CApiTest, ServerListsAreSplitTrimmedAndAppended) {
  OptionsPtr o = TcpOptions(server());
  // Blanks and empty entries are dropped; the one server is then listed twice.
  ASSERT_EQ(memkv_options_set_servers(o.get(), (" " + server().address() + " ,,").c_str()), MEMKV_OK);
  ClientPtr one = Open(o.get());
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(memkv_put(one.get(), "s", 1, "v", 1), MEMKV_OK) << LastError();
  ASSERT_EQ(memkv_options_add_server(o.get(), server().address().c_str()), MEMKV_OK);
  memkv_client_t* c = nullptr;
  EXPECT_EQ(memkv_client_open_options(o.get(), &c), MEMKV_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("listed twice"), std::string::npos) << LastError();
}

TEST_F(CApiTest, OptionsOutliveNothing) {
  // The client copies the options: destroying them first changes nothing.
  OptionsPtr o = TcpOptions(server());
  ClientPtr c = Open(o.get());
  o.reset();
  EXPECT_EQ(memkv_put(c.get(), "copied", 6, "v", 1), MEMKV_OK) << LastError();
}

TEST_F(CApiTest, TimeoutReachesTheClient) {
  ServerProcess paused;
  ASSERT_TRUE(paused.Start().ok());
  OptionsPtr o = TcpOptions(paused);
  ASSERT_EQ(memkv_options_set_timeout_ms(o.get(), 200), MEMKV_OK);
  ClientPtr c = Open(o.get());
  ASSERT_EQ(memkv_put(c.get(), "t", 1, "v", 1), MEMKV_OK) << LastError();  // connected
  paused.Pause();
  const auto start = std::chrono::steady_clock::now();
  char buf[8];
  size_t len = 0;
  const memkv_status_t s = memkv_get(c.get(), "t", 1, buf, sizeof(buf), &len);
  const auto took = std::chrono::steady_clock::now() - start;
  paused.Resume();
  EXPECT_EQ(s, MEMKV_DEADLINE_EXCEEDED) << LastError();
  // The default deadline is 5000 ms.
  EXPECT_LT(took, std::chrono::milliseconds(2500));
}

TEST_F(CApiTest, PrometheusBindServesTheClientsMetrics) {
  const uint16_t port = FreePort();
  OptionsPtr o = TcpOptions(server());
  ASSERT_EQ(memkv_options_set_prometheus_bind(o.get(), ("127.0.0.1:" + std::to_string(port)).c_str()), MEMKV_OK);
  ClientPtr c = Open(o.get());
  ASSERT_EQ(memkv_put(c.get(), "p", 1, "value", 5), MEMKV_OK) << LastError();
  HttpResult r = HttpRequestTo(port, "GET", "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(PrometheusSamples(r.body)["memkv_client_requests_total{op=\"put\",transport=\"tcp\"}"], 1);

  // A port that is taken fails the open, naming the address.
  Result<UniqueFd> taken = io::ListenTcp("127.0.0.1", 0, 1);
  ASSERT_TRUE(taken.ok());
  const std::string bind = "127.0.0.1:" + std::to_string(*io::LocalPort(taken->get()));
  ASSERT_EQ(memkv_options_set_prometheus_bind(o.get(), bind.c_str()), MEMKV_OK);
  memkv_client_t* bad = nullptr;
  EXPECT_NE(memkv_client_open_options(o.get(), &bad), MEMKV_OK);
  EXPECT_NE(LastError().find(bind), std::string::npos) << LastError();
}

// A real event that logs at DEBUG: a malformed request to the client's own
// metrics endpoint. The line is written before the 400 goes out, so once the
// answer is in, the callback has had it or never will.
TEST_F(CApiTest, LogCallbackGetsLinesAtItsLevelOnly) {
  auto bad_request_lines = [&](int level) {
    LogLines lines;
    const uint16_t port = FreePort();
    OptionsPtr o = TcpOptions(server());
    EXPECT_EQ(memkv_options_set_prometheus_bind(o.get(), ("127.0.0.1:" + std::to_string(port)).c_str()), MEMKV_OK);
    EXPECT_EQ(memkv_options_set_log_level(o.get(), level), MEMKV_OK);
    EXPECT_EQ(memkv_options_set_log_callback(o.get(), &LogLines::Collect, &lines), MEMKV_OK);
    ClientPtr c = Open(o.get());
    EXPECT_EQ(HttpRequestTo(port, "", "", 5000, "NOT HTTP AT ALL\r\n\r\n").status, 400);
    return lines.Lines();
  };
  std::vector<LogLines::Line> debug = bad_request_lines(MEMKV_LOG_DEBUG);
  ASSERT_FALSE(debug.empty());
  bool found = false;
  for (const LogLines::Line& line : debug) {
    found = found || (line.level == MEMKV_LOG_DEBUG && line.message.find("bad request") != std::string::npos);
  }
  EXPECT_TRUE(found) << debug.front().message;
  EXPECT_TRUE(bad_request_lines(MEMKV_LOG_INFO).empty());
}

// Transport auto: a host without an RDMA device says so once at INFO; one
// with a device but a server that refuses RDMA falls back with a WARN.
TEST_F(CApiTest, LogCallbackGetsTheClientsOwnRdmaLines) {
  LogLines lines;
  OptionsPtr o = TcpOptions(server());
  ASSERT_EQ(memkv_options_set_transport(o.get(), "auto"), MEMKV_OK);
  ASSERT_EQ(memkv_options_set_log_level(o.get(), MEMKV_LOG_INFO), MEMKV_OK);
  ASSERT_EQ(memkv_options_set_log_callback(o.get(), &LogLines::Collect, &lines), MEMKV_OK);
  ClientPtr c = Open(o.get());
  ASSERT_EQ(memkv_put(c.get(), "auto", 4, "v", 1), MEMKV_OK) << LastError();
  memkv_stats_t stats;
  stats.struct_size = sizeof(stats);
  ASSERT_EQ(memkv_client_stats(c.get(), &stats), MEMKV_OK);
  if (stats.rdma_state == MEMKV_RDMA_ACTIVE) GTEST_SKIP() << "RDMA works here: nothing to log";
  const int level = stats.rdma_state == MEMKV_RDMA_NO_DEVICE ? MEMKV_LOG_INFO : MEMKV_LOG_WARN;
  EXPECT_TRUE(lines.Has(level, "inline-bulk TCP"))
      << "state " << stats.rdma_state << ", " << lines.Lines().size() << " lines";
  EXPECT_NE(std::string(stats.fallback_reason), "");
  for (const LogLines::Line& line : lines.Lines()) EXPECT_EQ(line.component, "client") << line.message;
}

TEST_F(CApiTest, SettersCheckTheirArguments) {
  OptionsPtr o(memkv_options_create());
  EXPECT_EQ(memkv_options_set_log_level(o.get(), 5), MEMKV_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("level 5"), std::string::npos) << LastError();
  EXPECT_EQ(memkv_options_set_log_level(o.get(), -1), MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(memkv_options_set_log_level(o.get(), MEMKV_LOG_OFF), MEMKV_OK);
  EXPECT_EQ(memkv_options_set_servers(nullptr, "a:1"), MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "InvalidArgument: memkv_options_set_servers: options is NULL");
  EXPECT_EQ(memkv_options_set_transport(o.get(), nullptr), MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "InvalidArgument: memkv_options_set_transport: transport is NULL");
  EXPECT_EQ(memkv_options_set_rdma_qps(nullptr, 1), MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(memkv_options_set_log_callback(o.get(), nullptr, nullptr), MEMKV_OK);
  memkv_client_t* c = nullptr;
  EXPECT_EQ(memkv_client_open_options(nullptr, &c), MEMKV_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("options is NULL"), std::string::npos) << LastError();
  EXPECT_EQ(memkv_client_open_options(o.get(), nullptr), MEMKV_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("out is NULL"), std::string::npos) << LastError();
  memkv_options_destroy(nullptr);
  memkv_client_close(nullptr);
}

TEST_F(CApiTest, RdmaDevicesReachTheClient) {
  OptionsPtr o = TcpOptions(server());
  ASSERT_EQ(memkv_options_set_transport(o.get(), "rdma"), MEMKV_OK);
  ASSERT_EQ(memkv_options_set_rdma_devices(o.get(), "nosuchdev0, nosuchdev1"), MEMKV_OK);
  memkv_client_t* c = nullptr;
  ASSERT_NE(memkv_client_open_options(o.get(), &c), MEMKV_OK);
  // Without any device the engine stops before looking at the list.
  if (LastError().find("no RDMA device") != std::string::npos) GTEST_SKIP() << LastError();
  EXPECT_NE(LastError().find("nosuchdev0"), std::string::npos) << LastError();
}

// The keys of a batch, as the C arrays want them.
struct Keys {
  explicit Keys(std::vector<std::string> key_names) : names(std::move(key_names)) {
    for (const std::string& n : names) {
      ptrs.push_back(n.data());
      lens.push_back(n.size());
    }
  }
  std::vector<std::string> names;
  std::vector<const void*> ptrs;
  std::vector<size_t> lens;
};

TEST_F(CApiTest, ListKeysWalksPagesWithTheCursorAndFreesThem) {
  ClientPtr c = Open(TcpOptions(server()).get());
  std::vector<std::string> keys;
  for (int i = 0; i < 25; ++i) keys.push_back("capi-list/" + std::to_string(100 + i));
  for (const std::string& k : keys) ASSERT_EQ(memkv_put(c.get(), k.data(), k.size(), "v", 1), MEMKV_OK) << LastError();
  std::vector<std::string> listed;
  std::string cursor;
  int pages = 0;
  do {
    memkv_key_page_t* page = nullptr;
    ASSERT_EQ(memkv_list_keys(c.get(), "capi-list/", 10, cursor.empty() ? nullptr : cursor.data(), cursor.size(), 10,
                              &page),
              MEMKV_OK)
        << LastError();
    ASSERT_LE(memkv_key_page_count(page), 10u);
    for (size_t i = 0; i < memkv_key_page_count(page); ++i) {
      size_t len = 0;
      const void* k = memkv_key_page_key(page, i, &len);
      listed.emplace_back(static_cast<const char*>(k), len);
    }
    size_t len = 0;
    EXPECT_EQ(memkv_key_page_key(page, memkv_key_page_count(page), &len), nullptr);
    EXPECT_EQ(len, 0u);
    const void* next = memkv_key_page_cursor(page, &len);
    cursor.assign(next == nullptr ? "" : static_cast<const char*>(next), len);
    memkv_key_page_free(page);
    ++pages;
  } while (!cursor.empty());
  EXPECT_EQ(listed, keys);
  EXPECT_EQ(pages, 3);
  memkv_key_page_t* page = nullptr;
  EXPECT_EQ(memkv_list_keys(c.get(), nullptr, 0, nullptr, 0, 0, &page), MEMKV_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("page_size 0"), std::string::npos) << LastError();
  EXPECT_EQ(memkv_list_keys(c.get(), nullptr, 3, nullptr, 0, 10, &page), MEMKV_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("prefix is NULL"), std::string::npos) << LastError();
  EXPECT_EQ(memkv_key_page_count(nullptr), 0u);
  memkv_key_page_free(nullptr);
}

TEST_F(CApiTest, BatchPutGetExistsGiveStatusesAndThePresentPrefix) {
  ClientPtr c = Open(TcpOptions(server()).get());
  Keys put({"b0", "b1", "b2", "b3"});
  std::vector<std::vector<uint8_t>> values;
  std::vector<const void*> value_ptrs;
  std::vector<size_t> value_lens;
  for (size_t i = 0; i < 4; ++i) {
    values.push_back(Pattern(1000 * (i + 1), i));
    value_ptrs.push_back(values[i].data());
    value_lens.push_back(values[i].size());
  }
  memkv_status_t statuses[4];
  size_t prefix = 0;
  ASSERT_EQ(memkv_batch_put(c.get(), put.ptrs.data(), put.lens.data(), value_ptrs.data(), value_lens.data(), 4,
                            statuses, &prefix),
            MEMKV_OK)
      << LastError();
  EXPECT_EQ(prefix, 4u);
  for (memkv_status_t s : statuses) EXPECT_EQ(s, MEMKV_OK);

  // A miss in the middle: two present, then the prefix stops.
  Keys get({"b0", "b1", "b-missing", "b3"});
  std::vector<std::vector<uint8_t>> bufs(4, std::vector<uint8_t>(8192, 0xee));
  std::vector<void*> buf_ptrs;
  std::vector<size_t> buf_lens;
  for (auto& b : bufs) {
    buf_ptrs.push_back(b.data());
    buf_lens.push_back(b.size());
  }
  size_t got_lens[4] = {9, 9, 9, 9};
  ASSERT_EQ(memkv_batch_get(c.get(), get.ptrs.data(), get.lens.data(), buf_ptrs.data(), buf_lens.data(), 4, got_lens,
                            statuses, &prefix),
            MEMKV_OK)
      << LastError();
  EXPECT_EQ(prefix, 2u);
  EXPECT_EQ(statuses[2], MEMKV_NOT_FOUND);
  EXPECT_EQ(got_lens[2], 0u);
  for (size_t i : {0u, 1u, 3u}) {
    EXPECT_EQ(statuses[i], MEMKV_OK) << i;
    ASSERT_EQ(got_lens[i], values[i].size()) << i;
    EXPECT_EQ(std::memcmp(bufs[i].data(), values[i].data(), got_lens[i]), 0) << i;
  }

  // A buffer too small for its value fails that key alone, and the message
  // of that key becomes the last error.
  buf_lens[1] = 10;
  ASSERT_EQ(memkv_batch_get(c.get(), get.ptrs.data(), get.lens.data(), buf_ptrs.data(), buf_lens.data(), 4, got_lens,
                            statuses, &prefix),
            MEMKV_OK);
  EXPECT_EQ(prefix, 1u);
  EXPECT_EQ(statuses[1], MEMKV_TOO_LARGE);
  EXPECT_EQ(got_lens[1], 0u);
  EXPECT_EQ(statuses[3], MEMKV_OK);
  EXPECT_NE(LastError().find("TooLarge"), std::string::npos) << LastError();

  Keys exists({"b0", "b1", "b-missing", "b3"});
  ASSERT_EQ(memkv_batch_exists(c.get(), exists.ptrs.data(), exists.lens.data(), 4, statuses, nullptr), MEMKV_OK);
  EXPECT_EQ(statuses[2], MEMKV_NOT_FOUND);
  EXPECT_EQ(statuses[3], MEMKV_OK);
}

TEST_F(CApiTest, BatchesCheckTheirArrays) {
  ClientPtr c = Open(TcpOptions(server()).get());
  Keys keys({"n0", "n1"});
  const void* values[] = {"x", nullptr};
  const size_t value_lens[] = {1, 5};
  memkv_status_t statuses[2];
  EXPECT_EQ(memkv_batch_put(c.get(), nullptr, keys.lens.data(), values, value_lens, 2, statuses, nullptr),
            MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "InvalidArgument: memkv_batch_put: keys is NULL");
  EXPECT_EQ(memkv_batch_put(c.get(), keys.ptrs.data(), keys.lens.data(), values, value_lens, 2, statuses, nullptr),
            MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "InvalidArgument: memkv_batch_put: values[1] is NULL");
  size_t lens[2];
  EXPECT_EQ(memkv_batch_get(c.get(), keys.ptrs.data(), keys.lens.data(), nullptr, keys.lens.data(), 2, lens, statuses,
                            nullptr),
            MEMKV_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("bufs is NULL"), std::string::npos) << LastError();
  // An empty key fails that key alone; nothing at all is fine.
  const void* empty_key[] = {nullptr, "n1"};
  const size_t empty_lens[] = {0, 2};
  const size_t ok_value_lens[] = {1, 0};
  ASSERT_EQ(memkv_batch_put(c.get(), empty_key, empty_lens, values, ok_value_lens, 2, statuses, nullptr), MEMKV_OK);
  EXPECT_EQ(statuses[0], MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(statuses[1], MEMKV_OK);
  size_t prefix = 7;
  EXPECT_EQ(memkv_batch_get(c.get(), nullptr, nullptr, nullptr, nullptr, 0, nullptr, nullptr, &prefix), MEMKV_OK);
  EXPECT_EQ(prefix, 0u);
}

TEST_F(CApiTest, GetAllocReturnsBuffersTheCallerFrees) {
  ClientPtr c = Open(TcpOptions(server()).get());
  const std::vector<uint8_t> big = Pattern(3 << 20, 5);
  ASSERT_EQ(memkv_put(c.get(), "big", 3, big.data(), big.size()), MEMKV_OK) << LastError();
  ASSERT_EQ(memkv_put(c.get(), "empty", 5, nullptr, 0), MEMKV_OK) << LastError();

  void* value = nullptr;
  size_t len = 0;
  ASSERT_EQ(memkv_get_alloc(c.get(), "big", 3, &value, &len), MEMKV_OK) << LastError();
  ASSERT_EQ(len, big.size());
  EXPECT_EQ(std::memcmp(value, big.data(), len), 0);
  memkv_free(value);

  ASSERT_EQ(memkv_get_alloc(c.get(), "empty", 5, &value, &len), MEMKV_OK) << LastError();
  EXPECT_NE(value, nullptr);
  EXPECT_EQ(len, 0u);
  memkv_free(value);

  len = 9;
  EXPECT_EQ(memkv_get_alloc(c.get(), "nothing", 7, &value, &len), MEMKV_NOT_FOUND);
  EXPECT_EQ(value, nullptr);
  EXPECT_EQ(len, 0u);
  EXPECT_EQ(memkv_get_alloc(c.get(), "big", 3, nullptr, &len), MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "InvalidArgument: memkv_get_alloc: value is NULL");
  memkv_free(nullptr);
}

TEST_F(CApiTest, StatsCountTheOperations) {
  ClientPtr c = Open(TcpOptions(server()).get());
  const std::vector<uint8_t> value = Pattern(1000, 3);
  for (const char* key : {"s0", "s1", "s2"}) ASSERT_EQ(memkv_put(c.get(), key, 2, value.data(), 1000), MEMKV_OK);
  std::vector<uint8_t> buf(1000);
  size_t len = 0;
  ASSERT_EQ(memkv_get(c.get(), "s0", 2, buf.data(), buf.size(), &len), MEMKV_OK);
  ASSERT_EQ(memkv_get(c.get(), "s1", 2, buf.data(), buf.size(), &len), MEMKV_OK);
  ASSERT_EQ(memkv_get(c.get(), "sX", 2, buf.data(), buf.size(), &len), MEMKV_NOT_FOUND);

  memkv_stats_t stats;
  std::memset(&stats, 0xab, sizeof(stats));
  stats.struct_size = sizeof(stats);
  ASSERT_EQ(memkv_client_stats(c.get(), &stats), MEMKV_OK) << LastError();
  EXPECT_EQ(stats.struct_size, sizeof(stats));
  EXPECT_EQ(stats.ops, 6u);
  EXPECT_EQ(stats.tcp_ops, 5u) << "a miss moves no value";
  EXPECT_EQ(stats.tcp_bytes, 5000u);
  EXPECT_GE(stats.bytes_sent, 3000u);
  EXPECT_GE(stats.bytes_received, 2000u);
  EXPECT_GE(stats.connections_opened, 1u);
  EXPECT_EQ(stats.timeouts, 0u);
  EXPECT_EQ(stats.checksum_failures, 0u);
  EXPECT_EQ(stats.rdma_ops, 0u);
  EXPECT_EQ(stats.fallbacks, 0u);
  EXPECT_EQ(stats.transport, MEMKV_TRANSPORT_TCP);
  EXPECT_EQ(stats.rdma_state, MEMKV_RDMA_OFF);
  EXPECT_STREQ(stats.fallback_reason, "");
  EXPECT_STREQ(stats.rdma_path, "");
  for (uint64_t n : stats.completion_errors) EXPECT_EQ(n, 0u);
  EXPECT_STREQ(memkv_transport(c.get()), "tcp");
}

// A program built with a newer header passes a longer struct: the library
// fills what it knows, zeroes the rest, and says how much it filled.
TEST_F(CApiTest, StatsStructSizeLetsTheStructGrow) {
  ClientPtr c = Open(TcpOptions(server()).get());
  ASSERT_EQ(memkv_put(c.get(), "g", 1, "v", 1), MEMKV_OK);
  std::vector<uint8_t> newer(sizeof(memkv_stats_t) + 64, 0xab);
  auto* stats = reinterpret_cast<memkv_stats_t*>(newer.data());
  stats->struct_size = newer.size();
  ASSERT_EQ(memkv_client_stats(c.get(), stats), MEMKV_OK) << LastError();
  EXPECT_EQ(stats->struct_size, sizeof(memkv_stats_t));
  EXPECT_EQ(stats->ops, 1u);
  for (size_t i = sizeof(memkv_stats_t); i < newer.size(); ++i) ASSERT_EQ(newer[i], 0) << i;

  memkv_stats_t old;
  old.struct_size = MEMKV_STATS_MIN_SIZE - 8;
  EXPECT_EQ(memkv_client_stats(c.get(), &old), MEMKV_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("struct_size"), std::string::npos) << LastError();
  EXPECT_EQ(memkv_client_stats(c.get(), nullptr), MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(memkv_client_stats(nullptr, &old), MEMKV_INVALID_ARGUMENT);
  EXPECT_STREQ(memkv_transport(nullptr), "");
}

TEST(CApiVersionTest, VersionIsTheLibrarysInEveryForm) {
  EXPECT_EQ(std::string(memkv_version()), std::string(LibraryVersion()));
  EXPECT_STREQ(memkv_version(), MEMKV_VERSION_STRING);
  unsigned major = 0, minor = 0, patch = 0;
  ASSERT_EQ(std::sscanf(memkv_version(), "%u.%u.%u", &major, &minor, &patch), 3) << memkv_version();
  EXPECT_EQ(major, unsigned{MEMKV_VERSION_MAJOR});
  EXPECT_EQ(minor, unsigned{MEMKV_VERSION_MINOR});
  EXPECT_EQ(patch, unsigned{MEMKV_VERSION_PATCH});
  EXPECT_EQ(memkv_version_number(), major * 10000 + minor * 100 + patch);
  EXPECT_EQ(memkv_version_number(), uint32_t{MEMKV_VERSION_NUMBER});
}

TEST(CApiNamesTest, CodesAndLevelsHaveTheirStableNames) {
  for (int code = MEMKV_OK; code <= MEMKV_DRAINING; ++code) {
    EXPECT_EQ(std::string(memkv_status_name(code)), StatusCodeName(static_cast<StatusCode>(code)));
  }
  EXPECT_STREQ(memkv_status_name(MEMKV_BUSY), "Busy");
  EXPECT_STREQ(memkv_status_name(MEMKV_DRAINING), "Draining");
  EXPECT_STREQ(memkv_status_name(MEMKV_DRAINING + 1), "Unknown");
  EXPECT_STREQ(memkv_status_name(-1), "Unknown");
  EXPECT_STREQ(memkv_status_name(65536 + MEMKV_NOT_FOUND), "Unknown");
  EXPECT_STREQ(memkv_log_level_name(MEMKV_LOG_DEBUG), "debug");
  EXPECT_STREQ(memkv_log_level_name(MEMKV_LOG_OFF), "off");
  EXPECT_STREQ(memkv_log_level_name(9), "unknown");
}

TEST(CApiErrorTest, TheLastErrorBelongsToItsThread) {
  EXPECT_EQ(memkv_put(nullptr, "k", 1, "v", 1), MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "InvalidArgument: memkv_put: client is NULL");
  std::string other = "unset";
  std::thread([&] { other = memkv_last_error(); }).join();
  EXPECT_EQ(other, "");
  // Success leaves the message alone.
  OptionsPtr o(memkv_options_create());
  EXPECT_EQ(memkv_options_set_rdma_mtu(o.get(), 1024), MEMKV_OK);
  EXPECT_EQ(LastError(), "InvalidArgument: memkv_put: client is NULL");
}

// exit() destroys the exiting thread's thread_local objects before it runs
// the atexit handlers. The last error was once a thread_local std::string: a
// call from a handler wrote its message into the freed buffer (a
// heap-use-after-free under ASan; without it, into whatever block malloc had
// handed out since). The handler takes one block of each small size first,
// the freed buffer among them, and checks that none was written.
void CallTheApiAtExit() {
  constexpr int kBlocks = 16;
  constexpr size_t kStride = 16;  // malloc's size classes
  char* blocks[kBlocks];
  for (int i = 0; i < kBlocks; ++i) {
    blocks[i] = static_cast<char*>(std::malloc(kStride * (i + 1) + 8));
    std::memset(blocks[i], 'c', kStride * (i + 1) + 8);
  }
  memkv_status_t status = memkv_get(nullptr, "k", 1, nullptr, 0, nullptr);
  for (int i = 0; i < kBlocks; ++i) {
    for (size_t j = 0; j < kStride * (i + 1) + 8; ++j) {
      if (blocks[i][j] != 'c') {
        std::fprintf(stderr, "the call at exit wrote into a block of %zu bytes\n", kStride * (i + 1) + 8);
        std::_Exit(3);
      }
    }
  }
  for (char* block : blocks) std::free(block);
  std::fprintf(stderr, "at exit: %s, %s\n", memkv_status_name(status), memkv_last_error());
}

TEST(CApiErrorTest, TheLastErrorWorksInAnAtexitHandler) {
  EXPECT_EXIT(
      {
        // A message too long for a small-string buffer: held on the heap.
        memkv_put(nullptr, "k", 1, "v", 1);
        std::atexit(CallTheApiAtExit);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "at exit: InvalidArgument, InvalidArgument: memkv_get: client is NULL");
}

TEST(CApiErrorTest, ALongMessageIsCutToFit) {
  OptionsPtr o(memkv_options_create());
  const std::string name(10000, 'x');
  EXPECT_EQ(memkv_options_set(o.get(), name.c_str(), "1"), MEMKV_INVALID_ARGUMENT);
  const std::string message = LastError();
  EXPECT_EQ(message.rfind("InvalidArgument: unknown client option 'xxx", 0), 0u) << message.substr(0, 200);
  EXPECT_EQ(message.size(), 4095u);
  EXPECT_EQ(message.substr(message.size() - 3), "...");
  // A short one after it is whole.
  EXPECT_EQ(memkv_put(nullptr, "k", 1, "v", 1), MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "InvalidArgument: memkv_put: client is NULL");
}

}  // namespace
}  // namespace memkv::testing
