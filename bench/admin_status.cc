#include "bench/admin_status.h"

#include <cmath>

#include "base/json.h"
#include "http/http_client.h"

namespace memkv::bench {
namespace {

constexpr int kStatusTimeoutMs = 5000;

// Reads `name` of `memory` into *out; false (and *error names it) when it is
// not a number, or not a whole non-negative one for the integer fields.
bool Field(const JsonValue& memory, const char* name, double* out, std::string* error) {
  const JsonValue* v = memory.Find(name);
  if (v == nullptr || v->type != JsonValue::Type::kNumber || !std::isfinite(v->number)) {
    *error = std::string("memory.") + name + " is missing or not a number";
    return false;
  }
  *out = v->number;
  return true;
}

bool Field(const JsonValue& memory, const char* name, uint64_t* out, std::string* error) {
  double d = 0;
  if (!Field(memory, name, &d, error)) return false;
  if (d < 0 || d != std::floor(d)) {
    *error = std::string("memory.") + name + " is not a whole number of bytes or items";
    return false;
  }
  *out = static_cast<uint64_t>(d);
  return true;
}

}  // namespace

Result<PoolStatus> ParsePoolStatus(std::string_view status_json) {
  Result<JsonValue> doc = ParseJson(status_json);
  if (!doc.ok()) return ProtocolError("/v1/status: " + doc.status().message());
  const JsonValue* memory = doc->Find("memory");
  if (memory == nullptr || memory->type != JsonValue::Type::kObject) {
    return ProtocolError("/v1/status has no \"memory\" object");
  }
  PoolStatus s;
  std::string error;
  const bool ok = Field(*memory, "pool_bytes", &s.pool_bytes, &error) &&
                  Field(*memory, "used_bytes", &s.used_bytes, &error) &&
                  Field(*memory, "value_bytes", &s.value_bytes, &error) &&
                  Field(*memory, "free_bytes", &s.free_bytes, &error) &&
                  Field(*memory, "largest_free_bytes", &s.largest_free_bytes, &error) &&
                  Field(*memory, "fragmentation", &s.fragmentation, &error) &&
                  Field(*memory, "bytes_per_value_byte", &s.bytes_per_value_byte, &error) &&
                  Field(*memory, "keys", &s.keys, &error) && Field(*memory, "evictions", &s.evictions, &error);
  if (!ok) return ProtocolError("/v1/status: " + error);
  return s;
}

Result<PoolStatus> ReadPoolStatus(const std::string& host, uint16_t port) {
  http::HttpGetOptions o;
  o.host = host;
  o.port = port;
  o.path = "/v1/status";
  o.timeout_ms = kStatusTimeoutMs;
  MEMKV_ASSIGN_OR_RETURN(http::HttpClientResponse r, http::HttpGet(o));
  if (r.status != 200) {
    return Unavailable(http::HttpUrl(o) + " answered " + std::to_string(r.status) + " " + r.reason);
  }
  return ParsePoolStatus(r.body);
}

}  // namespace memkv::bench
