// One entry of the client's server list (the `servers` option): a server's
// address, or a DNS name that stands for several (docs/fleet.md,
// "Discovery"). Pure.
//
//   host:port, [v6]:port   one server
//   dns:NAME:PORT          every address NAME resolves to (A and AAAA
//                          records), each at PORT: a Kubernetes headless
//                          Service
//   srv:NAME               the SRV records of _memkv._tcp.NAME (NAME used as
//                          is when it already starts with '_'), each target
//                          at its own port
#ifndef MEMKV_CONFIG_SERVER_SOURCE_H_
#define MEMKV_CONFIG_SERVER_SOURCE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "memkv/status.h"

namespace memkv::config {

struct ServerSource {
  enum class Kind { kAddress, kDns, kSrv };
  Kind kind = Kind::kAddress;
  std::string host;   // kAddress: the host (no brackets); kDns: NAME; kSrv: the full SRV owner name
  uint16_t port = 0;  // kAddress, kDns: 1..65535; kSrv: 0 (each record has its own)
  std::string text;   // the entry as written, for messages
};

// InvalidArgument naming `text`, what is wrong and the three forms allowed.
Result<ServerSource> ParseServerSource(std::string_view text);

}  // namespace memkv::config

#endif  // MEMKV_CONFIG_SERVER_SOURCE_H_
