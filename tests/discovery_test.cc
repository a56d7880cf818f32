// The client's Resolver (src/client/discovery.h) against a real dnsmasq on a
// loopback port: dns: and srv: entries, record changes, lookups that fail,
// DNS servers that refuse or never answer. Skips only when dnsmasq is not
// installed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "base/unique_fd.h"
#include "client/discovery.h"
#include "config/server_source.h"
#include "memkv/client.h"
#include "tests/dnsmasq_fixture.h"

namespace memkv::testing {
namespace {

using client::ResolvedServer;
using client::Resolver;

constexpr uint32_t kTimeoutMs = 2000;

std::vector<config::ServerSource> Entries(const std::vector<std::string>& texts) {
  std::vector<config::ServerSource> out;
  for (const std::string& t : texts) {
    Result<config::ServerSource> s = config::ParseServerSource(t);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) out.push_back(std::move(*s));
  }
  return out;
}

std::vector<std::string> Names(const std::vector<ResolvedServer>& servers) {
  std::vector<std::string> out;
  for (const ResolvedServer& s : servers) out.push_back(s.name);
  return out;
}

std::string Messages(const std::vector<Status>& errors) {
  std::string out;
  for (const Status& s : errors) out += s.ToString() + "\n";
  return out;
}

bool Has(const std::string& text, std::initializer_list<std::string> parts) {
  for (const std::string& p : parts) {
    if (text.find(p) == std::string::npos) return false;
  }
  return true;
}

class DiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<DnsmasqServer>> dns = DnsmasqServer::Start();
    if (!dns.ok() && dns.status().code() == StatusCode::kUnavailable) GTEST_SKIP() << dns.status().message();
    ASSERT_TRUE(dns.ok()) << dns.status().ToString();
    dns_ = std::move(*dns);
    Result<std::unique_ptr<Resolver>> resolver = Resolver::Create(dns_->address());
    ASSERT_TRUE(resolver.ok()) << resolver.status().ToString();
    resolver_ = std::move(*resolver);
  }

  std::vector<ResolvedServer> Resolve(const std::vector<std::string>& entries, std::vector<Status>* errors) {
    std::vector<config::ServerSource> parsed = Entries(entries);
    return resolver_->Resolve(parsed, kTimeoutMs, errors);
  }

  std::unique_ptr<DnsmasqServer> dns_;
  std::unique_ptr<Resolver> resolver_;
};

TEST_F(DiscoveryTest, DnsNameGivesEveryAddressAtTheEntrysPort) {
  ASSERT_TRUE(dns_->SetAddresses("memkv.test", {"127.0.0.3", "127.0.0.2", "127.0.0.4"}).ok());
  std::vector<Status> errors;
  std::vector<ResolvedServer> servers = Resolve({"dns:memkv.test:9900"}, &errors);
  EXPECT_TRUE(errors.empty()) << Messages(errors);
  ASSERT_EQ(servers.size(), 3u);
  EXPECT_EQ(Names(servers), (std::vector<std::string>{"127.0.0.2:9900", "127.0.0.3:9900", "127.0.0.4:9900"}));
  for (const ResolvedServer& s : servers) {
    EXPECT_EQ(s.port, 9900);
    EXPECT_EQ(s.source, "dns:memkv.test:9900");
    EXPECT_EQ(s.name, s.host + ":9900");
  }
}

TEST_F(DiscoveryTest, ResolveFollowsChangedRecords) {
  ASSERT_TRUE(dns_->SetAddresses("memkv.test", {"127.0.0.2", "127.0.0.3", "127.0.0.4"}).ok());
  std::vector<Status> errors;
  EXPECT_EQ(Resolve({"dns:memkv.test:9900"}, &errors).size(), 3u);

  ASSERT_TRUE(dns_->SetAddresses("memkv.test", {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}).ok());
  EXPECT_EQ(Names(Resolve({"dns:memkv.test:9900"}, &errors)),
            (std::vector<std::string>{"127.0.0.2:9900", "127.0.0.3:9900", "127.0.0.4:9900", "127.0.0.5:9900"}));

  ASSERT_TRUE(dns_->SetAddresses("memkv.test", {"127.0.0.4", "127.0.0.5"}).ok());
  EXPECT_EQ(Names(Resolve({"dns:memkv.test:9900"}, &errors)),
            (std::vector<std::string>{"127.0.0.4:9900", "127.0.0.5:9900"}));
  EXPECT_TRUE(errors.empty()) << Messages(errors);
}

TEST_F(DiscoveryTest, SrvGivesEachTargetAtItsRecordsPort) {
  ASSERT_TRUE(dns_->SetSrv("_memkv._tcp.memkv.test", {{"a.memkv.test", 9901, "127.0.0.2"},
                                                      {"b.memkv.test", 9902, "127.0.0.3"},
                                                      {"c.memkv.test", 9903, "127.0.0.4"}})
                  .ok());
  std::vector<Status> errors;
  std::vector<ResolvedServer> servers = Resolve({"srv:memkv.test"}, &errors);
  EXPECT_TRUE(errors.empty()) << Messages(errors);
  EXPECT_EQ(Names(servers), (std::vector<std::string>{"127.0.0.2:9901", "127.0.0.3:9902", "127.0.0.4:9903"}));
  for (const ResolvedServer& s : servers) EXPECT_EQ(s.source, "srv:memkv.test");

  // The full owner name works as well; a changed set is followed.
  ASSERT_TRUE(dns_->SetSrv("_memkv._tcp.memkv.test", {{"a.memkv.test", 9901, "127.0.0.2"},
                                                      {"d.memkv.test", 9904, "127.0.0.5"}})
                  .ok());
  EXPECT_EQ(Names(Resolve({"srv:_memkv._tcp.memkv.test"}, &errors)),
            (std::vector<std::string>{"127.0.0.2:9901", "127.0.0.5:9904"}));
  EXPECT_TRUE(errors.empty()) << Messages(errors);
}

TEST_F(DiscoveryTest, SrvTargetAddressesFromTheirOwnRecords) {
  // The target's addresses come from the hosts file, not with the SRV
  // record; two targets share an address at different ports.
  ASSERT_TRUE(dns_->SetAddresses("pool.memkv.test", {"127.0.0.6", "127.0.0.7"}).ok());
  ASSERT_TRUE(dns_->SetSrv("_memkv._tcp.memkv.test", {{"pool.memkv.test", 9901, ""},
                                                      {"other.memkv.test", 9902, "127.0.0.6"}})
                  .ok());
  std::vector<Status> errors;
  EXPECT_EQ(Names(Resolve({"srv:memkv.test"}, &errors)),
            (std::vector<std::string>{"127.0.0.6:9901", "127.0.0.6:9902", "127.0.0.7:9901"}));
  EXPECT_TRUE(errors.empty()) << Messages(errors);
}

TEST_F(DiscoveryTest, SrvTargetWithoutAddressesInTheAnswerIsLookedUp) {
  // An SRV record's target that is an alias comes without addresses in the
  // answer: the resolver asks for them (following the CNAME). A dns: name
  // that is an alias resolves too.
  ASSERT_TRUE(dns_->SetAddresses("pool.memkv.test", {"127.0.0.6", "127.0.0.7"}).ok());
  ASSERT_TRUE(dns_->SetCname("alias.memkv.test", "pool.memkv.test").ok());
  ASSERT_TRUE(dns_->SetSrv("_memkv._tcp.memkv.test", {{"alias.memkv.test", 9901, ""}}).ok());
  std::vector<Status> errors;
  EXPECT_EQ(Names(Resolve({"srv:memkv.test", "dns:alias.memkv.test:9900"}, &errors)),
            (std::vector<std::string>{"127.0.0.6:9900", "127.0.0.6:9901", "127.0.0.7:9900", "127.0.0.7:9901"}));
  EXPECT_TRUE(errors.empty()) << Messages(errors);
  EXPECT_NE(dns_->Log().find("query[A] alias.memkv.test"), std::string::npos) << dns_->Log();
}

TEST_F(DiscoveryTest, FailedLookupsNameTheEntryAndOthersStillResolve) {
  ASSERT_TRUE(dns_->SetAddresses("memkv.test", {"127.0.0.2", "127.0.0.3"}).ok());
  ASSERT_TRUE(dns_->SetSrv("_memkv._tcp.gone.test", {{"a.gone.test", 9901, "127.0.0.9"}}).ok());
  ASSERT_TRUE(dns_->SetSrv("_memkv._tcp.gone.test", {}).ok());  // no records any more
  ASSERT_TRUE(dns_->SetSrv("_memkv._tcp.only-srv.test", {{"a.only-srv.test", 9901, "127.0.0.9"}}).ok());
  std::vector<Status> errors;
  std::vector<ResolvedServer> servers =
      Resolve({"dns:nothing.test:9900", "srv:gone.test", "dns:memkv.test:9900", "dns:_memkv._tcp.only-srv.test:9900",
               "srv:nothing.test", "10.1.2.3:9900"},
              &errors);
  EXPECT_EQ(Names(servers), (std::vector<std::string>{"10.1.2.3:9900", "127.0.0.2:9900", "127.0.0.3:9900"}));
  ASSERT_EQ(errors.size(), 4u) << Messages(errors);
  const std::string from = " from " + dns_->address();
  EXPECT_TRUE(Has(errors[0].message(), {"dns:nothing.test:9900: A", "nothing.test", "no such name (NXDOMAIN)", from}))
      << errors[0].message();
  EXPECT_TRUE(Has(errors[1].message(),
                  {"srv:gone.test: SRV _memkv._tcp.gone.test: no such name (NXDOMAIN)", from}))
      << errors[1].message();
  // The name exists (it has SRV records) but has no addresses.
  EXPECT_TRUE(Has(errors[2].message(), {"dns:_memkv._tcp.only-srv.test:9900: A/AAAA _memkv._tcp.only-srv.test: "
                                        "no A or AAAA records (NODATA)",
                                        from}))
      << errors[2].message();
  EXPECT_TRUE(Has(errors[3].message(), {"srv:nothing.test: SRV _memkv._tcp.nothing.test: no such name (NXDOMAIN)"}))
      << errors[3].message();
  for (const Status& e : errors) EXPECT_EQ(e.code(), StatusCode::kNotFound) << e.ToString();
}

TEST_F(DiscoveryTest, SrvWhoseTargetsHaveNoAddressesIsAnError) {
  ASSERT_TRUE(dns_->SetSrv("_memkv._tcp.memkv.test", {{"a.memkv.test", 9901, ""}}).ok());
  std::vector<Status> errors;
  EXPECT_TRUE(Resolve({"srv:memkv.test"}, &errors).empty());
  ASSERT_EQ(errors.size(), 1u) << Messages(errors);
  EXPECT_TRUE(Has(errors[0].message(), {"srv:memkv.test: SRV _memkv._tcp.memkv.test: its targets have no A or AAAA "
                                        "records"}))
      << errors[0].message();
}

TEST_F(DiscoveryTest, AddressEntriesPassThroughDedupedAndSorted) {
  ASSERT_TRUE(dns_->SetAddresses("memkv.test", {"127.0.0.2"}).ok());
  std::vector<Status> errors;
  std::vector<ResolvedServer> servers =
      Resolve({"not-resolved.invalid:9900", "127.0.0.2:9900", "dns:memkv.test:9900", "[::1]:9900",
               "not-resolved.invalid:9900"},
              &errors);
  EXPECT_TRUE(errors.empty()) << Messages(errors);
  ASSERT_EQ(Names(servers),
            (std::vector<std::string>{"127.0.0.2:9900", "[::1]:9900", "not-resolved.invalid:9900"}));
  EXPECT_EQ(servers[0].source, "127.0.0.2:9900");  // the first entry that named it
  EXPECT_EQ(servers[1].host, "::1");
  EXPECT_EQ(servers[2].host, "not-resolved.invalid");  // as written: connecting resolves it
}

// A UDP socket bound on 127.0.0.1 that is never read: a DNS server that
// takes every query and never answers, so only a timeout ends a lookup.
class SilentUdpPort {
 public:
  SilentUdpPort() : fd_(::socket(AF_INET, SOCK_DGRAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    bound_ = ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  bool bound() const { return bound_; }
  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  UniqueFd fd_;
  bool bound_ = false;
  uint16_t port_ = 0;
};

// A port on 127.0.0.1 where nothing listens (UDP and TCP), found by binding
// and closing.
uint16_t ClosedPort() { return SilentUdpPort().port(); }

TEST(DiscoveryServerTest, DnsServerWhereNothingListensIsAnErrorPerEntry) {
  std::string server = "127.0.0.1:" + std::to_string(ClosedPort());
  Result<std::unique_ptr<Resolver>> resolver = Resolver::Create(server);
  ASSERT_TRUE(resolver.ok()) << resolver.status().ToString();
  std::vector<Status> errors;
  std::vector<config::ServerSource> entries = Entries({"dns:memkv.test:9900", "srv:memkv.test", "10.1.2.3:9900"});
  std::vector<ResolvedServer> servers = (*resolver)->Resolve(entries, 1000, &errors);
  EXPECT_EQ(Names(servers), (std::vector<std::string>{"10.1.2.3:9900"}));
  ASSERT_EQ(errors.size(), 2u) << Messages(errors);
  EXPECT_TRUE(Has(errors[0].message(), {"dns:memkv.test:9900: A memkv.test: no answer", " from " + server}))
      << errors[0].message();
  EXPECT_TRUE(Has(errors[1].message(), {"srv:memkv.test: SRV _memkv._tcp.memkv.test: no answer", " from " + server}))
      << errors[1].message();
}

TEST(DiscoveryServerTest, DnsServerThatNeverAnswersTimesOut) {
  auto silent = std::make_unique<SilentUdpPort>();
  ASSERT_TRUE(silent->bound());
  const std::string server = silent->address();
  Result<std::unique_ptr<Resolver>> resolver = Resolver::Create(server);
  ASSERT_TRUE(resolver.ok()) << resolver.status().ToString();
  std::vector<Status> errors;
  std::vector<config::ServerSource> entries = Entries({"dns:memkv.test:9900", "srv:memkv.test"});
  // Returns (within about the timeout, one budget for the call): every
  // entry fails as timed out.
  EXPECT_TRUE((*resolver)->Resolve(entries, 1000, &errors).empty());
  silent.reset();
  ASSERT_EQ(errors.size(), 2u) << Messages(errors);
  for (const Status& e : errors) {
    EXPECT_EQ(e.code(), StatusCode::kDeadlineExceeded) << e.ToString();
    EXPECT_TRUE(Has(e.message(), {"no answer within resolve_timeout_ms (1000 ms): timed out", " from " + server})) << e.message();
  }
}

TEST(DiscoveryServerTest, InvalidDnsServerIsRefusedNamingIt) {
  struct Case {
    const char* text;
    const char* why;
  };
  for (const Case& c : {Case{"nonsense", "missing ':PORT'"}, Case{"127.0.0.1", "missing ':PORT'"},
                        Case{"dns.example.com:53", "is not an IPv4 address"}, Case{"127.0.0.1:0", "out of range"},
                        Case{"127.0.0.1:65536", "out of range"}, Case{"127.0.0.1:dns", "is not a number"},
                        Case{"::1:53", "needs brackets"}, Case{"[::1]53", "missing ':PORT' after ']'"},
                        Case{"[127.0.0.1]:53", "is not an IPv6 address"}}) {
    Result<std::unique_ptr<Resolver>> r = Resolver::Create(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_TRUE(Has(r.status().message(), {"dns_server: '" + std::string(c.text) + "'", c.why, "allowed:"}))
        << r.status().message();
  }
  // An IPv6 name server is taken.
  EXPECT_TRUE(Resolver::Create("[::1]:53").ok());
}

TEST(DiscoveryServerTest, SystemResolverPassesAddressesThroughWithoutAsking) {
  Result<std::unique_ptr<Resolver>> resolver = Resolver::Create("");
  ASSERT_TRUE(resolver.ok()) << resolver.status().ToString();
  std::vector<Status> errors;
  std::vector<config::ServerSource> entries = Entries({"b.invalid:1", "a.invalid:2", "[::1]:3"});
  EXPECT_EQ(Names((*resolver)->Resolve(entries, 1000, &errors)),
            (std::vector<std::string>{"[::1]:3", "a.invalid:2", "b.invalid:1"}));
  EXPECT_TRUE(errors.empty()) << Messages(errors);
}

// A Client's dns: entry against a DNS server that never answers: the lookup
// gives up after resolve_timeout_ms (libresolv: at least a second), not after
// connect_timeout_ms (an hour here), and the WARN line names the option.
TEST(DiscoveryServerTest, ClientLookupThatOverrunsResolveTimeoutFailsNamingIt) {
  auto silent = std::make_unique<SilentUdpPort>();
  ASSERT_TRUE(silent->bound());
  const std::string server = silent->address();

  std::mutex mu;
  std::string warnings;
  ClientOptions options;
  options.servers = {"dns:memkv.test:9900"};
  options.auth_key_hex = std::string(64, 'a');
  options.transport = "tcp";
  options.dns_server = server;
  options.discovery_interval_ms = 0;
  options.connect_timeout_ms = 3'600'000;
  options.resolve_timeout_ms = 300;
  options.log_callback = [&](ClientLogLevel level, std::string_view, std::string_view message) {
    std::lock_guard<std::mutex> lock(mu);
    if (level >= ClientLogLevel::kWarn) warnings += std::string(message) + "\n";
  };
  const auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<Client>> client = Client::Create(options);
  const auto took = std::chrono::steady_clock::now() - start;
  silent.reset();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_LT(took, std::chrono::seconds(10));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_TRUE(Has(warnings, {"server list entry dns:memkv.test:9900", "A memkv.test: no answer within "
                             "resolve_timeout_ms (300 ms): timed out from " + server}))
      << warnings;
}

// Linux's loopback answers all of 127/8: servers on 127.0.0.2..4 at one port
// (what a dns: name with three addresses points a client at) are reachable.
TEST(DiscoveryServerTest, LoopbackAddressesBeyond127001AreUsable) {
  std::vector<int> listeners;
  uint16_t port = 0;
  for (const char* ip : {"127.0.0.2", "127.0.0.3", "127.0.0.4"}) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, ip, &a.sin_addr);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << ip << ": " << errno;
    ASSERT_EQ(::listen(fd, 4), 0);
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);  // the first one picks; the others share it
    listeners.push_back(fd);
  }
  for (size_t i = 0; i < listeners.size(); ++i) {
    std::string ip = "127.0.0." + std::to_string(i + 2);
    int c = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
    EXPECT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << ip << ":" << port;
    int accepted = ::accept(listeners[i], nullptr, nullptr);  // it reached this listener, not another
    EXPECT_GE(accepted, 0) << ip;
    if (accepted >= 0) ::close(accepted);
    ::close(c);
  }
  for (int fd : listeners) ::close(fd);
}

}  // namespace
}  // namespace memkv::testing
