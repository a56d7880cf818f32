// memkv.Client's asynchronous batches: submit_*, completion_fd,
// poll_completions and cancel over the client's AsyncQueue.
#include <algorithm>
#include <chrono>
#include <string>

#include "client.h"
#include "errors.h"
#include "put_options.h"

namespace memkv::python {
namespace {

template <typename Byte>
void AcquireAll(py::handle sequence, size_t count, Access access, HeldBuffers* held, std::string_view call,
                const char* what, std::vector<std::span<Byte>>* out) {
  py::object items = FastSequence(sequence, call, {what});
  const size_t n = static_cast<size_t>(PySequence_Fast_GET_SIZE(items.ptr()));
  if (n != count) ThrowInvalidArgument(call, std::to_string(count) + " keys but " + std::to_string(n) + " " + what);
  out->reserve(n);
  for (size_t i = 0; i < n; ++i) {
    out->push_back(held->Acquire(PySequence_Fast_GET_ITEM(items.ptr(), static_cast<Py_ssize_t>(i)), access, call,
                                 {what, static_cast<Py_ssize_t>(i)}));
  }
}

template <typename Byte>
void RawAll(py::handle addresses, py::handle lengths, size_t count, std::string_view call,
            std::vector<std::span<Byte>>* out) {
  py::object items = FastSequence(addresses, call, {"addresses"});
  const size_t n = static_cast<size_t>(PySequence_Fast_GET_SIZE(items.ptr()));
  if (n != count) ThrowInvalidArgument(call, std::to_string(count) + " keys but " + std::to_string(n) + " addresses");
  const std::vector<size_t> sizes = Lengths(lengths, count, call);
  out->reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const ArgName name{"addresses", static_cast<Py_ssize_t>(i)};
    out->push_back(
        RawSpan(SizeArg(PySequence_Fast_GET_ITEM(items.ptr(), static_cast<Py_ssize_t>(i)), call, name), sizes[i],
                call, name));
  }
}

}  // namespace

// A put submission: plain when it carries no options (as a server that
// predates them expects), else with them.
AsyncId PyClient::SubmitPutOf(AsyncQueue& queue, Submission& sub, uint64_t tag) {
  if (sub.options.empty()) return queue.SubmitPut(sub.keys.views(), sub.values, tag);
  return queue.SubmitPutWith(sub.keys.views(), sub.values, sub.options, tag);
}

Result<AsyncQueue*> PyClient::QueueLocked(Client& client) {
  std::lock_guard<std::mutex> lock(async_mu_);
  if (queue_ == nullptr) {
    MEMKV_ASSIGN_OR_RETURN(queue_, client.NewAsyncQueue());
  }
  return queue_.get();
}

// Submits without the GIL; the submission is kept (and `sub` emptied) only
// when it was accepted, so on failure the caller's frame releases it with
// the GIL held.
template <typename F>
uint64_t PyClient::SubmitHeld(std::unique_ptr<Submission>& sub, std::string_view call, F submit) {
  Result<uint64_t> id = Call([&](Client& c) -> Result<uint64_t> {
    MEMKV_ASSIGN_OR_RETURN(AsyncQueue * queue, QueueLocked(c));
    std::lock_guard<std::mutex> lock(async_mu_);  // a poll cannot see the completion before it is recorded
    const AsyncId submitted = submit(*queue, *sub);
    submissions_.emplace(submitted, std::move(sub));
    return submitted;
  });
  Check(id.status(), call);
  return *id;
}

uint64_t PyClient::SubmitPut(py::handle keys, py::handle values, uint64_t tag, py::handle options) {
  constexpr std::string_view kCall = "memkv.Client.submit_put";
  auto sub = std::make_unique<Submission>(keys, kCall, true);
  AcquireAll(values, sub->keys.size(), Access::kRead, &sub->held, kCall, "values", &sub->values);
  sub->options = PutOptionsList(options, sub->keys.size(), kCall);
  return SubmitHeld(sub, kCall, [&](AsyncQueue& q, Submission& s) { return SubmitPutOf(q, s, tag); });
}

uint64_t PyClient::SubmitPutPtr(py::handle keys, py::handle addresses, py::handle lengths, uint64_t tag,
                                py::handle options) {
  constexpr std::string_view kCall = "memkv.Client.submit_put_ptr";
  auto sub = std::make_unique<Submission>(keys, kCall, false);
  RawAll(addresses, lengths, sub->keys.size(), kCall, &sub->values);
  sub->options = PutOptionsList(options, sub->keys.size(), kCall);
  return SubmitHeld(sub, kCall, [&](AsyncQueue& q, Submission& s) { return SubmitPutOf(q, s, tag); });
}

uint64_t PyClient::SubmitGetInto(py::handle keys, py::handle buffers, uint64_t tag) {
  constexpr std::string_view kCall = "memkv.Client.submit_get_into";
  auto sub = std::make_unique<Submission>(keys, kCall, true);
  AcquireAll(buffers, sub->keys.size(), Access::kWrite, &sub->held, kCall, "buffers", &sub->buffers);
  return SubmitHeld(sub, kCall,
                    [&](AsyncQueue& q, Submission& s) { return q.SubmitGet(s.keys.views(), s.buffers, tag); });
}

uint64_t PyClient::SubmitGetIntoPtr(py::handle keys, py::handle addresses, py::handle lengths, uint64_t tag) {
  constexpr std::string_view kCall = "memkv.Client.submit_get_into_ptr";
  auto sub = std::make_unique<Submission>(keys, kCall, false);
  RawAll(addresses, lengths, sub->keys.size(), kCall, &sub->buffers);
  return SubmitHeld(sub, kCall,
                    [&](AsyncQueue& q, Submission& s) { return q.SubmitGet(s.keys.views(), s.buffers, tag); });
}

uint64_t PyClient::SubmitExists(py::handle keys, uint64_t tag) {
  constexpr std::string_view kCall = "memkv.Client.submit_exists";
  auto sub = std::make_unique<Submission>(keys, kCall, false);
  return SubmitHeld(sub, kCall, [&](AsyncQueue& q, Submission& s) { return q.SubmitExists(s.keys.views(), tag); });
}

uint64_t PyClient::SubmitDelete(py::handle keys, uint64_t tag) {
  constexpr std::string_view kCall = "memkv.Client.submit_delete";
  auto sub = std::make_unique<Submission>(keys, kCall, false);
  return SubmitHeld(sub, kCall, [&](AsyncQueue& q, Submission& s) { return q.SubmitDelete(s.keys.views(), tag); });
}

int PyClient::CompletionFd() {
  Result<int> fd = Call([&](Client& c) -> Result<int> {
    MEMKV_ASSIGN_OR_RETURN(AsyncQueue * queue, QueueLocked(c));
    return queue->fd();
  });
  Check(fd.status(), "memkv.Client.completion_fd");
  return *fd;
}

bool PyClient::Cancel(uint64_t id) {
  Result<bool> cancelled = Call([&](Client& c) -> Result<bool> {
    MEMKV_ASSIGN_OR_RETURN(AsyncQueue * queue, QueueLocked(c));
    return queue->Cancel(id);
  });
  Check(cancelled.status(), "memkv.Client.cancel");
  return *cancelled;
}

py::list PyClient::PollCompletions(py::handle max_arg, int timeout_ms) {
  constexpr std::string_view kCall = "memkv.Client.poll_completions";
  const size_t max = max_arg.is_none() ? SIZE_MAX : SizeArg(max_arg, kCall, {"max"});
  std::vector<AsyncCompletion> done;
  // Waits in slices, each with mu_ held shared, so close() never waits on a
  // long poll for more than a slice.
  constexpr int kSliceMs = 100;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    int slice = 0;
    if (timeout_ms != 0) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
      slice = timeout_ms < 0 ? kSliceMs : static_cast<int>(std::clamp<long>(timeout_ms - waited, 0, kSliceMs));
    }
    Status s = Call([&](Client& c) -> Status {
      MEMKV_ASSIGN_OR_RETURN(AsyncQueue * queue, QueueLocked(c));
      queue->Wait(&done, max, slice);
      return Status::Ok();
    });
    Check(s, kCall);
    if (!done.empty() || max == 0 || slice == 0) break;
  }
  std::vector<std::unique_ptr<Submission>> finished;  // released with the GIL, on return
  {
    std::lock_guard<std::mutex> lock(async_mu_);
    for (const AsyncCompletion& d : done) {
      auto node = submissions_.extract(d.id);
      if (!node.empty()) finished.push_back(std::move(node.mapped()));
    }
  }
  py::list out;
  for (AsyncCompletion& d : done) {
    PyCompletion c;
    c.id = d.id;
    c.tag = d.tag;
    c.op = std::string(AsyncOpName(d.op));
    c.cancelled = d.cancelled;
    c.result.statuses = std::move(d.statuses);
    c.result.present_prefix = d.present_prefix;
    c.result.has_sizes = d.op == AsyncOp::kGet;
    c.result.sizes = std::move(d.sizes);
    out.append(py::cast(std::move(c)));
  }
  return out;
}

}  // namespace memkv::python
