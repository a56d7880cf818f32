// DnsmasqServer: a real DNS server for tests, Debian's dnsmasq (package
// dnsmasq-base, /usr/sbin/dnsmasq) on 127.0.0.1 and a free port, answering
// only from files in a temporary directory of its own: A records from an
// addn-hosts file, SRV records (and their targets' A records) from its config
// file. Every answer has TTL 0 and nothing negative is cached, so a change
// is seen by the next query. Names it has no records for get NXDOMAIN.
//
// Each call that changes records returns once a query of its own sees the
// change (polling against a deadline, never sleeping). Owned by one test
// thread; the process is killed on destruction.
#ifndef MEMKV_TESTS_DNSMASQ_FIXTURE_H_
#define MEMKV_TESTS_DNSMASQ_FIXTURE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "base/temp_dir.h"
#include "memkv/status.h"

namespace memkv::testing {

class DnsmasqServer {
 public:
  // Starts dnsmasq in the foreground (--keep-in-foreground) on 127.0.0.1 and
  // a free UDP+TCP port, with --no-resolv --no-hosts --no-poll, answering only
  // from files in its own temp dir; waits (polling, never sleeping) until it
  // answers a query. Unavailable naming the binary when dnsmasq is not
  // installed (tests skip on that code only); Internal for any other failure,
  // with dnsmasq's log.
  static Result<std::unique_ptr<DnsmasqServer>> Start();
  ~DnsmasqServer();  // kills it
  DnsmasqServer(const DnsmasqServer&) = delete;
  DnsmasqServer& operator=(const DnsmasqServer&) = delete;

  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }  // what dns_server takes

  // Replaces the A records of `name` (IPv4 addresses; empty removes the
  // name) and makes dnsmasq serve them (addn-hosts file + SIGHUP), then waits
  // until a query sees the change.
  Status SetAddresses(const std::string& name, const std::vector<std::string>& ipv4);

  // Replaces the SRV records of `owner` (e.g. "_memkv._tcp.memkv.test") with
  // (target, port) pairs, each target's A record given too (an empty ipv4
  // gives the target none); empty removes them. Applied by restarting
  // dnsmasq on the same port (it does not reload srv-host on SIGHUP), then
  // waits until a query sees the change.
  Status SetSrv(const std::string& owner,
                const std::vector<std::tuple<std::string /*target*/, uint16_t /*port*/, std::string /*ipv4*/>>& records);

  // Makes `alias` a CNAME of `target` (empty target removes it), restarting
  // dnsmasq as SetSrv does, then waits until a query sees it. An SRV record
  // whose target is an alias comes without the target's addresses, so the
  // resolver must look them up itself.
  Status SetCname(const std::string& alias, const std::string& target);

  // dnsmasq's log (every query and answer), for failure messages.
  std::string Log() const;

 private:
  DnsmasqServer() = default;
  Status Launch(uint16_t port);  // starts the process; waits until it answers
  void Stop();
  Status WriteFiles() const;

  TempDir dir_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::map<std::string, std::vector<std::string>> addresses_;  // addn-hosts: name -> IPv4
  std::map<std::string, std::vector<std::tuple<std::string, uint16_t, std::string>>> srv_;  // owner -> records
  std::map<std::string, std::string> cnames_;  // alias -> target
};

}  // namespace memkv::testing

#endif  // MEMKV_TESTS_DNSMASQ_FIXTURE_H_
