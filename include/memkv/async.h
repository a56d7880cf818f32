// memkv/async.h: submitting batches without waiting for them (included by
// memkv/client.h).
//
// An AsyncQueue, made by Client::NewAsyncQueue, takes batch submissions
// (get into the caller's buffers, put, exists, delete) and returns at once
// with the submission's id. The client's driver threads (at most
// ClientOptions::async_threads, started as submissions need them) run each batch with the same code as the blocking
// Client::Batch* calls, and the result comes back as an AsyncCompletion on
// the queue that took it. The queue's fd() is readable while completions are
// waiting, so an event loop (epoll, asyncio's add_reader, NIXL's progress
// thread) can wait on it next to its other sources; Poll takes them.
//
// The rules:
// - Every submission completes exactly once: Ok with a status per key (the
//   same statuses the blocking batch call returns), or cancelled (every key
//   Unavailable "cancelled: ..." and AsyncCompletion::cancelled set). A
//   batch with mismatched counts completes with every key InvalidArgument,
//   as the blocking call returns; Submit* itself never fails.
// - What a submission names is lent to the client until its completion is
//   taken by Poll (or the queue is destroyed): the span of keys and the bytes
//   each key views, the span of values or buffers and the memory each
//   points to. The client writes into a get's buffers only before its
//   completion is posted. Nothing is copied on submission.
// - Cancel(id) takes back a submission that has not started: it then
//   completes as cancelled, and its buffers were never touched. A batch
//   already running cannot be stopped; it finishes within the client's
//   deadline (ClientOptions::timeout_ms) and completes with its statuses.
// - Destroying a queue cancels its submissions that have not started and
//   waits for those that are running (at most the client's deadline); their
//   completions are dropped. Destroying the Client cancels what has not
//   started on every queue and waits for what is running; a queue that
//   outlives its client still holds those completions (so each submission
//   still completes once), and a later submission completes at once as
//   cancelled.
// - Submissions run in parallel on the driver threads; completions of one
//   queue may arrive in any order. Match them by id or by the caller's tag.
//
// Thread-safety: every AsyncQueue method may be called from any thread,
// also concurrently. Several queues may share one client.
#ifndef MEMKV_ASYNC_H_
#define MEMKV_ASYNC_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "memkv/put_options.h"
#include "memkv/status.h"

namespace memkv {

// Identifies a submission; unique within its client, never 0.
using AsyncId = uint64_t;

enum class AsyncOp : int { kGet = 0, kPut = 1, kExists = 2, kDelete = 3 };
// "get", "put", "exists", "delete".
std::string_view AsyncOpName(AsyncOp op);

// One finished submission.
struct AsyncCompletion {
  AsyncId id = 0;
  uint64_t tag = 0;  // the caller's, as submitted
  AsyncOp op = AsyncOp::kGet;
  // Taken back by Cancel, or by destroying the queue or client before it
  // started: every status is Unavailable "cancelled: ...".
  bool cancelled = false;
  // One per key, in order: Ok, NotFound (a miss; for exists: absent; for
  // delete: there was nothing to delete) or why the key failed.
  std::vector<Status> statuses;
  size_t present_prefix = 0;  // leading keys whose status is Ok
  // Get: the size of the value read into buffers[i] where statuses[i] is Ok
  // (0 elsewhere). Empty for the other operations.
  std::vector<size_t> sizes;
};

class AsyncQueue {
 public:
  // Cancels what has not started, waits for what is running (see above).
  virtual ~AsyncQueue() = default;

  // Reads each key's value into buffers[i] (TooLarge when it does not fit).
  virtual AsyncId SubmitGet(std::span<const std::string_view> keys, std::span<const std::span<uint8_t>> buffers,
                            uint64_t tag = 0) = 0;
  // Stores values[i] under keys[i]; a key named twice stores its last value.
  virtual AsyncId SubmitPut(std::span<const std::string_view> keys,
                            std::span<const std::span<const uint8_t>> values, uint64_t tag = 0) = 0;
  // Ok: present; NotFound: absent.
  virtual AsyncId SubmitExists(std::span<const std::string_view> keys, uint64_t tag = 0) = 0;
  // Ok: deleted; NotFound: was absent. A key named twice is deleted once; the
  // other of its items reports NotFound.
  virtual AsyncId SubmitDelete(std::span<const std::string_view> keys, uint64_t tag = 0) = 0;

  // True: the submission had not started and now completes as cancelled.
  // False: it is running or done (it completes, or completed, normally), or
  // `id` is not this queue's.
  virtual bool Cancel(AsyncId id) = 0;

  // Readable (POLLIN) while completions are waiting to be taken. Owned by
  // the queue; do not read or close it.
  virtual int fd() const = 0;
  // Appends up to `max` waiting completions to `out`, oldest first; returns
  // how many. Never blocks.
  virtual size_t Poll(std::vector<AsyncCompletion>* out, size_t max = SIZE_MAX) = 0;
  // Like Poll, but first waits up to `timeout_ms` for one to arrive (0: do
  // not wait; negative: without limit). A caller that would wait first runs
  // one of this queue's submissions that no driver thread has started yet
  // itself (no thread wake-up on either side); it then returns once that
  // batch is done, which can be later than `timeout_ms` (never later than the
  // client's deadline).
  virtual size_t Wait(std::vector<AsyncCompletion>* out, size_t max, int timeout_ms) = 0;
  // Submitted and not yet taken by Poll / Wait.
  virtual size_t outstanding() const = 0;

  // SubmitPut with options (Client::BatchPutWith): `options` is empty or
  // holds one PutOptions per key; it is lent like the keys and values.
  // Completes as AsyncOp::kPut. (Declared last: the slots above stay put.)
  virtual AsyncId SubmitPutWith(std::span<const std::string_view> keys,
                                std::span<const std::span<const uint8_t>> values,
                                std::span<const PutOptions> options, uint64_t tag = 0) = 0;
};

}  // namespace memkv

#endif  // MEMKV_ASYNC_H_
