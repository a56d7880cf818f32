// memkv._memkv: the extension module behind the `memkv` package. It binds
// memkv.Client (client.h), memkv.BatchResult, memkv.PutOptions (put_options.h) and
// memkv.client_options(); the exceptions, the
// constants and the stubs are pure Python (memkv/*.py, *.pyi).
//
// Every exception pybind11 can see stops here: C++ exceptions thrown by the
// bindings become Python exceptions at this boundary, and a Python exception
// raised by a log callback never reaches the C++ client (options.cc).
#include <pybind11/pybind11.h>

#include "client.h"
#include "convert.h"
#include "errors.h"
#include "options.h"
#include "put_options.h"

namespace py = pybind11;
using memkv::python::BatchOutcome;
using memkv::python::PyCompletion;
using memkv::python::PyClient;
using memkv::python::PutOptionsFrom;

namespace {

constexpr const char kClientDoc[] = R"(A thread-safe client of one or more MemKV servers.

Client(servers, auth_key, *, transport="auto", num_connections=4,
       timeout_ms=5000, connect_timeout_ms=2000, async_threads=4, rdma_devices=None,
       rdma_mtu=4096, rdma_retry_count=6, rdma_timeout=14, rdma_qps=2,
       rdma_gid_index="auto", rdma_traffic_class="auto",
       rdma_service_level="auto", prometheus_bind="", log_level="warn",
       log_callback=None)

Every client option of memkv.client_options(), by name (auth_key is the
64-hex-character key), and log_callback; options() reads them back. servers
and rdma_devices take a list of str or one comma-separated str; log_level
takes "debug", "info", "warn", "error", "off" or memkv.LOG_*; the rdma_gid_index,
rdma_traffic_class and rdma_service_level options take an int or "auto".
log_callback is called as log_callback(level: int, component: str, message: str)
for each line at or above log_level (without it lines go to stderr). None keeps
an option's default. A bad option raises memkv.InvalidArgument naming it (a
wrong type: TypeError); either has the option's name as its `option`
attribute. The client connects lazily, on the first call.

Keys are str (sent as UTF-8) or bytes, 1..1024 bytes. Values are read from,
and read into, any C-contiguous object with the buffer protocol, with no copy.
A miss is not an exception: get and get_into return None, delete and exists
return False. Other failures raise the memkv.Error subclass of their status.

Puts may say more than their bytes: put and put_ptr take ttl_ms, retention
("normal", "pinned", "evict_first"), parent_key, block_hash and parent_hash
as keywords; the batch and submitted puts take options=, one memkv.PutOptions
(or None) per key. match_prefix(keys) is the prefix-cache lookup: how many
keys, from the first, are stored without a gap.

Use it as a context manager, or call close(); calls after close() raise
memkv.FailedPrecondition. Calls release the GIL while they wait on the network,
so threads sharing one client run in parallel.

Batches can also be submitted without waiting (submit_put, submit_get_into,
submit_exists, submit_delete, and their _ptr forms): each returns an id, and
its memkv.Completion comes from poll_completions(); completion_fd() is
readable while completions wait, and cancel(id) takes back one that has not
started. await client.aput / aget_into / aexists / adelete do the same on an
asyncio loop.)";

constexpr const char kBatchResultDoc[] = R"(The outcome of a batch call, key by key, in the order of the keys.

statuses       list of int status codes (memkv.StatusCode; 0 = OK, 1 = NOT_FOUND)
messages       list of str, "" where OK
present_prefix number of leading keys whose status is OK
sizes          batch_get_into*: the size of each value read (0 where not OK); else None
ok             True when every key is OK

len(r), r[i] (the code of key i) and iteration over the codes work too;
r.error(i) is the memkv.Error of key i, or None where it is OK.)";

// A Python list of item(0) .. item(n - 1).
template <typename F>
py::list ListOf(size_t n, F item) {
  py::list out(n);
  for (size_t i = 0; i < n; ++i) out[i] = item(i);
  return out;
}

py::list CodesOf(const BatchOutcome& r) {
  return ListOf(r.statuses.size(), [&](size_t i) { return py::int_(static_cast<int>(r.statuses[i].code())); });
}

py::list MessagesOf(const BatchOutcome& r) {
  return ListOf(r.statuses.size(), [&](size_t i) { return memkv::python::Utf8Lossy(r.statuses[i].message()); });
}

py::object SizesOf(const BatchOutcome& r) {
  if (!r.has_sizes) return py::none();
  return ListOf(r.sizes.size(), [&](size_t i) { return py::int_(r.sizes[i]); });
}

const memkv::Status& StatusAt(const BatchOutcome& r, Py_ssize_t i) {
  const auto n = static_cast<Py_ssize_t>(r.statuses.size());
  if (i < 0) i += n;
  if (i < 0 || i >= n) throw py::index_error("BatchResult index out of range");
  return r.statuses[static_cast<size_t>(i)];
}

void BindBatchResult(py::module_& m) {
  py::class_<BatchOutcome>(m, "BatchResult", kBatchResultDoc)
      .def_property_readonly("statuses", &CodesOf, "Status code of each key (int; 0 = OK).")
      .def_property_readonly("messages", &MessagesOf, "Error message of each key; \"\" where OK.")
      .def_readonly("present_prefix", &BatchOutcome::present_prefix, "Number of leading keys whose status is OK.")
      .def_property_readonly("sizes", &SizesOf,
                             "batch_get_into*: size of each value read (0 where not OK). Other batches: None.")
      .def_property_readonly(
          "ok", [](const BatchOutcome& r) { return r.present_prefix == r.statuses.size(); },
          "True when every key's status is OK.")
      .def("__len__", [](const BatchOutcome& r) { return r.statuses.size(); }, "Number of keys.")
      .def(
          "__getitem__", [](const BatchOutcome& r, Py_ssize_t i) { return static_cast<int>(StatusAt(r, i).code()); },
          "__getitem__(i: int) -> int\n\nStatus code of key i.")
      .def("__iter__", [](const BatchOutcome& r) { return py::iter(CodesOf(r)); }, "Iterates over the status codes.")
      .def(
          "error",
          [](const BatchOutcome& r, Py_ssize_t i) -> py::object {
            const memkv::Status& s = StatusAt(r, i);
            return s.ok() ? py::none() : memkv::python::ErrorFor(s, "key " + std::to_string(i));
          },
          py::arg("i"),
          "error(i: int) -> memkv.Error | None\n\nThe memkv.Error (not raised) of key i, or None where it is OK.")
      .def("__repr__", [](const BatchOutcome& r) {
        return "BatchResult(statuses=" + py::repr(CodesOf(r)).cast<std::string>() +
               ", present_prefix=" + std::to_string(r.present_prefix) +
               (r.has_sizes ? ", sizes=" + py::repr(SizesOf(r)).cast<std::string>() : std::string()) + ")";
      });
}

constexpr const char kCompletionDoc[] = R"(One finished submission of a Client.submit_* call (poll_completions).

id         the submission's id, as submit_* returned it
tag        the caller's tag, as submitted
op         "get", "put", "exists" or "delete"
cancelled  True when it was taken back before it started (cancel, or close);
           every key's status is then UNAVAILABLE
result     the BatchResult the matching batch_* call would have returned)";

void BindCompletion(py::module_& m) {
  py::class_<PyCompletion>(m, "Completion", kCompletionDoc)
      .def_readonly("id", &PyCompletion::id)
      .def_readonly("tag", &PyCompletion::tag)
      .def_readonly("op", &PyCompletion::op)
      .def_readonly("cancelled", &PyCompletion::cancelled)
      .def_readonly("result", &PyCompletion::result)
      .def("__repr__", [](const PyCompletion& c) {
        return "Completion(id=" + std::to_string(c.id) + ", tag=" + std::to_string(c.tag) + ", op='" + c.op +
               "', cancelled=" + (c.cancelled ? "True" : "False") + ")";
      });
}

void BindClient(py::module_& m) {
  const auto key = py::arg("key");
  const auto kTtl = py::arg("ttl_ms") = 0;
  const auto kRetention = py::arg("retention") = "normal";
  const auto kParentKey = py::arg("parent_key") = py::none();
  const auto kBlockHash = py::arg("block_hash") = py::none();
  const auto kParentHash = py::arg("parent_hash") = py::none();
  const auto kOptions = py::arg("options") = py::none();
  py::class_<PyClient>(m, "Client", kClientDoc)
      .def(py::init(&PyClient::Create), py::arg("servers") = py::none(), py::arg("auth_key") = py::none(),
           "__init__(servers: str | list[str], auth_key: str, **options) -> None\n\n"
           "A client of servers (\"host:port\", as a list or one comma-separated str) holding auth_key\n"
           "(64 hex characters); options are the other ClientOptions fields (see the class).")
      .def_static("from_env", &PyClient::FromEnvironment,
                  "from_env() -> Client\n\n"
                  "A client configured from the environment: MEMKV_CONFIG (a YAML file), then MEMKV_SERVERS,\n"
                  "MEMKV_AUTH_KEY, MEMKV_TRANSPORT, MEMKV_TIMEOUT_MS, ... (docs/configuration.md).")
      .def(
          "put",
          [](PyClient& c, py::handle k, py::handle value, py::handle ttl_ms, py::handle retention,
             py::handle parent_key, py::handle block_hash, py::handle parent_hash) {
            c.Put(k, value,
                  PutOptionsFrom(ttl_ms, retention, parent_key, block_hash, parent_hash, "memkv.Client.put"));
          },
          key, py::arg("value"), py::kw_only(), kTtl, kRetention, kParentKey, kBlockHash, kParentHash,
          "put(key: str | bytes, value: Buffer, *, ttl_ms=0, retention='normal', parent_key=None,\n"
          "    block_hash=None, parent_hash=None) -> None\n\n"
          "Stores value (any C-contiguous object with the buffer protocol, sent from its own memory) under key.\n"
          "The keywords are those of memkv.PutOptions: a lifetime, a retention class (\"normal\", \"pinned\",\n"
          "\"evict_first\"), the parent block's key and the engine's block hashes (bytes or int).")
      .def(
          "put_ptr",
          [](PyClient& c, py::handle k, py::handle address, py::handle length, py::handle ttl_ms,
             py::handle retention, py::handle parent_key, py::handle block_hash, py::handle parent_hash) {
            c.PutPtr(k, address, length,
                     PutOptionsFrom(ttl_ms, retention, parent_key, block_hash, parent_hash, "memkv.Client.put_ptr"));
          },
          key, py::arg("address"), py::arg("length"), py::kw_only(), kTtl, kRetention, kParentKey, kBlockHash,
          kParentHash,
          "put_ptr(key: str | bytes, address: int, length: int, *, ttl_ms=0, retention='normal', ...) -> None\n\n"
          "Stores the length bytes at the raw address under key. The memory must stay valid during the call.\n"
          "The keywords are put's.")
      .def("get", &PyClient::Get, key,
           "get(key: str | bytes) -> bytes | None\n\n"
           "The value of key as a new bytes object (one copy; get_into has none), or None on a miss.")
      .def("get_into", &PyClient::GetInto, key, py::arg("buffer"),
           "get_into(key: str | bytes, buffer: Buffer) -> int | None\n\n"
           "Reads the value of key straight into buffer (writable, C-contiguous) and returns its size,\n"
           "or None on a miss. memkv.TooLarge when the buffer is smaller than the value.")
      .def("get_into_ptr", &PyClient::GetIntoPtr, key, py::arg("address"), py::arg("length"),
           "get_into_ptr(key: str | bytes, address: int, length: int) -> int | None\n\n"
           "get_into for raw memory: the length bytes at address. Returns the value's size, or None on a miss.")
      .def("delete", &PyClient::Delete, key,
           "delete(key: str | bytes) -> bool\n\nRemoves key. True if it was present, False on a miss.")
      .def("exists", &PyClient::Exists, key, "exists(key: str | bytes) -> bool\n\nTrue if key is present.")
      .def("value_size", &PyClient::ValueSize, key,
           "value_size(key: str | bytes) -> Optional[int]\n\n"
           "The size of the value under key without reading it; None on a miss.")
      .def("list_keys", &PyClient::ListKeys, py::arg("prefix") = "", py::arg("cursor") = py::none(),
           py::arg("page_size") = 1000,
           "list_keys(prefix: str | bytes = '', cursor: bytes | None = None, page_size: int = 1000)"
           " -> Tuple[List[bytes], Optional[bytes]]\n\n"
           "One page of the keys that start with prefix, in bytewise order: at most page_size (1..1024)\n"
           "keys after cursor, and the cursor of the next page (None when the listing is complete).\n"
           "Every server is asked; iter_keys() walks every page.")
      .def("batch_put", &PyClient::BatchPut, py::arg("keys"), py::arg("values"), py::kw_only(), kOptions,
           "batch_put(keys: Sequence[str | bytes], values: Sequence[Buffer], *,\n"
           "          options: Sequence[PutOptions | None] | None = None) -> BatchResult\n\n"
           "Stores values[i] under keys[i]; keys may live on different servers. options: one\n"
           "memkv.PutOptions (or None: a plain put) per key.")
      .def("batch_put_ptr", &PyClient::BatchPutPtr, py::arg("keys"), py::arg("addresses"), py::arg("lengths"),
           py::kw_only(), kOptions,
           "batch_put_ptr(keys: Sequence[str | bytes], addresses: Sequence[int], lengths: int | Sequence[int],"
           " *, options=None) -> BatchResult\n\n"
           "batch_put from raw memory; lengths is one int for every key, or one per key.")
      .def("batch_get_into", &PyClient::BatchGetInto, py::arg("keys"), py::arg("buffers"),
           "batch_get_into(keys: Sequence[str | bytes], buffers: Sequence[Buffer]) -> BatchResult\n\n"
           "Reads the value of keys[i] straight into buffers[i]. The result has the sizes; a miss is\n"
           "status NOT_FOUND (1).")
      .def("batch_get_into_ptr", &PyClient::BatchGetIntoPtr, py::arg("keys"), py::arg("addresses"),
           py::arg("lengths"),
           "batch_get_into_ptr(keys: Sequence[str | bytes], addresses: Sequence[int], lengths: int | "
           "Sequence[int]) -> BatchResult\n\n"
           "batch_get_into for raw memory; lengths is one int for every key, or one per key.")
      .def("batch_exists", &PyClient::BatchExists, py::arg("keys"),
           "batch_exists(keys: Sequence[str | bytes]) -> BatchResult\n\n"
           "Which keys are present: status OK (0) where present, NOT_FOUND (1) where absent.")
      .def("match_prefix", &PyClient::MatchPrefix, py::arg("keys"),
           "match_prefix(keys: Sequence[str | bytes]) -> int\n\n"
           "How many keys, from keys[0], are stored without a gap: keys[0..n) present and keys[n]\n"
           "absent (len(keys) when all are). One request per server, in parallel, each stopping at its\n"
           "first miss; a key whose server cannot be asked counts as a miss. At most 1024 keys.")
      .def("submit_put", &PyClient::SubmitPut, py::arg("keys"), py::arg("values"), py::arg("tag") = 0,
           py::kw_only(), kOptions,
           "submit_put(keys, values, tag=0, *, options=None) -> int\n\n"
           "batch_put without waiting: returns the submission's id; its Completion comes from\n"
           "poll_completions. keys and values are held until then.")
      .def("submit_put_ptr", &PyClient::SubmitPutPtr, py::arg("keys"), py::arg("addresses"), py::arg("lengths"),
           py::arg("tag") = 0, py::kw_only(), kOptions,
           "submit_put_ptr(keys, addresses, lengths, tag=0, *, options=None) -> int\n\n"
           "batch_put_ptr without waiting; the memory must stay valid until the completion is polled.")
      .def("submit_get_into", &PyClient::SubmitGetInto, py::arg("keys"), py::arg("buffers"), py::arg("tag") = 0,
           "submit_get_into(keys, buffers, tag=0) -> int\n\n"
           "batch_get_into without waiting; the buffers are written until the completion is polled.")
      .def("submit_get_into_ptr", &PyClient::SubmitGetIntoPtr, py::arg("keys"), py::arg("addresses"),
           py::arg("lengths"), py::arg("tag") = 0,
           "submit_get_into_ptr(keys, addresses, lengths, tag=0) -> int\n\n"
           "batch_get_into_ptr without waiting; the memory must stay valid until the completion is polled.")
      .def("submit_exists", &PyClient::SubmitExists, py::arg("keys"), py::arg("tag") = 0,
           "submit_exists(keys, tag=0) -> int\n\nbatch_exists without waiting.")
      .def("submit_delete", &PyClient::SubmitDelete, py::arg("keys"), py::arg("tag") = 0,
           "submit_delete(keys, tag=0) -> int\n\n"
           "Deletes the keys without waiting: OK deleted, NOT_FOUND was absent.")
      .def("completion_fd", &PyClient::CompletionFd,
           "completion_fd() -> int\n\n"
           "A file descriptor readable while completions wait (for select, epoll or\n"
           "loop.add_reader). It belongs to the client: do not read or close it.")
      .def("poll_completions", &PyClient::PollCompletions, py::arg("max") = py::none(), py::arg("timeout_ms") = 0,
           "poll_completions(max=None, timeout_ms=0) -> list[Completion]\n\n"
           "The completions waiting (at most max), oldest first, after waiting up to timeout_ms\n"
           "for one (0: not at all; negative: until one comes) with the GIL released. A call\n"
           "that waits may first run a submission no driver thread has started itself, and\n"
           "then returns after it. Each submission completes exactly once; its keys and\n"
           "buffers are released here.")
      .def("cancel", &PyClient::Cancel, py::arg("id"),
           "cancel(id: int) -> bool\n\n"
           "Takes back a submission that has not started: True, and it completes cancelled with\n"
           "its buffers untouched. False when it is running or done (it completes normally).")
      .def("server_for", &PyClient::ServerFor, key,
           "server_for(key: str | bytes) -> int\n\nIndex into servers of the server that owns key.")
      .def_property_readonly("identity_tag", &PyClient::IdentityTag,
                             "The tag of the client's cache identity (memkv.CacheIdentity.tag); '' without one.")
      .def("report_restores", &PyClient::ReportRestores, py::arg("in_time"), py::arg("late") = 0,
           "report_restores(in_time: int, late: int = 0) -> None\n\n"
           "The engine used in_time restored blocks (it did not recompute them) and got late more too late\n"
           "to use. Counted in stats() and reported to a server at most once a second and at close, for\n"
           "its memkv_identity_fetched_in_time_total and _late_total.")
      .def("stats", &PyClient::Stats,
           "stats() -> dict\n\nThe client's counters: every field of the C++ ClientStats, by name.")
      .def("servers", &PyClient::Servers,
           "servers() -> list[dict]\n\n"
           "Every server the client knows, as it sees each one now: dicts with name (host:port),\n"
           "source (the server-list entry that named it), id (\"\" until known), weight, share (0..1)\n"
           "state (\"up\", \"pending\", \"down\", \"draining\", \"busy\", \"duplicate\") and detail.")
      .def("options", &PyClient::Options,
           "options() -> dict\n\n"
           "The options the client was created with, defaults filled in: every option of\n"
           "memkv.client_options() by name, as text (\"auto\", \"4096\", \"a:1,b:2\"). Works after close().\n"
           "memkv.FailedPrecondition for a client made by from_env().")
      .def("register_memory", &PyClient::RegisterMemory, py::arg("region"), py::arg("length") = py::none(),
           "register_memory(region: Buffer | int, length: int | None = None) -> int\n\n"
           "Registers memory with the RDMA device once, so transfers from and into it need no copy.\n"
           "region: an object with the buffer protocol (kept alive until unregistered or closed), or an\n"
           "int address with length. Returns the base address. Under TCP it does nothing else.")
      .def("unregister_memory", &PyClient::UnregisterMemory, py::arg("region"),
           "unregister_memory(region: Buffer | int) -> None\n\n"
           "Undoes register_memory; region is the base address or the registered object.")
      .def("close", &PyClient::Close,
           "close() -> None\n\n"
           "Waits for calls in flight, then closes the connections. Later calls raise memkv.FailedPrecondition.")
      .def_property_readonly("closed", &PyClient::closed, "True once close() was called.")
      .def("__enter__", [](py::object self) { return self; }, "__enter__() -> Client")
      .def("__exit__", [](PyClient& c, py::args) { c.Close(); }, "__exit__(*exc) -> None\n\nCalls close().");
}

}  // namespace

PYBIND11_MODULE(_memkv, m) {
  // Signatures are written in the docstrings: pybind11's would show the
  // py::handle parameters as "handle".
  py::options options;
  options.disable_function_signatures();
  m.doc() = "The C++ core of the memkv package; import memkv instead.";
  memkv::python::InitErrors(py::module_::import("memkv._errors"));
  m.attr("__version__") = std::string(memkv::LibraryVersion());
  BindBatchResult(m);
  BindCompletion(m);
  memkv::python::BindPutOptions(m);
  BindClient(m);
  m.def("client_options", &memkv::python::ClientOptionsToPython,
        "client_options() -> list[dict]\n\n"
        "Every client option, in the order docs/configuration.md lists them, as a dict: name (the\n"
        "keyword of Client, the YAML key), env (its MEMKV_* variable), type, default (as text; \"\" for\n"
        "none), allowed, doc (str), is_list, required (bool). Engine adapters accept each by name.");
}
