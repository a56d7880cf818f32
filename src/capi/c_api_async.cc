// The C API's asynchronous batches (memkv_async_*): each submission's keys
// are copied and its output arrays remembered (AsyncSubmission) until
// memkv_async_poll hands its completion back and fills them; the client's
// AsyncQueue does the rest.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "capi/c_api_internal.h"

namespace memkv::capi {
namespace {

// The client's queue, made on first use.
Result<AsyncQueue*> QueueOf(memkv_client_t* c) {
  AsyncState& state = *c->async;
  MutexLock lock(state.mu);
  if (state.queue == nullptr) {
    MEMKV_ASSIGN_OR_RETURN(state.queue, c->client->NewAsyncQueue());
  }
  return state.queue.get();
}

// Copies the keys into `sub`; InvalidArgument "fn: keys[i] is NULL" for a
// NULL key with a length.
Status CopyKeys(const char* fn, const void* const* keys, const size_t* key_lens, size_t count, AsyncSubmission* sub) {
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    if (keys[i] == nullptr && key_lens[i] > 0) {
      return InvalidArgument(std::string(fn) + ": keys[" + std::to_string(i) + "] is NULL");
    }
    total += key_lens[i];
  }
  sub->key_bytes.reserve(total);
  for (size_t i = 0; i < count; ++i) sub->key_bytes.append(static_cast<const char*>(keys[i]), key_lens[i]);
  sub->keys.reserve(count);
  size_t offset = 0;
  for (size_t i = 0; i < count; ++i) {
    sub->keys.push_back(std::string_view(sub->key_bytes).substr(offset, key_lens[i]));
    offset += key_lens[i];
  }
  return Status::Ok();
}

template <typename Span, typename Ptr>
Status ViewMemory(const char* fn, const char* name, Ptr const* ptrs, const size_t* lens, size_t count,
                  std::vector<Span>* out) {
  out->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (ptrs[i] == nullptr && lens[i] > 0) {
      return InvalidArgument(std::string(fn) + ": " + name + "[" + std::to_string(i) + "] is NULL");
    }
    out->emplace_back(static_cast<typename Span::pointer>(const_cast<void*>(static_cast<const void*>(ptrs[i]))),
                      lens[i]);
  }
  return Status::Ok();
}

// Submits `sub` with `submit(queue, *sub)` and keeps it until polled. The
// lock covers both, so a poll never sees a completion it cannot match.
template <typename SubmitFn>
memkv_status_t Submit(memkv_client_t* c, std::unique_ptr<AsyncSubmission> sub, uint64_t* id, SubmitFn submit) {
  Result<AsyncQueue*> queue = QueueOf(c);
  if (!queue.ok()) return Fail(queue.status());
  AsyncState& state = *c->async;
  MutexLock lock(state.mu);
  const AsyncId submitted = submit(**queue, *sub);
  state.submissions.emplace(submitted, std::move(sub));
  if (id != nullptr) *id = submitted;
  return MEMKV_OK;
}

}  // namespace
}  // namespace memkv::capi

using memkv::AsyncCompletion;
using memkv::AsyncQueue;
using memkv::MutexLock;
using memkv::capi::AsyncSubmission;
using memkv::capi::Call;
using memkv::capi::CopyKeys;
using memkv::capi::Fail;
using memkv::capi::Submit;
using memkv::capi::ViewMemory;

extern "C" {

memkv_status_t memkv_async_get(memkv_client_t* c, const void* const* keys, const size_t* key_lens, void* const* bufs,
                               const size_t* buf_lens, size_t count, size_t* value_lens, memkv_status_t* statuses,
                               uint64_t tag, uint64_t* id) {
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
                auto sub = std::make_unique<AsyncSubmission>();
                memkv::Status s = CopyKeys(fn, keys, key_lens, count, sub.get());
                if (s.ok()) s = ViewMemory(fn, "bufs", bufs, buf_lens, count, &sub->buffers);
                if (!s.ok()) return Fail(s);
                sub->statuses = statuses;
                sub->value_lens = value_lens;
                return Submit(c, std::move(sub), id, [&](AsyncQueue& q, const AsyncSubmission& x) {
                  return q.SubmitGet(x.keys, x.buffers, tag);
                });
              });
}

memkv_status_t memkv_async_put(memkv_client_t* c, const void* const* keys, const size_t* key_lens,
                               const void* const* values, const size_t* value_lens, size_t count,
                               memkv_status_t* statuses, uint64_t tag, uint64_t* id) {
  const char* fn = __func__;
  const bool any = count > 0;
  return Call(fn,
              {{"client", c},
               {"keys", keys, any},
               {"key_lens", key_lens, any},
               {"values", values, any},
               {"value_lens", value_lens, any},
               {"statuses", statuses, any}},
              [&] {
                auto sub = std::make_unique<AsyncSubmission>();
                memkv::Status s = CopyKeys(fn, keys, key_lens, count, sub.get());
                if (s.ok()) s = ViewMemory(fn, "values", values, value_lens, count, &sub->values);
                if (!s.ok()) return Fail(s);
                sub->statuses = statuses;
                return Submit(c, std::move(sub), id, [&](AsyncQueue& q, const AsyncSubmission& x) {
                  return q.SubmitPut(x.keys, x.values, tag);
                });
              });
}

memkv_status_t memkv_async_exists(memkv_client_t* c, const void* const* keys, const size_t* key_lens, size_t count,
                                  memkv_status_t* statuses, uint64_t tag, uint64_t* id) {
  const char* fn = __func__;
  const bool any = count > 0;
  return Call(fn, {{"client", c}, {"keys", keys, any}, {"key_lens", key_lens, any}, {"statuses", statuses, any}}, [&] {
    auto sub = std::make_unique<AsyncSubmission>();
    memkv::Status s = CopyKeys(fn, keys, key_lens, count, sub.get());
    if (!s.ok()) return Fail(s);
    sub->statuses = statuses;
    return Submit(c, std::move(sub), id,
                  [&](AsyncQueue& q, const AsyncSubmission& x) { return q.SubmitExists(x.keys, tag); });
  });
}

memkv_status_t memkv_async_delete(memkv_client_t* c, const void* const* keys, const size_t* key_lens, size_t count,
                                  memkv_status_t* statuses, uint64_t tag, uint64_t* id) {
  const char* fn = __func__;
  const bool any = count > 0;
  return Call(fn, {{"client", c}, {"keys", keys, any}, {"key_lens", key_lens, any}, {"statuses", statuses, any}}, [&] {
    auto sub = std::make_unique<AsyncSubmission>();
    memkv::Status s = CopyKeys(fn, keys, key_lens, count, sub.get());
    if (!s.ok()) return Fail(s);
    sub->statuses = statuses;
    return Submit(c, std::move(sub), id,
                  [&](AsyncQueue& q, const AsyncSubmission& x) { return q.SubmitDelete(x.keys, tag); });
  });
}

memkv_status_t memkv_async_fd(memkv_client_t* c, int* fd) {
  return Call(__func__, {{"client", c}, {"fd", fd}}, [&] {
    memkv::Result<AsyncQueue*> queue = memkv::capi::QueueOf(c);
    if (!queue.ok()) return Fail(queue.status());
    *fd = (*queue)->fd();
    return MEMKV_OK;
  });
}

memkv_status_t memkv_async_poll(memkv_client_t* c, memkv_async_completion_t* out, size_t max, int timeout_ms,
                                size_t* n) {
  return Call(__func__, {{"client", c}, {"out", out, max > 0}, {"n", n}}, [&] {
    *n = 0;
    memkv::Result<AsyncQueue*> queue = memkv::capi::QueueOf(c);
    if (!queue.ok()) return Fail(queue.status());
    std::vector<AsyncCompletion> done;
    if (max == 0) return MEMKV_OK;
    (*queue)->Wait(&done, max, timeout_ms);
    memkv::capi::AsyncState& state = *c->async;
    MutexLock lock(state.mu);
    bool failure_recorded = false;
    for (AsyncCompletion& d : done) {
      memkv_async_completion_t& o = out[(*n)++];
      o.id = d.id;
      o.tag = d.tag;
      o.op = static_cast<int>(d.op);
      o.cancelled = d.cancelled ? 1 : 0;
      o.count = d.statuses.size();
      o.prefix = d.present_prefix;
      o.status = MEMKV_OK;
      auto it = state.submissions.find(d.id);
      if (it == state.submissions.end()) continue;  // cannot happen: submitted under the same lock
      const AsyncSubmission& sub = *it->second;
      for (size_t i = 0; i < d.statuses.size(); ++i) {
        const memkv::Status& s = d.statuses[i];
        sub.statuses[i] = static_cast<memkv_status_t>(s.code());
        if (sub.value_lens != nullptr) sub.value_lens[i] = s.ok() && i < d.sizes.size() ? d.sizes[i] : 0;
        if (!s.ok() && s.code() != memkv::StatusCode::kNotFound && o.status == MEMKV_OK) {
          o.status = static_cast<memkv_status_t>(s.code());
          if (!failure_recorded) {
            Fail(s);
            failure_recorded = true;
          }
        }
      }
      state.submissions.erase(it);
    }
    return MEMKV_OK;
  });
}

memkv_status_t memkv_async_cancel(memkv_client_t* c, uint64_t id, int* cancelled) {
  return Call(__func__, {{"client", c}, {"cancelled", cancelled}}, [&] {
    memkv::Result<AsyncQueue*> queue = memkv::capi::QueueOf(c);
    if (!queue.ok()) return Fail(queue.status());
    *cancelled = (*queue)->Cancel(id) ? 1 : 0;
    return MEMKV_OK;
  });
}

}  // extern "C"
