#include "config/server_source.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace memkv::config {
namespace {

using Kind = ServerSource::Kind;

TEST(ServerSourceTest, ParsesEveryForm) {
  struct Case {
    const char* text;
    Kind kind;
    const char* host;
    uint16_t port;
  };
  for (const Case& c : {
           Case{"127.0.0.1:9900", Kind::kAddress, "127.0.0.1", 9900},
           Case{"memkv-0.example.com:1", Kind::kAddress, "memkv-0.example.com", 1},
           Case{"[::1]:65535", Kind::kAddress, "::1", 65535},
           Case{"dns:memkv.prod.svc.cluster.local:9900", Kind::kDns, "memkv.prod.svc.cluster.local", 9900},
           Case{"dns:memkv:1", Kind::kDns, "memkv", 1},
           Case{"dns:memkv.test.:65535", Kind::kDns, "memkv.test.", 65535},
           Case{"srv:memkv.prod.svc.cluster.local", Kind::kSrv, "_memkv._tcp.memkv.prod.svc.cluster.local", 0},
           Case{"srv:memkv", Kind::kSrv, "_memkv._tcp.memkv", 0},
           // A name that already starts with '_' is the full SRV owner name.
           Case{"srv:_kv._tcp.example.com", Kind::kSrv, "_kv._tcp.example.com", 0},
       }) {
    SCOPED_TRACE(c.text);
    Result<ServerSource> s = ParseServerSource(c.text);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->kind, c.kind);
    EXPECT_EQ(s->host, c.host);
    EXPECT_EQ(s->port, c.port);
    EXPECT_EQ(s->text, c.text);  // as written, for messages
  }
}

void ExpectError(std::string_view text, std::initializer_list<std::string_view> parts) {
  SCOPED_TRACE(std::string(text));
  Result<ServerSource> s = ParseServerSource(text);
  ASSERT_FALSE(s.ok()) << "parsed as host '" << s->host << "' port " << s->port;
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = s.status().message();
  EXPECT_NE(m.find("'" + std::string(text) + "'"), std::string::npos) << m;  // names the entry
  for (std::string_view p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
  // Every message lists the forms allowed.
  for (std::string_view form : {"host:port", "dns:NAME:PORT", "srv:NAME"}) {
    EXPECT_NE(m.find(form), std::string::npos) << "'" << form << "' not in: " << m;
  }
}

TEST(ServerSourceTest, DnsEntryErrorsNameTheEntryAndTheCause) {
  ExpectError("dns:memkv", {"missing ':port'"});
  ExpectError("dns:memkv:", {"empty port"});
  ExpectError("dns:memkv:http", {"port 'http' is not a number"});
  ExpectError("dns:memkv:0", {"port 0 is out of range 1..65535"});
  ExpectError("dns:memkv:65536", {"port 65536 is out of range 1..65535"});
  ExpectError("dns::9900", {"empty host"});
  ExpectError("dns:[::1]:9900", {"'::1' is not a DNS name"});
  ExpectError("dns:mem kv:9900", {"hostname may hold only letters, digits, '-', '_' and '.'"});
  ExpectError("dns:memkv..test:9900", {"hostname has an empty label"});
}

TEST(ServerSourceTest, SrvEntryErrorsNameTheEntryAndTheCause) {
  ExpectError("srv:", {"the SRV name is empty"});
  ExpectError("srv:memkv:9900", {"an SRV name has no port (its records carry them)"});
  ExpectError("srv:[::1]:9900", {"an SRV name has no port"});
  ExpectError("srv:memkv..test", {"not a DNS name", "hostname has an empty label"});
  ExpectError("srv:mem kv", {"not a DNS name", "hostname may hold only letters"});
  ExpectError("srv:-memkv.test", {"not a DNS name", "starts or ends with '-'"});
}

TEST(ServerSourceTest, AddressErrorsNameTheEntryAndTheCause) {
  ExpectError("memkv", {"missing ':port'"});
  ExpectError("", {"missing ':port'"});
  ExpectError("127.0.0.1:0", {"port 0 is out of range"});
  ExpectError("::1:9900", {"an IPv6 host needs brackets"});
  ExpectError("[::1]9900", {"missing ':port' after ']'"});
  ExpectError("999.1.1.1:9900", {"'999.1.1.1' is not an IPv4 address"});
  // A misspelt prefix is an address with a bad host, and says what else is allowed.
  ExpectError("dsn:memkv:9900", {"an IPv6 host needs brackets"});
}

}  // namespace
}  // namespace memkv::config
