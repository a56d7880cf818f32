// events.* of the server configuration (internal to src/config): reading the
// section and its rules, kept apart so the section stays in one place.
#ifndef MEMKV_CONFIG_EVENTS_CONFIG_H_
#define MEMKV_CONFIG_EVENTS_CONFIG_H_

#include <optional>
#include <string>
#include <string_view>

#include "config/diagnostics.h"
#include "config/server_config.h"

namespace YAML {
class Node;
}

namespace memkv::config::internal {

inline constexpr std::string_view kEventsEndpointAllowed =
    "allowed: tcp://HOST:PORT with an IPv4 address, a hostname, a [bracketed] IPv6 address or * (every "
    "interface), port 0..65535";
inline constexpr std::string_view kEventsQueueSizeAllowed = "1..10000000 (events)";
inline constexpr std::string_view kEventsReplayBufferAllowed = "0..1000000 (batches; 0 = no replay buffer)";

// Why `endpoint` is not tcp://HOST:PORT; nullopt when it is.
std::optional<std::string> CheckEventsEndpoint(std::string_view endpoint);

void ReadEvents(const YAML::Node& node, Diagnostics* d, EventsConfig* out);
void CheckEvents(const EventsConfig& events, Diagnostics* d);

}  // namespace memkv::config::internal

#endif  // MEMKV_CONFIG_EVENTS_CONFIG_H_
