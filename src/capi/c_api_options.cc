// The C API's options object and the ways to open and close a client.
// memkv_options_set goes through the client option table (memkv/client.h)
// and checks at once; the typed setters only store (copying strings), and the
// table's rules run at open, in Client::Create, naming the bad option.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capi/c_api_internal.h"

namespace memkv::capi {
namespace {

// Splits a comma list, trimming blanks around entries and dropping empty
// ones (so "a:1, b:2," is two servers).
std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> items;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t first = item.find_first_not_of(" \t");
    if (first == std::string_view::npos) continue;
    items.emplace_back(item.substr(first, item.find_last_not_of(" \t") + 1 - first));
  }
  return items;
}

// The C log function as the C++ client's callback: the views become
// NUL-terminated strings for the duration of the call.
ClientLogCallback LogBridge(memkv_log_fn fn, void* ctx) {
  return [fn, ctx](ClientLogLevel level, std::string_view component, std::string_view message) {
    try {
      const std::string component_text(component);
      const std::string message_text(message);
      fn(ctx, static_cast<int>(level), component_text.c_str(), message_text.c_str());
    } catch (...) {
      // Out of memory (or a callback that threw): the line is lost, but
      // logging never fails the call that logged.
    }
  };
}

memkv_status_t Adopt(Result<std::unique_ptr<Client>> client, memkv_client_t** out) {
  if (!client.ok()) return Fail(client.status());
  *out = new memkv_client{std::move(client).value(), ""};
  (*out)->identity_tag = (*out)->client->IdentityTag();
  return MEMKV_OK;
}

std::string Copy(std::string_view text) { return std::string(text); }

// Stores `value` in one field of the options, behind the C boundary.
template <typename T>
memkv_status_t SetField(const char* fn, memkv_options_t* o, T ClientOptions::*field, T value) noexcept {
  return Call(fn, {{"options", o}}, [&] {
    o->options.*field = value;
    return MEMKV_OK;
  });
}

// The same from the string argument `name`, which must not be NULL and which
// `convert` turns into the field's value (inside the boundary: it allocates).
template <typename T, typename Convert>
memkv_status_t SetFromText(const char* fn, memkv_options_t* o, T ClientOptions::*field, const char* name,
                           const char* text, Convert convert) noexcept {
  return Call(fn, {{"options", o}, {name, text}}, [&] {
    o->options.*field = convert(std::string_view(text));
    return MEMKV_OK;
  });
}

}  // namespace
}  // namespace memkv::capi

using memkv::ClientOptions;
using memkv::capi::Adopt;
using memkv::capi::Call;
using memkv::capi::Copy;
using memkv::capi::Fail;
using memkv::capi::SetField;
using memkv::capi::SetFromText;
using memkv::capi::SplitList;

extern "C" {

memkv_options_t* memkv_options_create(void) {
  return memkv::capi::CallOr<memkv_options_t*>(nullptr, [] { return new memkv_options{}; });
}

void memkv_options_destroy(memkv_options_t* o) { delete o; }

memkv_status_t memkv_options_set(memkv_options_t* o, const char* name, const char* value) {
  return Call(__func__, {{"options", o}, {"name", name}, {"value", value}}, [&] {
    memkv::Status s = memkv::SetClientOption(&o->options, name, value);
    return s.ok() ? MEMKV_OK : Fail(s);
  });
}

memkv_status_t memkv_options_set_servers(memkv_options_t* o, const char* servers) {
  return SetFromText(__func__, o, &ClientOptions::servers, "servers", servers, SplitList);
}

memkv_status_t memkv_options_add_server(memkv_options_t* o, const char* server) {
  return Call(__func__, {{"options", o}, {"server", server}}, [&] {
    o->options.servers.emplace_back(server);
    return MEMKV_OK;
  });
}

memkv_status_t memkv_options_set_auth_key(memkv_options_t* o, const char* auth_key_hex) {
  return SetFromText(__func__, o, &ClientOptions::auth_key_hex, "auth_key_hex", auth_key_hex, Copy);
}

memkv_status_t memkv_options_set_transport(memkv_options_t* o, const char* transport) {
  return SetFromText(__func__, o, &ClientOptions::transport, "transport", transport, Copy);
}

memkv_status_t memkv_options_set_num_connections(memkv_options_t* o, uint32_t n) {
  return SetField(__func__, o, &ClientOptions::num_connections, n);
}

memkv_status_t memkv_options_set_timeout_ms(memkv_options_t* o, uint32_t ms) {
  return SetField(__func__, o, &ClientOptions::timeout_ms, ms);
}

memkv_status_t memkv_options_set_connect_timeout_ms(memkv_options_t* o, uint32_t ms) {
  return SetField(__func__, o, &ClientOptions::connect_timeout_ms, ms);
}

memkv_status_t memkv_options_set_rdma_devices(memkv_options_t* o, const char* devices) {
  return SetFromText(__func__, o, &ClientOptions::rdma_devices, "devices", devices, SplitList);
}

memkv_status_t memkv_options_set_rdma_mtu(memkv_options_t* o, uint32_t mtu) {
  return SetField(__func__, o, &ClientOptions::rdma_mtu, mtu);
}

memkv_status_t memkv_options_set_rdma_retry_count(memkv_options_t* o, uint32_t retry_count) {
  return SetField(__func__, o, &ClientOptions::rdma_retry_count, retry_count);
}

memkv_status_t memkv_options_set_rdma_timeout(memkv_options_t* o, uint32_t timeout) {
  return SetField(__func__, o, &ClientOptions::rdma_timeout, timeout);
}

memkv_status_t memkv_options_set_rdma_qps(memkv_options_t* o, uint32_t qps) {
  return SetField(__func__, o, &ClientOptions::rdma_qps, qps);
}

memkv_status_t memkv_options_set_prometheus_bind(memkv_options_t* o, const char* host_port) {
  return SetFromText(__func__, o, &ClientOptions::prometheus_bind, "host_port", host_port, Copy);
}

memkv_status_t memkv_options_set_log_level(memkv_options_t* o, int level) {
  return Call(__func__, {{"options", o}}, [&] {
    if (level < MEMKV_LOG_DEBUG || level > MEMKV_LOG_OFF) {
      return Fail(memkv::InvalidArgument("memkv_options_set_log_level: level " + std::to_string(level) +
                                         " is not a level; allowed: 0 (MEMKV_LOG_DEBUG) .. 4 (MEMKV_LOG_OFF)"));
    }
    o->options.log_level = static_cast<memkv::ClientLogLevel>(level);
    return MEMKV_OK;
  });
}

memkv_status_t memkv_options_set_log_callback(memkv_options_t* o, memkv_log_fn fn, void* ctx) {
  return Call(__func__, {{"options", o}}, [&] {
    o->options.log_callback = fn == nullptr ? memkv::ClientLogCallback() : memkv::capi::LogBridge(fn, ctx);
    return MEMKV_OK;
  });
}

memkv_status_t memkv_client_open_options(const memkv_options_t* o, memkv_client_t** out) {
  return Call(__func__, {{"options", o}, {"out", out}}, [&] { return Adopt(memkv::Client::Create(o->options), out); });
}

memkv_status_t memkv_client_open(const char* servers, const char* auth_key_hex, uint32_t timeout_ms,
                                 memkv_client_t** out) {
  return Call(__func__, {{"servers", servers}, {"auth_key_hex", auth_key_hex}, {"out", out}}, [&] {
    ClientOptions options;
    options.servers = SplitList(servers);
    options.auth_key_hex = auth_key_hex;
    if (timeout_ms != 0) options.timeout_ms = timeout_ms;
    return Adopt(memkv::Client::Create(options), out);
  });
}

memkv_status_t memkv_client_open_env(memkv_client_t** out) {
  return Call(__func__, {{"out", out}}, [&] { return Adopt(memkv::Client::CreateFromEnvironment(), out); });
}

void memkv_client_close(memkv_client_t* c) { delete c; }

}  // extern "C"
