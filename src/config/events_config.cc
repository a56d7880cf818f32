#include "config/events_config.h"

#include "config/host_port.h"
#include "config/yaml_fields.h"

namespace memkv::config {

std::string_view EventsEncodingName(EventsEncoding encoding) {
  return encoding == EventsEncoding::kMap ? "map" : "array";
}

namespace internal {
namespace {

constexpr uint32_t kMaxQueueSize = 10'000'000;
constexpr uint32_t kMaxReplayBuffer = 1'000'000;

void ReadEncoding(const YAML::Node& node, const std::string& path, Diagnostics* d, EventsEncoding* out) {
  std::string text;
  if (!ReadString(node, path, d, &text)) return;
  for (EventsEncoding e : {EventsEncoding::kMap, EventsEncoding::kArray}) {
    if (text == EventsEncodingName(e)) {
      *out = e;
      return;
    }
  }
  d->Fail(path, path + ": '" + text + "' is not an event encoding; allowed: map, array");
}

void CheckEndpoint(const std::string& field, const std::string& value, Diagnostics* d) {
  if (value.empty()) return;
  if (std::optional<std::string> why = CheckEventsEndpoint(value)) {
    d->Violation({field}, field + ": '" + value + "' " + *why + "; " + std::string(kEventsEndpointAllowed));
  }
}

}  // namespace

std::optional<std::string> CheckEventsEndpoint(std::string_view endpoint) {
  constexpr std::string_view kScheme = "tcp://";
  if (!endpoint.starts_with(kScheme)) return "does not start with tcp://";
  std::string_view rest = endpoint.substr(kScheme.size());
  // "*" binds every interface, as in vLLM's tcp://*:5557.
  if (rest.starts_with("*:")) rest = rest.substr(1);
  std::string check = rest.starts_with(":") ? "0.0.0.0" + std::string(rest) : std::string(rest);
  Result<HostPort> split = SplitHostPort(check);
  if (!split.ok()) return "is not tcp://HOST:PORT (" + split.status().message() + ")";
  if (split->port > 65535) return "has port " + std::to_string(split->port) + ", out of range";
  return std::nullopt;
}

void ReadEvents(const YAML::Node& node, Diagnostics* d, EventsConfig* out) {
  auto encoding = [d, out](const YAML::Node& v, const std::string& p) { ReadEncoding(v, p, d, &out->encoding); };
  ReadMap(node, "events",
          {StringField("publish", d, &out->publish),
           StringField("replay", d, &out->replay),
           StringField("topic", d, &out->topic),
           {"encoding", encoding},
           Uint32Field("queue_size", kEventsQueueSizeAllowed, d, &out->queue_size),
           Uint32Field("replay_buffer", kEventsReplayBufferAllowed, d, &out->replay_buffer),
           SizeField("replay_buffer_size", d, &out->replay_buffer_size_bytes)},
          d);
}

void CheckEvents(const EventsConfig& e, Diagnostics* d) {
  CheckEndpoint("events.publish", e.publish, d);
  CheckEndpoint("events.replay", e.replay, d);
  if (!e.replay.empty() && e.publish.empty()) {
    d->Violation({"events.replay"}, "events.replay: set, but events.publish is not; replay serves what is published");
  }
  // Port 0 binds any free port, a different one for each socket.
  if (!e.replay.empty() && e.replay == e.publish && !e.replay.ends_with(":0")) {
    d->Violation({"events.replay", "events.publish"},
                 "events.replay: '" + e.replay + "' is also events.publish; each socket needs its own port");
  }
  if (e.queue_size == 0 || e.queue_size > kMaxQueueSize) {
    d->Violation({"events.queue_size"},
                 "events.queue_size: " + std::to_string(e.queue_size) + "; " + std::string(kEventsQueueSizeAllowed));
  }
  if (e.replay_buffer > kMaxReplayBuffer) {
    d->Violation({"events.replay_buffer"}, "events.replay_buffer: " + std::to_string(e.replay_buffer) + "; " +
                                               std::string(kEventsReplayBufferAllowed));
  }
}

}  // namespace internal
}  // namespace memkv::config
