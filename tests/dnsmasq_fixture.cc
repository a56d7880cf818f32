#include "tests/dnsmasq_fixture.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <resolv.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "base/clock.h"

namespace memkv::testing {
namespace {

constexpr char kBinary[] = "/usr/sbin/dnsmasq";
constexpr int kStartMs = 10000;
constexpr int kChangeMs = 10000;

Nanos DeadlineIn(int ms) { return MonotonicNanos() + Nanos(ms) * 1'000'000; }

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// One DNS query over UDP to 127.0.0.1:port, written and read here (not by
// the resolver under test): the response code and the answer section's
// records of `type` (A as dotted quads, SRV as "target:port", CNAME as the
// target); nullopt when no answer came within `wait_ms`.
struct QueryResult {
  int rcode = 0;
  std::vector<std::string> records;
};

std::optional<QueryResult> Query(uint16_t port, const std::string& name, int type, int wait_ms) {
  std::vector<unsigned char> q = {0x4d, 0x4b, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};  // id "MK", RD, one question
  size_t start = 0;
  while (start < name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    q.push_back(static_cast<unsigned char>(dot - start));
    q.insert(q.end(), name.begin() + static_cast<long>(start), name.begin() + static_cast<long>(dot));
    start = dot + 1;
  }
  q.insert(q.end(), {0, static_cast<unsigned char>(type >> 8), static_cast<unsigned char>(type), 0, 1});
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::optional<QueryResult> out;
  unsigned char buf[4096];
  int n = -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0 && ::send(fd, q.data(), q.size(), 0) >= 0) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, wait_ms) == 1) n = static_cast<int>(::recv(fd, buf, sizeof(buf), 0));
  }
  ::close(fd);
  ns_msg msg;
  if (n < NS_HFIXEDSZ || buf[0] != 0x4d || buf[1] != 0x4b || ns_initparse(buf, n, &msg) < 0) return out;
  out.emplace();
  out->rcode = ns_msg_getflag(msg, ns_f_rcode);
  for (int i = 0; i < ns_msg_count(msg, ns_s_an); ++i) {
    ns_rr rr;
    if (ns_parserr(&msg, ns_s_an, i, &rr) < 0 || ns_rr_type(rr) != type) continue;
    if (type == ns_t_a && ns_rr_rdlen(rr) == 4) {
      char text[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, ns_rr_rdata(rr), text, sizeof(text));
      out->records.push_back(text);
    } else if (type == ns_t_cname) {
      char target[NS_MAXDNAME];
      if (dn_expand(ns_msg_base(msg), ns_msg_end(msg), ns_rr_rdata(rr), target, sizeof(target)) < 0) continue;
      out->records.push_back(Lower(target));
    } else if (type == ns_t_srv && ns_rr_rdlen(rr) > 6) {
      const unsigned char* rd = ns_rr_rdata(rr);
      char target[NS_MAXDNAME];
      if (dn_expand(ns_msg_base(msg), ns_msg_end(msg), rd + 6, target, sizeof(target)) < 0) continue;
      out->records.push_back(Lower(target) + ":" + std::to_string((rd[4] << 8) | rd[5]));
    }
  }
  std::sort(out->records.begin(), out->records.end());
  return out;
}

// Polls until a query of `name` answers exactly `want` (sorted; empty: no
// such records) or the deadline passes.
bool WaitForAnswer(uint16_t port, const std::string& name, int type, const std::vector<std::string>& want,
                   std::string* last) {
  Nanos deadline = DeadlineIn(kChangeMs);
  while (MonotonicNanos() < deadline) {
    std::optional<QueryResult> r = Query(port, name, type, 200);
    if (r && r->records == want) return true;
    if (r) {
      *last = "rcode " + std::to_string(r->rcode) + ", records:";
      for (const std::string& s : r->records) *last += " " + s;
    } else {
      *last = "no answer";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval, not a wait for an event
  }
  return false;
}

// A port free for both UDP and TCP on 127.0.0.1 right now.
uint16_t FreePort() {
  for (int attempt = 0; attempt < 50; ++attempt) {
    int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    uint16_t port = 0;
    if (::bind(udp, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        ::getsockname(udp, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      int tcp = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (::bind(tcp, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) port = ntohs(a.sin_port);
      ::close(tcp);
    }
    ::close(udp);
    if (port != 0) return port;
  }
  return 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<std::unique_ptr<DnsmasqServer>> DnsmasqServer::Start() {
  if (::access(kBinary, X_OK) != 0) {
    return Unavailable(std::string(kBinary) + " is not installed (Debian package dnsmasq-base)");
  }
  std::unique_ptr<DnsmasqServer> server(new DnsmasqServer());
  if (server->dir_.path().empty()) return Internal("dnsmasq: no temporary directory could be made");
  if (Status s = server->WriteFiles(); !s.ok()) return s;
  // The port is free when picked but may be taken before dnsmasq binds it.
  Status last = Internal("dnsmasq: no free port on 127.0.0.1");
  for (int attempt = 0; attempt < 5; ++attempt) {
    uint16_t port = FreePort();
    if (port == 0) continue;
    last = server->Launch(port);
    if (last.ok()) return server;
  }
  return last;
}

DnsmasqServer::~DnsmasqServer() { Stop(); }

std::string DnsmasqServer::Log() const { return ReadFile(dir_.File("dnsmasq.log")); }

Status DnsmasqServer::WriteFiles() const {
  std::string hosts;
  for (const auto& [name, ips] : addresses_) {
    for (const std::string& ip : ips) hosts += ip + " " + name + "\n";
  }
  // Every name is local: what the files do not name gets NXDOMAIN, and no
  // query ever leaves the machine.
  std::string conf = "local=/#/\nlocal-ttl=0\nno-negcache\ncache-size=0\naddn-hosts=" + dir_.File("hosts") + "\n";
  for (const auto& [owner, records] : srv_) {
    for (const auto& [target, port, ip] : records) {
      conf += "srv-host=" + owner + "," + target + "," + std::to_string(port) + "\n";
      if (!ip.empty()) conf += "host-record=" + target + "," + ip + "\n";
    }
  }
  for (const auto& [alias, target] : cnames_) conf += "cname=" + alias + "," + target + "\n";
  dir_.Write("hosts.new", hosts);
  dir_.Write("dnsmasq.conf", conf);
  // Renamed into place, so a reload never reads half a file.
  if (::rename(dir_.File("hosts.new").c_str(), dir_.File("hosts").c_str()) != 0) {
    return Internal("dnsmasq: cannot write " + dir_.File("hosts"));
  }
  return Status::Ok();
}

Status DnsmasqServer::Launch(uint16_t port) {
  std::vector<std::string> args = {kBinary,
                                   "--keep-in-foreground",
                                   "--no-resolv",
                                   "--no-hosts",
                                   "--no-poll",
                                   "--conf-file=" + dir_.File("dnsmasq.conf"),
                                   "--listen-address=127.0.0.1",
                                   "--bind-interfaces",
                                   "--port=" + std::to_string(port),
                                   "--pid-file=" + dir_.File("dnsmasq.pid"),
                                   "--log-facility=" + dir_.File("dnsmasq.log"),
                                   "--log-queries"};
  // As root dnsmasq would switch to "nobody"; stay who we are, so it can
  // read the files here on a reload.
  if (::geteuid() == 0) args.push_back("--user=root");
  pid_ = ::fork();
  if (pid_ < 0) return Internal("dnsmasq: fork failed");
  if (pid_ == 0) {
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    int err = ::open(dir_.File("dnsmasq.stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err, STDERR_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  port_ = port;
  Nanos deadline = DeadlineIn(kStartMs);
  while (MonotonicNanos() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Internal("dnsmasq exited at start (status " + std::to_string(status) + ") on port " +
                      std::to_string(port) + ": " + ReadFile(dir_.File("dnsmasq.stderr")) + Log());
    }
    // Any answer will do: it is up.
    if (Query(port, "ready.memkv-fixture.test", ns_t_a, 100)) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval, not a wait for an event
  }
  Stop();
  return Internal("dnsmasq did not answer on 127.0.0.1:" + std::to_string(port) + " within " +
                  std::to_string(kStartMs) + " ms: " + ReadFile(dir_.File("dnsmasq.stderr")) + Log());
}

void DnsmasqServer::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  Nanos deadline = DeadlineIn(5000);
  for (;;) {
    pid_t r = ::waitpid(pid_, nullptr, WNOHANG);
    if (r == pid_ || r < 0) break;
    if (MonotonicNanos() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval, not a wait for an event
  }
  pid_ = -1;
}

Status DnsmasqServer::SetAddresses(const std::string& name, const std::vector<std::string>& ipv4) {
  for (const std::string& ip : ipv4) {
    in_addr a{};
    if (inet_pton(AF_INET, ip.c_str(), &a) != 1) return InvalidArgument("SetAddresses: '" + ip + "' is not IPv4");
  }
  if (ipv4.empty()) {
    addresses_.erase(name);
  } else {
    addresses_[name] = ipv4;
  }
  if (Status s = WriteFiles(); !s.ok()) return s;
  if (pid_ <= 0 || ::kill(pid_, SIGHUP) != 0) return Internal("dnsmasq is not running");
  std::vector<std::string> want = ipv4;
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  std::string last;
  if (!WaitForAnswer(port_, name, ns_t_a, want, &last)) {
    return Internal("dnsmasq did not serve the new A records of " + name + " within " + std::to_string(kChangeMs) +
                    " ms (last: " + last + "): " + Log());
  }
  return Status::Ok();
}

Status DnsmasqServer::SetSrv(
    const std::string& owner,
    const std::vector<std::tuple<std::string, uint16_t, std::string>>& records) {
  if (records.empty()) {
    srv_.erase(owner);
  } else {
    srv_[owner] = records;
  }
  if (Status s = WriteFiles(); !s.ok()) return s;
  Stop();
  if (Status s = Launch(port_); !s.ok()) return s;
  std::vector<std::string> want;
  for (const auto& [target, port, ip] : records) want.push_back(Lower(target) + ":" + std::to_string(port));
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  std::string last;
  if (!WaitForAnswer(port_, owner, ns_t_srv, want, &last)) {
    return Internal("dnsmasq did not serve the new SRV records of " + owner + " within " +
                    std::to_string(kChangeMs) + " ms (last: " + last + "): " + Log());
  }
  return Status::Ok();
}

Status DnsmasqServer::SetCname(const std::string& alias, const std::string& target) {
  if (target.empty()) {
    cnames_.erase(alias);
  } else {
    cnames_[alias] = target;
  }
  if (Status s = WriteFiles(); !s.ok()) return s;
  Stop();
  if (Status s = Launch(port_); !s.ok()) return s;
  std::vector<std::string> want;
  if (!target.empty()) want.push_back(Lower(target));
  std::string last;
  if (!WaitForAnswer(port_, alias, ns_t_cname, want, &last)) {
    return Internal("dnsmasq did not serve the CNAME " + alias + " within " + std::to_string(kChangeMs) +
                    " ms (last: " + last + "): " + Log());
  }
  return Status::Ok();
}

}  // namespace memkv::testing
