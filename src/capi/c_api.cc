// The C API (include/memkv/memkv.h) over memkv::Client. No exception or C++
// type crosses this boundary; errors become codes plus a per-thread message.
#include "memkv/memkv.h"

#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/client.h"

struct memkv_client {
  std::unique_ptr<memkv::Client> client;
};

namespace {

thread_local std::string g_last_error;

memkv_status_t Fail(const memkv::Status& status) {
  g_last_error = status.ToString();
  return static_cast<memkv_status_t>(status.code());
}

memkv_status_t Report(const memkv::Status& status) {
  if (status.ok()) return MEMKV_OK;
  return Fail(status);
}

std::string_view Key(const void* key, size_t key_len) {
  return {static_cast<const char*>(key), key_len};
}

memkv_status_t Adopt(memkv::Result<std::unique_ptr<memkv::Client>> client, memkv_client_t** out) {
  if (out == nullptr) return Fail(memkv::InvalidArgument("out is NULL"));
  if (!client.ok()) return Fail(client.status());
  *out = new memkv_client{std::move(client).value()};
  return MEMKV_OK;
}

}  // namespace

extern "C" {

memkv_status_t memkv_client_open(const char* servers, const char* auth_key_hex, uint32_t timeout_ms,
                                 memkv_client_t** out) {
  if (servers == nullptr || auth_key_hex == nullptr) {
    return Fail(memkv::InvalidArgument("servers and auth_key_hex must not be NULL"));
  }
  memkv::ClientOptions options;
  std::stringstream list(servers);
  for (std::string item; std::getline(list, item, ',');) {
    if (!item.empty()) options.servers.push_back(item);
  }
  options.auth_key_hex = auth_key_hex;
  if (timeout_ms != 0) options.timeout_ms = timeout_ms;
  return Adopt(memkv::Client::Create(options), out);
}

memkv_status_t memkv_client_open_env(memkv_client_t** out) {
  return Adopt(memkv::Client::CreateFromEnvironment(), out);
}

void memkv_client_close(memkv_client_t* client) { delete client; }

memkv_status_t memkv_put(memkv_client_t* c, const void* key, size_t key_len, const void* value,
                         size_t value_len) {
  if (c == nullptr || key == nullptr || (value == nullptr && value_len > 0)) {
    return Fail(memkv::InvalidArgument("memkv_put: NULL client, key or value"));
  }
  return Report(c->client->Put(Key(key, key_len), {static_cast<const uint8_t*>(value), value_len}));
}

memkv_status_t memkv_get(memkv_client_t* c, const void* key, size_t key_len, void* buf, size_t buf_len,
                         size_t* value_len) {
  if (c == nullptr || key == nullptr || value_len == nullptr || (buf == nullptr && buf_len > 0)) {
    return Fail(memkv::InvalidArgument("memkv_get: NULL client, key, buffer or value_len"));
  }
  memkv::Result<size_t> size = c->client->GetInto(Key(key, key_len), {static_cast<uint8_t*>(buf), buf_len});
  if (!size.ok()) return Fail(size.status());
  *value_len = *size;
  return MEMKV_OK;
}

memkv_status_t memkv_delete(memkv_client_t* c, const void* key, size_t key_len) {
  if (c == nullptr || key == nullptr) return Fail(memkv::InvalidArgument("memkv_delete: NULL client or key"));
  return Report(c->client->Delete(Key(key, key_len)));
}

memkv_status_t memkv_exists(memkv_client_t* c, const void* key, size_t key_len, int* present) {
  if (c == nullptr || key == nullptr || present == nullptr) {
    return Fail(memkv::InvalidArgument("memkv_exists: NULL client, key or present"));
  }
  memkv::Result<bool> r = c->client->Exists(Key(key, key_len));
  if (!r.ok()) return Fail(r.status());
  *present = *r ? 1 : 0;
  return MEMKV_OK;
}

memkv_status_t memkv_register_memory(memkv_client_t* c, void* base, size_t len) {
  if (c == nullptr || base == nullptr || len == 0) {
    return Fail(memkv::InvalidArgument("memkv_register_memory: NULL client or base, or len 0"));
  }
  return Report(c->client->RegisterMemory(std::span<uint8_t>(static_cast<uint8_t*>(base), len)));
}

memkv_status_t memkv_unregister_memory(memkv_client_t* c, void* base) {
  if (c == nullptr || base == nullptr) return Fail(memkv::InvalidArgument("memkv_unregister_memory: NULL client or base"));
  return Report(c->client->UnregisterMemory(base));
}

const char* memkv_transport(memkv_client_t* c) {
  if (c == nullptr) return "";
  return c->client->Stats().transport == "rdma" ? "rdma" : "tcp";
}

memkv_status_t memkv_batch_exists(memkv_client_t* c, const void* const* keys, const size_t* key_lens,
                                  size_t count, memkv_status_t* statuses, size_t* prefix) {
  if (c == nullptr || (count > 0 && (keys == nullptr || key_lens == nullptr || statuses == nullptr))) {
    return Fail(memkv::InvalidArgument("memkv_batch_exists: NULL client, keys, key_lens or statuses"));
  }
  std::vector<std::string_view> views;
  views.reserve(count);
  for (size_t i = 0; i < count; ++i) views.push_back(Key(keys[i], key_lens[i]));
  memkv::BatchResult r = c->client->BatchExists(views);
  for (size_t i = 0; i < count; ++i) statuses[i] = static_cast<memkv_status_t>(r.statuses[i].code());
  if (prefix != nullptr) *prefix = r.present_prefix;
  return MEMKV_OK;
}

const char* memkv_last_error(void) { return g_last_error.c_str(); }

const char* memkv_status_name(memkv_status_t status) {
  // StatusCodeName returns views of string literals: NUL-terminated.
  return memkv::StatusCodeName(static_cast<memkv::StatusCode>(status)).data();
}

}  // extern "C"
