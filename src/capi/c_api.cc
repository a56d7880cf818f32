// The C API (include/memkv/memkv.h) over memkv::Client: errors and the
// single-key calls. No exception or C++ type crosses this boundary; errors
// become codes plus a per-thread message. Options and opening live in
// c_api_options.cc, batches in c_api_batch.cc, statistics and version in
// c_api_stats.cc.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string_view>
#include <vector>

#include "capi/c_api_internal.h"

namespace memkv::capi {
namespace {

// The calling thread's last error, in a fixed buffer rather than a
// std::string: exit() destroys the exiting thread's thread_local objects
// before it runs the atexit/on_exit handlers and the static destructors, and
// a call made there (a program's handler, the preload shim's puts at exit)
// would write into a destroyed string. A trivially destructible buffer stays
// whole as long as its thread runs, and recording an error never allocates.
// A message longer than the buffer is cut, ending in kCutMark.
constexpr size_t kLastErrorBytes = 4096;
constexpr std::string_view kCutMark = "...";
thread_local char t_last_error[kLastErrorBytes] = {};

void SetLastError(std::initializer_list<std::string_view> parts) noexcept {
  constexpr size_t kRoom = kLastErrorBytes - 1;  // the NUL
  size_t used = 0;
  bool cut = false;
  for (std::string_view part : parts) {
    size_t n = std::min(part.size(), kRoom - used);
    if (n > 0) std::memcpy(t_last_error + used, part.data(), n);
    used += n;
    if (n < part.size()) {
      cut = true;
      break;
    }
  }
  if (cut) {
    used = kRoom - kCutMark.size();
    std::memcpy(t_last_error + used, kCutMark.data(), kCutMark.size());
    used += kCutMark.size();
  }
  t_last_error[used] = '\0';
}

}  // namespace

memkv_status_t Fail(const Status& status) noexcept {
  SetLastError({StatusCodeName(status.code()), status.message().empty() ? "" : ": ", status.message()});
  return static_cast<memkv_status_t>(status.code());
}

memkv_status_t Report(const Status& status) noexcept { return status.ok() ? MEMKV_OK : Fail(status); }

memkv_status_t Fail(StatusCode code, const char* fn, const char* what) noexcept {
  SetLastError({StatusCodeName(code), ": ", fn, ": ", what});
  return static_cast<memkv_status_t>(code);
}

}  // namespace memkv::capi

using memkv::capi::Call;
using memkv::capi::Fail;
using memkv::capi::Key;
using memkv::capi::Report;

extern "C" {

const char* memkv_last_error(void) { return memkv::capi::t_last_error; }

const char* memkv_status_name(memkv_status_t status) {
  if (status < 0 || status > std::numeric_limits<uint16_t>::max()) return "Unknown";
  // StatusCodeName returns views of string literals: NUL-terminated.
  return memkv::StatusCodeName(static_cast<memkv::StatusCode>(status)).data();
}

memkv_status_t memkv_put(memkv_client_t* c, const void* key, size_t key_len, const void* value, size_t value_len) {
  return Call(__func__, {{"client", c}, {"key", key}, {"value", value, value_len > 0}}, [&] {
    return Report(c->client->Put(Key(key, key_len), {static_cast<const uint8_t*>(value), value_len}));
  });
}

memkv_status_t memkv_get(memkv_client_t* c, const void* key, size_t key_len, void* buf, size_t buf_len,
                         size_t* value_len) {
  return Call(__func__, {{"client", c}, {"key", key}, {"buf", buf, buf_len > 0}, {"value_len", value_len}}, [&] {
    memkv::Result<size_t> size = c->client->GetInto(Key(key, key_len), {static_cast<uint8_t*>(buf), buf_len});
    if (!size.ok()) return Fail(size.status());
    *value_len = *size;
    return MEMKV_OK;
  });
}

memkv_status_t memkv_get_alloc(memkv_client_t* c, const void* key, size_t key_len, void** value, size_t* value_len) {
  return Call(__func__, {{"client", c}, {"key", key}, {"value", value}, {"value_len", value_len}}, [&] {
    *value = nullptr;
    *value_len = 0;
    memkv::Result<std::vector<uint8_t>> got = c->client->Get(Key(key, key_len));
    if (!got.ok()) return Fail(got.status());
    // malloc(0) may return NULL; the header promises non-NULL on success.
    void* copy = std::malloc(std::max<size_t>(got->size(), 1));
    if (copy == nullptr) {
      return Fail(
          memkv::ResourceExhausted("memkv_get_alloc: malloc of " + std::to_string(got->size()) + " bytes failed"));
    }
    if (!got->empty()) std::memcpy(copy, got->data(), got->size());
    *value = copy;
    *value_len = got->size();
    return MEMKV_OK;
  });
}

void memkv_free(void* ptr) { std::free(ptr); }

memkv_status_t memkv_delete(memkv_client_t* c, const void* key, size_t key_len) {
  return Call(__func__, {{"client", c}, {"key", key}}, [&] { return Report(c->client->Delete(Key(key, key_len))); });
}

memkv_status_t memkv_exists(memkv_client_t* c, const void* key, size_t key_len, int* present) {
  return Call(__func__, {{"client", c}, {"key", key}, {"present", present}}, [&] {
    memkv::Result<bool> r = c->client->Exists(Key(key, key_len));
    if (!r.ok()) return Fail(r.status());
    *present = *r ? 1 : 0;
    return MEMKV_OK;
  });
}

memkv_status_t memkv_value_size(memkv_client_t* c, const void* key, size_t key_len, uint64_t* size) {
  return Call(__func__, {{"client", c}, {"key", key}, {"size", size}}, [&] {
    memkv::Result<uint64_t> r = c->client->ValueSize(Key(key, key_len));
    if (!r.ok()) return Fail(r.status());
    *size = *r;
    return MEMKV_OK;
  });
}

memkv_status_t memkv_register_memory(memkv_client_t* c, void* base, size_t len) {
  return Call(__func__, {{"client", c}, {"base", base}}, [&] {
    if (len == 0) return Fail(memkv::InvalidArgument("memkv_register_memory: len is 0"));
    return Report(c->client->RegisterMemory(std::span<uint8_t>(static_cast<uint8_t*>(base), len)));
  });
}

memkv_status_t memkv_unregister_memory(memkv_client_t* c, void* base) {
  return Call(__func__, {{"client", c}, {"base", base}}, [&] { return Report(c->client->UnregisterMemory(base)); });
}

}  // extern "C"
