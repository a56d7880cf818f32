// python/src/client.h: memkv.Client, the Python face of memkv::Client.
//
// Thread-safety: one PyClient may be used by many Python threads at once.
// Every call releases the GIL for the whole time it talks to servers (so
// other threads run, and a log callback can take the GIL back) and holds mu_
// shared meanwhile; close() takes mu_ exclusively, so it waits for the calls
// in flight and destroys the client with none inside it. Calls after close()
// raise memkv.FailedPrecondition.
//
// Keys and buffers are converted with the GIL held (convert.h) into views of
// the caller's objects, which are kept alive and in place until the call
// returns: values are sent from, and read into, the caller's memory.
#ifndef MEMKV_PYTHON_CLIENT_H_
#define MEMKV_PYTHON_CLIENT_H_

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "convert.h"
#include "memkv/client.h"
#include "memkv/put_options.h"

namespace memkv::python {

namespace py = pybind11;

// What a batch call returns (memkv.BatchResult): per-key statuses, in order,
// the leading run of Ok keys and, for batch_get_into, the value sizes.
struct BatchOutcome {
  std::vector<Status> statuses;
  size_t present_prefix = 0;
  bool has_sizes = false;
  std::vector<size_t> sizes;  // has_sizes: the size of each value read (0 unless Ok)
};

// What poll_completions returns for one submission (memkv.Completion).
struct PyCompletion {
  uint64_t id = 0;
  uint64_t tag = 0;
  std::string op;  // "get", "put", "exists", "delete"
  bool cancelled = false;
  BatchOutcome result;
};

class PyClient {
 public:
  // `options`: what the client was created with (read back by options()),
  // or nullopt when the library read them itself (from_env).
  PyClient(std::unique_ptr<Client> client, std::optional<ClientOptions> options)
      : client_(std::move(client)), options_(std::move(options)) {}
  ~PyClient() { Close(); }
  PyClient(const PyClient&) = delete;
  PyClient& operator=(const PyClient&) = delete;

  static std::unique_ptr<PyClient> Create(py::handle servers, py::handle auth_key, const py::kwargs& options);
  static std::unique_ptr<PyClient> FromEnvironment();

  // One key (client.cc). A miss is not an error: get and get_into return
  // None, delete returns False, exists returns False.
  // put / put_ptr: `options` from the keywords (put_options.h); a plain
  // put when none is set.
  void Put(py::handle key, py::handle value, const PutOptions& options);
  void PutPtr(py::handle key, py::handle address, py::handle length, const PutOptions& options);
  py::object Get(py::handle key);
  py::object GetInto(py::handle key, py::handle buffer);
  py::object GetIntoPtr(py::handle key, py::handle address, py::handle length);
  bool Delete(py::handle key);
  bool Exists(py::handle key);
  // value_size: the value's size, or None on a miss.
  py::object ValueSize(py::handle key);
  // list_keys: (keys as bytes, the next cursor as bytes or None when done).
  py::tuple ListKeys(py::handle prefix, py::handle cursor, py::handle page_size);

  // Batches (batch.cc). `options`: None or one memkv.PutOptions (or None)
  // per key.
  BatchOutcome BatchPut(py::handle keys, py::handle values, py::handle options);
  BatchOutcome BatchPutPtr(py::handle keys, py::handle addresses, py::handle lengths, py::handle options);
  BatchOutcome BatchGetInto(py::handle keys, py::handle buffers);
  BatchOutcome BatchGetIntoPtr(py::handle keys, py::handle addresses, py::handle lengths);
  BatchOutcome BatchExists(py::handle keys);
  // match_prefix: how many keys, from keys[0], are stored without a gap
  // (Client::MatchPrefix: one request per server).
  size_t MatchPrefix(py::handle keys);

  // Asynchronous batches (async.cc; memkv/async.h states the rules). Each
  // submit_* converts its arguments with the GIL held, then submits without
  // it and returns the submission's id. The keys and buffers are held (as
  // a blocking call holds them) until poll_completions hands the
  // submission's completion back. One queue per client, made on first use.
  uint64_t SubmitPut(py::handle keys, py::handle values, uint64_t tag, py::handle options);
  uint64_t SubmitPutPtr(py::handle keys, py::handle addresses, py::handle lengths, uint64_t tag,
                        py::handle options);
  uint64_t SubmitGetInto(py::handle keys, py::handle buffers, uint64_t tag);
  uint64_t SubmitGetIntoPtr(py::handle keys, py::handle addresses, py::handle lengths, uint64_t tag);
  uint64_t SubmitExists(py::handle keys, uint64_t tag);
  uint64_t SubmitDelete(py::handle keys, uint64_t tag);
  // Readable while completions wait.
  int CompletionFd();
  // Up to `max` (None: all) completions, first waiting up to timeout_ms
  // (0: not at all; negative: until one comes) without the GIL.
  // A list of memkv.Completion.
  py::list PollCompletions(py::handle max, int timeout_ms);
  bool Cancel(uint64_t id);

  // The rest (client.cc).
  size_t ServerFor(py::handle key);
  std::string IdentityTag();
  void ReportRestores(uint64_t in_time, uint64_t late);
  py::dict Stats();
  py::list Servers();
  // options: every client option's value as text, by name (ClientOptionText);
  // memkv.FailedPrecondition for a client made by from_env.
  py::dict Options() const;
  // `region` is an object with the buffer protocol (held until unregistered
  // or closed, so its memory stays mapped), or an int address with `length`.
  // Returns the region's base address.
  uintptr_t RegisterMemory(py::handle region, py::handle length);
  // `region`: the base address, or the object registered.
  void UnregisterMemory(py::handle region);
  void Close();
  bool closed() const;

 private:
  // Runs fn(client) without the GIL and with mu_ held shared. fn returns a
  // Status or a Result<T>; FailedPrecondition once the client is closed.
  template <typename F>
  std::invoke_result_t<F, Client&> Call(F&& fn) {
    py::gil_scoped_release nogil;
    std::shared_lock lock(mu_);
    if (client_ == nullptr) return FailedPrecondition("the client is closed");
    return fn(*client_);
  }

  void PutSpan(py::handle key, std::span<const uint8_t> value, const PutOptions& options, std::string_view call);
  py::object GetIntoSpan(py::handle key, std::span<uint8_t> buffer, std::string_view call);
  BatchOutcome BatchPutSpans(const KeyList& keys, std::span<const std::span<const uint8_t>> values,
                             const std::vector<PutOptions>& options, std::string_view call);
  BatchOutcome BatchGetIntoSpans(const KeyList& keys, std::span<const std::span<uint8_t>> buffers,
                                 std::string_view call);

  // One asynchronous submission's arguments, held until its completion is
  // polled; destroyed with the GIL held.
  struct Submission {
    Submission(py::handle key_list, std::string_view call, bool holds_buffers)
        : keys(key_list, call), held(holds_buffers ? keys.size() : 0) {}
    KeyList keys;
    HeldBuffers held;
    std::vector<std::span<const uint8_t>> values;
    std::vector<std::span<uint8_t>> buffers;
    std::vector<PutOptions> options;  // a put's: empty, or one per key
  };
  static AsyncId SubmitPutOf(AsyncQueue& queue, Submission& sub, uint64_t tag);
  template <typename F>
  uint64_t SubmitHeld(std::unique_ptr<Submission>& sub, std::string_view call, F submit);
  // The queue (made on first use), with mu_ held shared.
  Result<AsyncQueue*> QueueLocked(Client& client);

  std::shared_mutex mu_;
  std::unique_ptr<Client> client_;  // guarded by mu_; null once closed
  // Lock order: GIL, then async_mu_; mu_, then async_mu_. Nothing under
  // async_mu_ takes the GIL.
  std::mutex async_mu_;
  std::unique_ptr<AsyncQueue> queue_;  // guarded by async_mu_; reset by Close before client_
  std::unordered_map<uint64_t, std::unique_ptr<Submission>> submissions_;  // guarded by async_mu_
  // Set at construction, then only read; log_callback cleared, so it holds
  // no Python object.
  std::optional<ClientOptions> options_;
  // Set when close() begins, so `closed` never waits for mu_ (which close()
  // holds while calls in flight finish).
  std::atomic<bool> closed_{false};
  // Objects registered by register_memory, by base address; guarded by the GIL.
  std::map<uintptr_t, std::unique_ptr<HeldBuffers>> registered_;
};

}  // namespace memkv::python

#endif  // MEMKV_PYTHON_CLIENT_H_
