// The C API's batch calls: the caller's parallel arrays become spans over the
// same memory (nothing is copied), the per-key statuses and the present
// prefix come back in the caller's arrays.
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "capi/c_api_internal.h"

namespace memkv::capi {
namespace {

// Views of the caller's arrays ptrs[i] of lens[i] bytes, as `View`
// (string_view, span<const uint8_t> or span<uint8_t>); InvalidArgument
// "fn: name[i] is NULL" for a NULL pointer with a length. An empty key is
// left to the client, which rejects it for that key alone.
template <typename View, typename Ptr>
Status Views(const char* fn, const char* name, Ptr const* ptrs, const size_t* lens, size_t count,
             std::vector<View>* out) {
  using Element = std::remove_reference_t<decltype(*std::declval<View>().data())>;
  out->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (ptrs[i] == nullptr && lens[i] > 0) {
      return InvalidArgument(std::string(fn) + ": " + name + "[" + std::to_string(i) + "] is NULL");
    }
    out->emplace_back(static_cast<Element*>(ptrs[i]), lens[i]);
  }
  return Status::Ok();
}

// A batch's keys and, per key, its value or buffer (`Bytes`).
template <typename Bytes>
struct BatchViews {
  std::vector<std::string_view> keys;
  std::vector<Bytes> bytes;
};

// Both arrays of a batch viewed, or the InvalidArgument of the first NULL entry.
template <typename Bytes, typename Ptr>
Result<BatchViews<Bytes>> ViewBatch(const char* fn, const void* const* keys, const size_t* key_lens, const char* name,
                                    Ptr const* ptrs, const size_t* lens, size_t count) {
  BatchViews<Bytes> views;
  MEMKV_RETURN_IF_ERROR(Views(fn, "keys", keys, key_lens, count, &views.keys));
  MEMKV_RETURN_IF_ERROR(Views(fn, name, ptrs, lens, count, &views.bytes));
  return views;
}

// Copies the per-key codes and the prefix out. The first key that failed
// with more than a miss leaves its message as the thread's last error, since
// the call itself returns MEMKV_OK.
memkv_status_t Deliver(const BatchResult& result, size_t count, memkv_status_t* statuses, size_t* prefix) {
  bool failure_recorded = false;
  for (size_t i = 0; i < count; ++i) {
    static const Status kNoStatus(StatusCode::kInternal, "the client returned no status for this key");
    const Status& status = i < result.statuses.size() ? result.statuses[i] : kNoStatus;
    statuses[i] = static_cast<memkv_status_t>(status.code());
    if (!failure_recorded && !status.ok() && status.code() != StatusCode::kNotFound) {
      Fail(status);
      failure_recorded = true;
    }
  }
  if (prefix != nullptr) *prefix = result.present_prefix;
  return MEMKV_OK;
}

// memkv_batch_put and memkv_batch_put_with (`options` NULL: plain puts),
// reporting as `fn`.
memkv_status_t BatchPut(const char* fn, memkv_client_t* c, const void* const* keys, const size_t* key_lens,
                        const void* const* values, const size_t* value_lens, const memkv_put_options_t* options,
                        size_t count, memkv_status_t* statuses, size_t* prefix) {
  const bool any = count > 0;
  return Call(fn,
              {{"client", c},
               {"keys", keys, any},
               {"key_lens", key_lens, any},
               {"values", values, any},
               {"value_lens", value_lens, any},
               {"statuses", statuses, any}},
              [&] {
                auto views =
                    ViewBatch<std::span<const uint8_t>>(fn, keys, key_lens, "values", values, value_lens, count);
                if (!views.ok()) return Fail(views.status());
                if (options == nullptr) {
                  return Deliver(c->client->BatchPut(views->keys, views->bytes), count, statuses, prefix);
                }
                auto converted = ToPutOptionsArray(fn, options, count);
                if (!converted.ok()) return Fail(converted.status());
                return Deliver(c->client->BatchPutWith(views->keys, views->bytes, *converted), count, statuses, prefix);
              });
}

}  // namespace
}  // namespace memkv::capi

using memkv::capi::BatchPut;
using memkv::capi::Call;
using memkv::capi::Deliver;
using memkv::capi::Fail;
using memkv::capi::ViewBatch;
using memkv::capi::Views;

extern "C" {

memkv_status_t memkv_batch_put(memkv_client_t* c, const void* const* keys, const size_t* key_lens,
                               const void* const* values, const size_t* value_lens, size_t count,
                               memkv_status_t* statuses, size_t* prefix) {
  return BatchPut(__func__, c, keys, key_lens, values, value_lens, nullptr, count, statuses, prefix);
}

memkv_status_t memkv_batch_put_with(memkv_client_t* c, const void* const* keys, const size_t* key_lens,
                                    const void* const* values, const size_t* value_lens,
                                    const memkv_put_options_t* options, size_t count, memkv_status_t* statuses,
                                    size_t* prefix) {
  return BatchPut(__func__, c, keys, key_lens, values, value_lens, options, count, statuses, prefix);
}

memkv_status_t memkv_match_prefix(memkv_client_t* c, const void* const* keys, const size_t* key_lens, size_t count,
                                  size_t* matched) {
  const char* fn = __func__;
  const bool any = count > 0;
  return Call(fn, {{"client", c}, {"keys", keys, any}, {"key_lens", key_lens, any}, {"matched", matched}}, [&] {
    std::vector<std::string_view> key_views;
    memkv::Status s = Views(fn, "keys", keys, key_lens, count, &key_views);
    if (!s.ok()) return Fail(s);
    memkv::Result<size_t> n = c->client->MatchPrefix(key_views);
    if (!n.ok()) return Fail(n.status());
    *matched = *n;
    return MEMKV_OK;
  });
}

memkv_status_t memkv_batch_get(memkv_client_t* c, const void* const* keys, const size_t* key_lens, void* const* bufs,
                               const size_t* buf_lens, size_t count, size_t* value_lens, memkv_status_t* statuses,
                               size_t* prefix) {
  const char* fn = __func__;
  const bool any = count > 0;
  return Call(fn,
              {{"client", c},
               {"keys", keys, any},
               {"key_lens", key_lens, any},
               {"bufs", bufs, any},
               {"buf_lens", buf_lens, any},
               {"value_lens", value_lens, any},
               {"statuses", statuses, any}},
              [&] {
                auto views = ViewBatch<std::span<uint8_t>>(fn, keys, key_lens, "bufs", bufs, buf_lens, count);
                if (!views.ok()) return Fail(views.status());
                std::vector<size_t> sizes;
                memkv::BatchResult result = c->client->BatchGetInto(views->keys, views->bytes, &sizes);
                for (size_t i = 0; i < count; ++i) {
                  const bool ok = i < result.statuses.size() && result.statuses[i].ok() && i < sizes.size();
                  value_lens[i] = ok ? sizes[i] : 0;
                }
                return Deliver(result, count, statuses, prefix);
              });
}

memkv_status_t memkv_batch_exists(memkv_client_t* c, const void* const* keys, const size_t* key_lens, size_t count,
                                  memkv_status_t* statuses, size_t* prefix) {
  const char* fn = __func__;
  const bool any = count > 0;
  return Call(fn, {{"client", c}, {"keys", keys, any}, {"key_lens", key_lens, any}, {"statuses", statuses, any}}, [&] {
    std::vector<std::string_view> key_views;
    memkv::Status s = Views(fn, "keys", keys, key_lens, count, &key_views);
    if (!s.ok()) return Fail(s);
    return Deliver(c->client->BatchExists(key_views), count, statuses, prefix);
  });
}

}  // extern "C"
