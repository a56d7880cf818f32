// The validation rules (ranges, sizes, cross-field constraints) over a typed
// ServerConfig (internal to src/config).
//
// Kept apart from the YAML reading so a config built in code (the embedded
// default plus command-line overrides) is held to exactly the same rules as
// one read from a file. The "allowed" texts are shared with the readers so
// a value is described the same way whether it failed to parse or broke a
// rule.
#ifndef MEMKV_CONFIG_SERVER_RULES_H_
#define MEMKV_CONFIG_SERVER_RULES_H_

#include <string_view>

#include "config/diagnostics.h"
#include "config/server_config.h"

namespace memkv::config::internal {

inline constexpr std::string_view kAddressAllowed =
    "allowed: host:port with an IPv4 address, a hostname or a [bracketed] IPv6 address, "
    "port 0..65534 (the admin endpoint uses port+1)";
inline constexpr std::string_view kGidIndexAllowed = "0..255 (0 = auto)";
inline constexpr std::string_view kTrafficClassAllowed =
    "0 (auto) or a ToS byte DSCP << 2, a multiple of 4 up to 252 (e.g. 104 = DSCP 26 << 2)";
inline constexpr std::string_view kServiceLevelAllowed = "0..15 (0 = auto)";
inline constexpr std::string_view kMtuAllowed = "256, 512, 1024, 2048, 4096";
inline constexpr std::string_view kNumDcisAllowed = "1..1024";
inline constexpr std::string_view kIoThreadsAllowed = "1..64";
inline constexpr std::string_view kSyncIntervalAllowed = "1..60000";
inline constexpr std::string_view kFlushOnLoopAllowed = "0..1000000";
inline constexpr uint32_t kMaxConnectionsLimit = 1'000'000;
inline constexpr std::string_view kMaxConnectionsAllowed = "1..1000000";
inline constexpr std::string_view kMaxUnauthenticatedAllowed = "1..network.max_connections";
inline constexpr uint32_t kMinFrameTimeoutMs = 100;
inline constexpr uint32_t kMaxFrameTimeoutMs = 3'600'000;
inline constexpr std::string_view kFrameTimeoutAllowed = "100..3600000 (milliseconds)";
inline constexpr uint32_t kMaxBusyPollUs = 1000;
inline constexpr std::string_view kBusyPollAllowed = "0..1000 (microseconds; 0: sleep at once)";
inline constexpr uint32_t kMaxReadCheckIntervalMs = 3'600'000;
inline constexpr std::string_view kReadCheckIntervalAllowed = "0..3600000 (milliseconds; 0 = after every send)";
inline constexpr uint32_t kMaxNamespaceTop = 256;
inline constexpr std::string_view kNamespaceTopAllowed = "0..256 (0 = every namespace counted as other)";
inline constexpr size_t kMaxNamespaceSeparatorBytes = 8;

// Adds one Violation line to `d` per broken rule.
void CheckServerRules(const ServerConfig& config, Diagnostics* d);

}  // namespace memkv::config::internal

#endif  // MEMKV_CONFIG_SERVER_RULES_H_
