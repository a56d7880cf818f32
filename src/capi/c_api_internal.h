// What the C API's files share: the handle types behind memkv.h's opaque
// structs, and the boundary every exported function runs inside (argument
// checks, exceptions turned into codes, the per-thread last error).
#ifndef MEMKV_CAPI_C_API_INTERNAL_H_
#define MEMKV_CAPI_C_API_INTERNAL_H_

#include <cstddef>
#include <exception>
#include <initializer_list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>
#include <new>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "memkv/client.h"
#include "memkv/memkv.h"
#include "memkv/status.h"

namespace memkv::capi {

// One memkv_async_* submission until its completion is polled: a copy of
// its keys (the C API copies what it is given) and the views the client
// reads, and the caller's arrays its results go to.
struct AsyncSubmission {
  std::string key_bytes;
  std::vector<std::string_view> keys;
  std::vector<std::span<const uint8_t>> values;  // put: the caller's memory, lent
  std::vector<std::span<uint8_t>> buffers;       // get: the caller's memory, lent
  memkv_status_t* statuses = nullptr;
  size_t* value_lens = nullptr;                  // get
};

// A client's memkv_async_* state: one queue, made on first use.
struct AsyncState {
  Mutex mu;
  // Declared before the queue, so the queue (which waits for running
  // submissions) goes first.
  std::unordered_map<AsyncId, std::unique_ptr<AsyncSubmission>> submissions MEMKV_GUARDED_BY(mu);
  // Set once, on first use; QueueOf hands the pointer out, which callers
  // then use without the lock (the queue is thread-safe).
  std::unique_ptr<AsyncQueue> queue MEMKV_GUARDED_BY(mu);
};

}  // namespace memkv::capi

struct memkv_client {
  std::unique_ptr<memkv::Client> client;
  std::string identity_tag;  // memkv_identity_tag's text, set at open
  // After the client: destroyed first, cancelling and waiting for what was
  // submitted while the client is still there.
  std::unique_ptr<memkv::capi::AsyncState> async = std::make_unique<memkv::capi::AsyncState>();
};

// A plain value: the client copies it at open.
struct memkv_options {
  memkv::ClientOptions options;
};

namespace memkv::capi {

// Records `status` as the calling thread's last error and returns its code.
memkv_status_t Fail(const Status& status) noexcept;
// MEMKV_OK for Ok, else Fail(status).
memkv_status_t Report(const Status& status) noexcept;
// Fail with "<fn>: <what>"; never throws, so it may run inside a catch.
memkv_status_t Fail(StatusCode code, const char* fn, const char* what) noexcept;

// One pointer argument of a C function; `required` false when NULL is
// allowed (a buffer whose length is 0).
struct Arg {
  const char* name;
  const void* value;
  bool required = true;
};

// Runs `body` (returning memkv_status_t) behind the C boundary: first
// InvalidArgument naming the first required argument that is NULL, then no
// exception gets out: std::bad_alloc becomes MEMKV_RESOURCE_EXHAUSTED and
// anything else MEMKV_INTERNAL, each with a last error naming `fn`.
template <typename F>
memkv_status_t Call(const char* fn, std::initializer_list<Arg> args, F&& body) noexcept {
  try {
    for (const Arg& arg : args) {
      if (arg.required && arg.value == nullptr) {
        return Fail(InvalidArgument(std::string(fn) + ": " + arg.name + " is NULL"));
      }
    }
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(StatusCode::kResourceExhausted, fn, "out of memory");
  } catch (const std::exception& e) {
    return Fail(StatusCode::kInternal, fn, e.what());
  } catch (...) {
    return Fail(StatusCode::kInternal, fn, "unknown exception");
  }
}

// For functions that return a value instead of a code: `fallback` when
// `body` throws.
template <typename T, typename F>
T CallOr(T fallback, F&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return fallback;
  }
}

// The C put options of a batch (NULL: none, an empty vector), each checked
// and copied; InvalidArgument naming "<fn>: options[i].<field>" otherwise.
Result<std::vector<PutOptions>> ToPutOptionsArray(const char* fn, const memkv_put_options_t* options, size_t count);

inline std::string_view Key(const void* key, size_t key_len) { return {static_cast<const char*>(key), key_len}; }

}  // namespace memkv::capi

#endif  // MEMKV_CAPI_C_API_INTERNAL_H_
