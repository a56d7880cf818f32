// The Resolver over libresolv: res_nquery on a resolver state of its own,
// answers parsed with ns_initparse / ns_parserr.
//
// Time: every Resolve call has one budget, `timeout_ms` (the client option
// resolve_timeout_ms, never connect_timeout_ms), shared by all its
// queries; each query gets what is left (libresolv counts in whole seconds,
// so at least one second per query, one try per name server). A query that
// would start after the budget is spent fails as timed out without being
// sent, so a DNS server that does not answer costs about `timeout_ms` per
// call, not per entry.
#include "client/discovery.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <errno.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>

#include "base/errno_text.h"
#include "config/client_config.h"

namespace memkv::client {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kDnsServerForms =
    "; allowed: IPv4:PORT (127.0.0.1:53), [IPv6]:PORT ([::1]:53), or empty for the system's name servers "
    "(/etc/resolv.conf)";

// The largest DNS message (over TCP); UDP answers are smaller.
constexpr int kAnswerBytes = 65535;

struct DnsServer {
  bool v6 = false;
  sockaddr_in v4_addr{};
  sockaddr_in6 v6_addr{};
  std::string text;  // as given, for messages
};

Result<DnsServer> ParseDnsServer(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("dns_server: '" + text + "' is not IP:PORT: " + why + std::string(kDnsServerForms));
  };
  DnsServer s;
  s.text = text;
  std::string host;
  std::string_view port_text;
  if (text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) return bad("'[' without ']'");
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') return bad("missing ':PORT' after ']'");
    port_text = std::string_view(text).substr(close + 2);
    s.v6 = true;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) return bad("missing ':PORT'");
    host = text.substr(0, colon);
    if (host.find(':') != std::string::npos) return bad("an IPv6 address needs brackets, e.g. '[::1]:53'");
    port_text = std::string_view(text).substr(colon + 1);
  }
  if (port_text.empty() || port_text.size() > 5 ||
      !std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad("port '" + std::string(port_text) + "' is not a number");
  }
  unsigned long port = std::stoul(std::string(port_text));
  if (port == 0 || port > UINT16_MAX) return bad("port " + std::to_string(port) + " is out of range 1..65535");
  if (s.v6) {
    s.v6_addr.sin6_family = AF_INET6;
    s.v6_addr.sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, host.c_str(), &s.v6_addr.sin6_addr) != 1) {
      return bad("'" + host + "' is not an IPv6 address");
    }
  } else {
    s.v4_addr.sin_family = AF_INET;
    s.v4_addr.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &s.v4_addr.sin_addr) != 1) {
      return bad("'" + host + "' is not an IPv4 address (a DNS server is named by its address)");
    }
  }
  return s;
}

const char* TypeName(int type) {
  switch (type) {
    case ns_t_a: return "A";
    case ns_t_aaaa: return "AAAA";
    case ns_t_srv: return "SRV";
    default: return "?";
  }
}

// What one query came back with: the answer section's records of the type
// asked for (addresses as text; SRV as target and port) and the additional
// section's addresses by owner name, or why there were none.
struct SrvRecord {
  std::string target;
  uint16_t port = 0;
};

enum class Outcome { kOk, kNoName, kNoData, kFailed };

struct Answer {
  Outcome outcome = Outcome::kFailed;
  Status error;  // kFailed: the cause (code and text, without the entry)
  std::string cause;  // kNoName, kNoData, kFailed: the cause as text
  std::vector<std::string> addresses;
  std::vector<SrvRecord> srv;
  std::vector<std::pair<std::string, std::string>> additional;  // (owner, address), A and AAAA
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string RcodeText(int rcode) {
  switch (rcode) {
    case ns_r_formerr: return "the server could not read the query (FORMERR)";
    case ns_r_servfail: return "server failure (SERVFAIL)";
    case ns_r_nxdomain: return "no such name (NXDOMAIN)";
    case ns_r_notimpl: return "not implemented by the server (NOTIMP)";
    case ns_r_refused: return "refused by the server (REFUSED)";
    default: return "rcode " + std::to_string(rcode);
  }
}

std::optional<std::string> AddressText(const ns_rr& rr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (ns_rr_type(rr) == ns_t_a && ns_rr_rdlen(rr) == 4) {
    if (inet_ntop(AF_INET, ns_rr_rdata(rr), text, sizeof(text)) != nullptr) return std::string(text);
  } else if (ns_rr_type(rr) == ns_t_aaaa && ns_rr_rdlen(rr) == 16) {
    if (inet_ntop(AF_INET6, ns_rr_rdata(rr), text, sizeof(text)) != nullptr) return std::string(text);
  }
  return std::nullopt;
}

// Parses a response whose rcode is NOERROR.
Answer Parse(const unsigned char* msg, int len, int type) {
  Answer a;
  ns_msg handle;
  if (ns_initparse(msg, len, &handle) < 0) {
    a.cause = "the answer could not be parsed (" + ErrnoText(errno) + ")";
    a.error = ProtocolError(a.cause);
    return a;
  }
  for (int i = 0; i < ns_msg_count(handle, ns_s_an); ++i) {
    ns_rr rr;
    if (ns_parserr(&handle, ns_s_an, i, &rr) < 0) continue;
    if (ns_rr_type(rr) != type || ns_rr_class(rr) != ns_c_in) continue;  // CNAMEs on the way
    if (type == ns_t_srv) {
      // priority(2) weight(2) port(2) target
      if (ns_rr_rdlen(rr) < 7) continue;
      const unsigned char* rd = ns_rr_rdata(rr);
      char target[NS_MAXDNAME];
      if (dn_expand(ns_msg_base(handle), ns_msg_end(handle), rd + 6, target, sizeof(target)) < 0) continue;
      a.srv.push_back({target, static_cast<uint16_t>((rd[4] << 8) | rd[5])});
    } else if (std::optional<std::string> text = AddressText(rr)) {
      a.addresses.push_back(std::move(*text));
    }
  }
  for (int i = 0; i < ns_msg_count(handle, ns_s_ar); ++i) {
    ns_rr rr;
    if (ns_parserr(&handle, ns_s_ar, i, &rr) < 0 || ns_rr_class(rr) != ns_c_in) continue;
    if (std::optional<std::string> text = AddressText(rr)) {
      a.additional.emplace_back(Lower(ns_rr_name(rr)), std::move(*text));
    }
  }
  if (a.addresses.empty() && a.srv.empty()) {
    a.outcome = Outcome::kNoData;
    a.cause = std::string("no ") + TypeName(type) + " records (NODATA)";
  } else {
    a.outcome = Outcome::kOk;
  }
  return a;
}

class ResolvResolver final : public Resolver {
 public:
  explicit ResolvResolver(std::optional<DnsServer> server) : server_(std::move(server)) {
    answer_.resize(kAnswerBytes);
  }
  ~ResolvResolver() override { Close(); }

  Status Init() {
    Close();
    std::memset(&state_, 0, sizeof(state_));
    if (res_ninit(&state_) != 0) return Unavailable("discovery: the DNS resolver could not be set up (res_ninit)");
    initialized_ = true;
    if (server_) {
      // One name server, at its port. An IPv6 one lives in the extension
      // slots (nsaddr_list has room for IPv4 only); glibc frees them on
      // res_nclose, so they are malloc'ed.
      for (int i = 0; i < MAXNS; ++i) {
        free(state_._u._ext.nsaddrs[i]);
        state_._u._ext.nsaddrs[i] = nullptr;
      }
      state_.nscount = 1;
      state_._u._ext.nscount = 0;
      if (server_->v6) {
        std::memset(&state_.nsaddr_list[0], 0, sizeof(state_.nsaddr_list[0]));
        auto* v6 = static_cast<sockaddr_in6*>(malloc(sizeof(sockaddr_in6)));
        if (v6 == nullptr) return ResourceExhausted("discovery: out of memory");
        *v6 = server_->v6_addr;
        state_._u._ext.nsaddrs[0] = v6;
      } else {
        state_.nsaddr_list[0] = server_->v4_addr;
      }
      servers_text_ = server_->text;
    } else {
      servers_text_.clear();
      for (int i = 0; i < state_.nscount && i < MAXNS; ++i) {
        if (!servers_text_.empty()) servers_text_ += ", ";
        servers_text_ += NameServerText(i);
      }
      if (servers_text_.empty()) servers_text_ = "the system's name servers";
    }
    state_.retry = 1;
    state_.options &= ~static_cast<decltype(state_.options)>(RES_ROTATE);
    return Status::Ok();
  }

  std::vector<ResolvedServer> Resolve(std::span<const config::ServerSource> entries, uint32_t timeout_ms,
                                      std::vector<Status>* errors) override {
    std::vector<ResolvedServer> out;
    bool needs_dns = std::any_of(entries.begin(), entries.end(),
                                 [](const auto& e) { return e.kind != config::ServerSource::Kind::kAddress; });
    Status ready = Status::Ok();
    // The system's resolv.conf is read again each call, so a changed one is
    // followed; a dns_server's state is set up once.
    if (needs_dns && (!server_ || !initialized_)) ready = Init();
    deadline_ = Clock::now() + std::chrono::milliseconds(timeout_ms);
    timeout_ms_ = timeout_ms;
    for (const config::ServerSource& e : entries) {
      switch (e.kind) {
        case config::ServerSource::Kind::kAddress:
          Add(e.host, e.port, e, &out);
          break;
        case config::ServerSource::Kind::kDns:
          if (!ready.ok()) {
            errors->push_back(Status(ready.code(), e.text + ": " + ready.message()));
          } else if (Status s = ResolveDns(e, &out); !s.ok()) {
            errors->push_back(std::move(s));
          }
          break;
        case config::ServerSource::Kind::kSrv:
          if (!ready.ok()) {
            errors->push_back(Status(ready.code(), e.text + ": " + ready.message()));
          } else if (Status s = ResolveSrv(e, &out); !s.ok()) {
            errors->push_back(std::move(s));
          }
          break;
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    out.erase(std::unique(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name == b.name; }),
              out.end());
    return out;
  }

 private:
  void Close() {
    if (initialized_) res_nclose(&state_);
    initialized_ = false;
  }

  std::string NameServerText(int i) const {
    char text[INET6_ADDRSTRLEN] = {};
    if (state_.nsaddr_list[i].sin_family == AF_INET) {
      inet_ntop(AF_INET, &state_.nsaddr_list[i].sin_addr, text, sizeof(text));
      return config::ServerAddress{text, ntohs(state_.nsaddr_list[i].sin_port)}.ToString();
    }
    const sockaddr_in6* v6 = state_._u._ext.nsaddrs[i];
    if (v6 != nullptr && v6->sin6_family == AF_INET6) {
      inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
      return config::ServerAddress{text, ntohs(v6->sin6_port)}.ToString();
    }
    return "?";
  }

  static void Add(const std::string& host, uint16_t port, const config::ServerSource& e,
                  std::vector<ResolvedServer>* out) {
    out->push_back({host, port, config::ServerAddress{host, port}.ToString(), e.text});
  }

  // What a query that ran out of the budget says, naming the client option
  // that sets it.
  std::string TimedOut() const {
    return "no answer within resolve_timeout_ms (" + std::to_string(timeout_ms_) + " ms): timed out";
  }

  // One query for `name` of `type`, within what is left of the budget.
  Answer Query(const std::string& name, int type) {
    Answer a;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
    if (left <= 0) {
      a.cause = TimedOut();
      a.error = DeadlineExceeded(a.cause);
      return a;
    }
    // Whole seconds per name server, rounded up: at least one.
    int servers = std::max(1, state_.nscount);
    state_.retrans = std::max<int>(1, static_cast<int>((left + 999) / 1000 / servers));
    state_.retry = 1;
    // A response has QR set; a zeroed header tells "no response" apart.
    std::memset(answer_.data(), 0, NS_HFIXEDSZ);
    errno = 0;
    int len = res_nquery(&state_, name.c_str(), ns_c_in, type, answer_.data(), static_cast<int>(answer_.size()));
    int err = errno;
    if (len >= 0) return Parse(answer_.data(), std::min(len, static_cast<int>(answer_.size())), type);
    bool responded = (answer_[2] & 0x80) != 0;
    if (responded) {
      int rcode = answer_[3] & 0x0f;
      if (rcode == ns_r_noerror) {
        a.outcome = Outcome::kNoData;
        a.cause = std::string("no ") + TypeName(type) + " records (NODATA)";
      } else if (rcode == ns_r_nxdomain) {
        a.outcome = Outcome::kNoName;
        a.cause = RcodeText(rcode);
      } else {
        a.cause = RcodeText(rcode);
        a.error = Unavailable(a.cause);
      }
      return a;
    }
    if (err == ETIMEDOUT || err == 0 || err == EAGAIN) {
      a.cause = TimedOut();
      a.error = DeadlineExceeded(a.cause);
    } else {
      a.cause = "no answer (" + ErrnoText(err) + ")";
      a.error = Unavailable(a.cause);
    }
    return a;
  }

  Status EntryError(const config::ServerSource& e, int type, const std::string& name, const Answer& a) const {
    std::string text =
        e.text + ": " + TypeName(type) + " " + name + ": " + a.cause + " from " + servers_text_;
    if (a.outcome == Outcome::kFailed) return Status(a.error.code(), std::move(text));
    return NotFound(std::move(text));
  }

  // Every A then AAAA address of `name`; a failed query (other than no
  // such name or no records) fails the lot, so a half answer never stands
  // for the whole set. Empty addresses and ok: the name has none.
  Status Addresses(const config::ServerSource& e, const std::string& name, std::vector<std::string>* addresses,
                   std::optional<Answer>* missing) {
    for (int type : {ns_t_a, ns_t_aaaa}) {
      Answer a = Query(name, type);
      if (a.outcome == Outcome::kFailed) return EntryError(e, type, name, a);
      addresses->insert(addresses->end(), a.addresses.begin(), a.addresses.end());
      if (a.outcome == Outcome::kNoName) {
        *missing = std::move(a);
        return Status::Ok();  // no AAAA either
      }
      if (a.outcome == Outcome::kNoData && !*missing) *missing = std::move(a);
    }
    return Status::Ok();
  }

  Status ResolveDns(const config::ServerSource& e, std::vector<ResolvedServer>* out) {
    in_addr v4{};
    in6_addr v6{};
    if (inet_pton(AF_INET, e.host.c_str(), &v4) == 1 || inet_pton(AF_INET6, e.host.c_str(), &v6) == 1) {
      Add(e.host, e.port, e, out);  // a numeric name stands for itself
      return Status::Ok();
    }
    std::vector<std::string> addresses;
    std::optional<Answer> missing;
    if (Status s = Addresses(e, e.host, &addresses, &missing); !s.ok()) return s;
    if (addresses.empty()) {
      Answer a = std::move(*missing);
      if (a.outcome == Outcome::kNoData) a.cause = "no A or AAAA records (NODATA)";
      std::string text = e.text + ": A/AAAA " + e.host + ": " + a.cause + " from " + servers_text_;
      return NotFound(std::move(text));
    }
    for (const std::string& address : addresses) Add(address, e.port, e, out);
    return Status::Ok();
  }

  Status ResolveSrv(const config::ServerSource& e, std::vector<ResolvedServer>* out) {
    Answer srv = Query(e.host, ns_t_srv);
    if (srv.outcome != Outcome::kOk) return EntryError(e, ns_t_srv, e.host, srv);
    std::vector<ResolvedServer> found;
    std::set<std::string> targets_seen;
    bool any_target = false;
    for (const SrvRecord& r : srv.srv) {
      std::string target = Lower(r.target);
      if (target.empty() || r.port == 0) continue;  // "." : no service here
      any_target = true;
      std::vector<std::string> addresses;
      for (const auto& [owner, address] : srv.additional) {
        if (owner == target) addresses.push_back(address);
      }
      if (addresses.empty()) {
        std::optional<Answer> missing;
        // A target without addresses adds nothing; a failed lookup of one
        // fails the entry, as a half answer would drop servers still there.
        if (Status s = Addresses(e, target, &addresses, &missing); !s.ok()) return s;
      }
      for (const std::string& address : addresses) Add(address, r.port, e, &found);
    }
    if (found.empty()) {
      std::string why = any_target ? "its targets have no A or AAAA records"
                                   : "no SRV records with a target (NODATA)";
      return NotFound(e.text + ": SRV " + e.host + ": " + why + " from " + servers_text_);
    }
    out->insert(out->end(), found.begin(), found.end());
    return Status::Ok();
  }

  std::optional<DnsServer> server_;
  struct __res_state state_ {};
  bool initialized_ = false;
  std::string servers_text_;
  std::vector<unsigned char> answer_;
  Clock::time_point deadline_{};
  uint32_t timeout_ms_ = 0;
};

}  // namespace

Result<std::unique_ptr<Resolver>> Resolver::Create(const std::string& dns_server) {
  std::optional<DnsServer> server;
  if (!dns_server.empty()) {
    Result<DnsServer> parsed = ParseDnsServer(dns_server);
    if (!parsed.ok()) return parsed.status();
    server = std::move(*parsed);
  }
  auto resolver = std::make_unique<ResolvResolver>(std::move(server));
  if (!dns_server.empty()) {
    if (Status s = resolver->Init(); !s.ok()) return s;
  }
  return std::unique_ptr<Resolver>(std::move(resolver));
}

}  // namespace memkv::client
