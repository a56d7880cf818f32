// The C edge of libkv_store_memkv.so: kv_store_get_vtable and the table's
// functions (memkv/kv_store.h). Each checks its pointers, calls the
// ChunkStore, turns a Status into a KV_STORE_* code and writes one line to
// stderr for a failure other than a miss. No exception leaves a function of
// the table: std::bad_alloc becomes KV_STORE_ERR_NO_MEMORY, anything else
// KV_STORE_ERR_IO.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/mutex.h"
#include "kvstore/chunk_store.h"
#include "kvstore/settings.h"
#include "kvstore/uri.h"
#include "memkv/kv_store.h"

namespace memkv::kvstore {
namespace {

constexpr char kLibrary[] = "libkv_store_memkv";
// A handle writes at most one failure line per interval; the next line says
// how many it held back.
constexpr auto kLogInterval = std::chrono::seconds(1);

std::optional<std::string> GetEnv(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

int CodeOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return KV_STORE_OK;
    case StatusCode::kNotFound: return KV_STORE_ERR_NOT_FOUND;
    case StatusCode::kInvalidArgument: return KV_STORE_ERR_INVALID_ARGUMENT;
    case StatusCode::kDeadlineExceeded: return KV_STORE_ERR_TIMEOUT;
    // Busy (a server shed the put under load) and Draining (every server
    // that could take the key is draining) are "not now, try later": the
    // ABI's unavailable. Full would say the store has no room, which is
    // not so.
    case StatusCode::kUnavailable:
    case StatusCode::kBusy:
    case StatusCode::kDraining: return KV_STORE_ERR_UNAVAILABLE;
    case StatusCode::kAuthFailed: return KV_STORE_ERR_AUTH;
    case StatusCode::kTooLarge: return KV_STORE_ERR_TOO_LARGE;
    case StatusCode::kResourceExhausted: return KV_STORE_ERR_FULL;
    case StatusCode::kUnsupportedVersion:
    case StatusCode::kCorruption:
    case StatusCode::kProtocolError:
    case StatusCode::kInternal:
    case StatusCode::kIoError:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kPermissionDenied: return KV_STORE_ERR_IO;
  }
  return KV_STORE_ERR_IO;
}

// What the void* of the ABI points to.
struct Handle {
  std::unique_ptr<ChunkStore> store;
  bool log_failures = true;  // MEMKV_LOG_LEVEL at or below warn
  Mutex log_mu;
  std::chrono::steady_clock::time_point last_line MEMKV_GUARDED_BY(log_mu);
  uint64_t held_back MEMKV_GUARDED_BY(log_mu) = 0;
};

void Log(Handle* h, const std::string& line) {
  if (h != nullptr) {
    if (!h->log_failures) return;
    MutexLock lock(h->log_mu);
    const auto now = std::chrono::steady_clock::now();
    if (h->last_line.time_since_epoch().count() != 0 && now - h->last_line < kLogInterval) {
      ++h->held_back;
      return;
    }
    h->last_line = now;
    std::string held;
    if (h->held_back > 0) held = " (" + std::to_string(std::exchange(h->held_back, 0)) + " more held back)";
    std::fprintf(stderr, "%s: %s%s\n", kLibrary, line.c_str(), held.c_str());
    return;
  }
  // No handle (open, or a call given NULL): only MEMKV_LOG_LEVEL=off silences it.
  if (LogLevelFromEnvironment(GetEnv) == ClientLogLevel::kOff) return;
  std::fprintf(stderr, "%s: %s\n", kLibrary, line.c_str());
}

// The hash as hex (its first 16 bytes), read only when its length is one
// the call accepts: a wrong length is reported without touching the bytes.
std::string HashText(const uint8_t* hash, size_t hash_len) {
  if (hash == nullptr) return "(NULL)";
  if (hash_len == 0 || hash_len > kMaxHashBytes) return "(hash_len " + std::to_string(hash_len) + ")";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  const size_t shown = std::min<size_t>(hash_len, 16);
  for (size_t i = 0; i < shown; ++i) {
    text.push_back(kHex[hash[i] >> 4]);
    text.push_back(kHex[hash[i] & 0xf]);
  }
  return text + (shown < hash_len ? "..." : "");
}

std::string NameText(const char* name) {
  if (name == nullptr) return "(NULL)";
  const size_t len = ::strnlen(name, 64);
  return "'" + std::string(name, len) + (len == 64 ? "...'" : "'");
}

// Runs `op` (returning Status) for the call `call` on `what`, returning
// the KV_STORE_* code; logs every failure but a miss.
template <typename Op, typename What>
int Run(Handle* h, const char* call, What what, Op op) noexcept {
  try {
    Status status = op();
    const int rc = CodeOf(status);
    if (rc != KV_STORE_OK && rc != KV_STORE_ERR_NOT_FOUND) {
      Log(h, std::string(call) + " " + what() + ": " + status.ToString() + " (" + kv_store_error_name(rc) + ")");
    }
    return rc;
  } catch (const std::bad_alloc& e) {
    try {
      Log(h, std::string(call) + ": out of memory: " + e.what());
    } catch (...) {
    }
    return KV_STORE_ERR_NO_MEMORY;
  } catch (const std::exception& e) {
    try {
      Log(h, std::string(call) + ": unexpected exception: " + e.what());
    } catch (...) {
    }
    return KV_STORE_ERR_IO;
  } catch (...) {
    return KV_STORE_ERR_IO;
  }
}

Status NullArgument(const char* which) { return InvalidArgument(std::string(which) + " is NULL"); }

// Sets the outputs of a get, which start out NULL and 0.
Status TakeInto(Result<MallocBuffer> result, uint8_t** out, size_t* out_len) {
  if (!result.ok()) return result.status();
  MallocBuffer buffer = std::move(result).value();
  *out_len = buffer.size();
  *out = buffer.Release();
  return Status::Ok();
}

void* KvOpen(const char* uri) noexcept {
  try {
    const EnvLookup env = GetEnv;
    const std::optional<ClientLogLevel> level = LogLevelFromEnvironment(env);
    if (uri == nullptr) {
      Log(nullptr, "open: the URI is NULL; expected memkv://host:port[,host:port...]/namespace");
      return nullptr;
    }
    Result<std::unique_ptr<ChunkStore>> store = ChunkStore::Open(uri, env);
    if (!store.ok()) {
      Log(nullptr, "open '" + std::string(uri) + "': " + store.status().ToString());
      return nullptr;
    }
    auto h = std::make_unique<Handle>();
    h->store = std::move(store).value();
    h->log_failures = level.value_or(ClientLogLevel::kWarn) <= ClientLogLevel::kWarn;
    return h.release();
  } catch (const std::exception& e) {
    try {
      Log(nullptr, std::string("open: ") + e.what());
    } catch (...) {
    }
    return nullptr;
  } catch (...) {
    return nullptr;
  }
}

void KvClose(void* handle) noexcept {
  try {
    delete static_cast<Handle*>(handle);
  } catch (...) {
  }
}

int KvPutChunk(void* handle, const uint8_t* hash, size_t hash_len, const uint8_t* data, size_t len) noexcept {
  auto* h = static_cast<Handle*>(handle);
  return Run(
      h, "put_chunk", [&] { return HashText(hash, hash_len) + " (" + std::to_string(len) + " bytes)"; },
      [&]() -> Status {
        if (h == nullptr) return NullArgument("the handle");
        if (hash == nullptr) return h->store->Refuse(NullArgument("hash"));
        if (data == nullptr && len > 0) return h->store->Refuse(NullArgument("data"));
        return h->store->PutChunk({hash, hash_len}, {data, len});
      });
}

int KvGetChunk(void* handle, const uint8_t* hash, size_t hash_len, uint8_t** out, size_t* out_len) noexcept {
  auto* h = static_cast<Handle*>(handle);
  if (out != nullptr) *out = nullptr;
  if (out_len != nullptr) *out_len = 0;
  return Run(
      h, "get_chunk", [&] { return HashText(hash, hash_len); },
      [&]() -> Status {
        if (h == nullptr) return NullArgument("the handle");
        if (hash == nullptr) return NullArgument("hash");
        if (out == nullptr || out_len == nullptr) return NullArgument(out == nullptr ? "out" : "out_len");
        return TakeInto(h->store->GetChunk({hash, hash_len}), out, out_len);
      });
}

int KvPutManifest(void* handle, const char* name, const uint8_t* data, size_t len) noexcept {
  auto* h = static_cast<Handle*>(handle);
  return Run(
      h, "put_manifest", [&] { return NameText(name) + " (" + std::to_string(len) + " bytes)"; },
      [&]() -> Status {
        if (h == nullptr) return NullArgument("the handle");
        if (name == nullptr) return NullArgument("name");
        if (data == nullptr && len > 0) return NullArgument("data");
        return h->store->PutManifest({name, ::strnlen(name, kMaxManifestNameBytes + 1)}, {data, len});
      });
}

int KvGetManifest(void* handle, const char* name, uint8_t** out, size_t* out_len) noexcept {
  auto* h = static_cast<Handle*>(handle);
  if (out != nullptr) *out = nullptr;
  if (out_len != nullptr) *out_len = 0;
  return Run(
      h, "get_manifest", [&] { return NameText(name); },
      [&]() -> Status {
        if (h == nullptr) return NullArgument("the handle");
        if (name == nullptr) return NullArgument("name");
        if (out == nullptr || out_len == nullptr) return NullArgument(out == nullptr ? "out" : "out_len");
        return TakeInto(h->store->GetManifest({name, ::strnlen(name, kMaxManifestNameBytes + 1)}), out, out_len);
      });
}

int KvDeleteManifest(void* handle, const char* name) noexcept {
  auto* h = static_cast<Handle*>(handle);
  return Run(
      h, "delete_manifest", [&] { return NameText(name); },
      [&]() -> Status {
        if (h == nullptr) return NullArgument("the handle");
        if (name == nullptr) return NullArgument("name");
        return h->store->DeleteManifest({name, ::strnlen(name, kMaxManifestNameBytes + 1)});
      });
}

int KvPrefetchChunks(void* handle, const uint8_t* hashes, size_t hash_len, size_t count) noexcept {
  auto* h = static_cast<Handle*>(handle);
  return Run(
      h, "prefetch_chunks", [&] { return std::to_string(count) + " hashes of " + std::to_string(hash_len) + " bytes"; },
      [&]() -> Status {
        if (h == nullptr) return NullArgument("the handle");
        if (count == 0) return Status::Ok();
        if (hashes == nullptr) return NullArgument("hashes");
        if (hash_len == 0 || count > SIZE_MAX / hash_len) {
          return InvalidArgument("hash_len " + std::to_string(hash_len) + " times count " + std::to_string(count) +
                                 " is not a size");
        }
        return h->store->PrefetchChunks({hashes, hash_len * count}, hash_len, count);
      });
}

const kv_store_vtable kVtable = {
    KV_STORE_VTABLE_VERSION, &KvOpen,        &KvClose,          &KvPutChunk,       &KvGetChunk,
    &KvPutManifest,          &KvGetManifest, &KvDeleteManifest, &KvPrefetchChunks,
};

}  // namespace
}  // namespace memkv::kvstore

extern "C" __attribute__((visibility("default"))) const kv_store_vtable* kv_store_get_vtable(void) {
  return &memkv::kvstore::kVtable;
}
