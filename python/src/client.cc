// memkv.Client: construction, single-key calls, stats, memory registration
// and close. Batches are in batch.cc.
#include "client.h"

#include <mutex>
#include <string>
#include <utility>

#include "errors.h"
#include "options.h"

namespace memkv::python {
namespace {

// Runs a Client factory without the GIL (opening RDMA devices or the
// Prometheus listener may take a while) and wraps what it made.
template <typename Factory>
std::unique_ptr<PyClient> Created(Factory factory, std::string_view call, std::optional<ClientOptions> options) {
  Result<std::unique_ptr<Client>> client = [&] {
    py::gil_scoped_release nogil;
    return factory();
  }();
  if (!client.ok()) ThrowStatus(client.status(), call);
  if (options) options->log_callback = nullptr;
  return std::make_unique<PyClient>(std::move(client).value(), std::move(options));
}

}  // namespace

std::unique_ptr<PyClient> PyClient::Create(py::handle servers, py::handle auth_key, const py::kwargs& options) {
  const ClientOptions parsed = OptionsFromPython(servers, auth_key, options);
  return Created([&] { return Client::Create(parsed); }, "memkv.Client", parsed);
}

std::unique_ptr<PyClient> PyClient::FromEnvironment() {
  return Created([] { return Client::CreateFromEnvironment(); }, "memkv.Client.from_env", std::nullopt);
}

void PyClient::PutSpan(py::handle key, std::span<const uint8_t> value, const PutOptions& options,
                       std::string_view call) {
  const std::string_view k = KeyView(key, call, {"key"});
  // A plain put stays a plain put, so a server that predates options sees no difference.
  Check(Call([&](Client& c) { return options.empty() ? c.Put(k, value) : c.PutWith(k, value, options); }), call);
}

void PyClient::Put(py::handle key, py::handle value, const PutOptions& options) {
  constexpr std::string_view kCall = "memkv.Client.put";
  HeldBuffers held(1);
  PutSpan(key, held.Acquire(value, Access::kRead, kCall, {"value"}), options, kCall);
}

void PyClient::PutPtr(py::handle key, py::handle address, py::handle length, const PutOptions& options) {
  constexpr std::string_view kCall = "memkv.Client.put_ptr";
  PutSpan(key, RawSpan(SizeArg(address, kCall, {"address"}), SizeArg(length, kCall, {"length"}), kCall, {"address"}),
          options, kCall);
}

py::object PyClient::Get(py::handle key) {
  constexpr std::string_view kCall = "memkv.Client.get";
  const std::string_view k = KeyView(key, kCall, {"key"});
  Result<std::vector<uint8_t>> value = Call([&](Client& c) { return c.Get(k); });
  if (value.status().code() == StatusCode::kNotFound) return py::none();
  Check(value.status(), kCall);
  return py::bytes(reinterpret_cast<const char*>(value->data()), value->size());
}

py::object PyClient::GetIntoSpan(py::handle key, std::span<uint8_t> buffer, std::string_view call) {
  const std::string_view k = KeyView(key, call, {"key"});
  Result<size_t> size = Call([&](Client& c) { return c.GetInto(k, buffer); });
  if (size.status().code() == StatusCode::kNotFound) return py::none();
  Check(size.status(), call);
  return py::int_(*size);
}

py::object PyClient::GetInto(py::handle key, py::handle buffer) {
  constexpr std::string_view kCall = "memkv.Client.get_into";
  HeldBuffers held(1);
  return GetIntoSpan(key, held.Acquire(buffer, Access::kWrite, kCall, {"buffer"}), kCall);
}

py::object PyClient::GetIntoPtr(py::handle key, py::handle address, py::handle length) {
  constexpr std::string_view kCall = "memkv.Client.get_into_ptr";
  return GetIntoSpan(
      key, RawSpan(SizeArg(address, kCall, {"address"}), SizeArg(length, kCall, {"length"}), kCall, {"address"}),
      kCall);
}

bool PyClient::Delete(py::handle key) {
  constexpr std::string_view kCall = "memkv.Client.delete";
  const std::string_view k = KeyView(key, kCall, {"key"});
  const Status status = Call([&](Client& c) { return c.Delete(k); });
  if (status.code() == StatusCode::kNotFound) return false;
  Check(status, kCall);
  return true;
}

py::tuple PyClient::ListKeys(py::handle prefix, py::handle cursor, py::handle page_size) {
  constexpr std::string_view kCall = "memkv.Client.list_keys";
  const std::string_view p = KeyView(prefix, kCall, {"prefix"});
  const std::string_view c = cursor.is_none() ? std::string_view() : KeyView(cursor, kCall, {"cursor"});
  const size_t n = SizeArg(page_size, kCall, {"page_size"});
  Result<KeyListPage> page = Call([&](Client& client) { return client.ListKeys(p, c, n); });
  Check(page.status(), kCall);
  py::list keys;
  for (const std::string& key : page->keys) keys.append(py::bytes(key));
  py::object next = page->next_cursor.empty() ? py::object(py::none()) : py::object(py::bytes(page->next_cursor));
  return py::make_tuple(keys, next);
}

py::object PyClient::ValueSize(py::handle key) {
  constexpr std::string_view kCall = "memkv.Client.value_size";
  const std::string_view k = KeyView(key, kCall, {"key"});
  Result<uint64_t> size = Call([&](Client& c) { return c.ValueSize(k); });
  if (size.status().code() == StatusCode::kNotFound) return py::none();
  Check(size.status(), kCall);
  return py::int_(*size);
}

bool PyClient::Exists(py::handle key) {
  constexpr std::string_view kCall = "memkv.Client.exists";
  const std::string_view k = KeyView(key, kCall, {"key"});
  Result<bool> present = Call([&](Client& c) { return c.Exists(k); });
  Check(present.status(), kCall);
  return *present;
}

std::string PyClient::IdentityTag() {
  Result<std::string> tag = Call([](Client& c) -> Result<std::string> { return c.IdentityTag(); });
  Check(tag.status(), "memkv.Client.identity_tag");
  return *tag;
}

void PyClient::ReportRestores(uint64_t in_time, uint64_t late) {
  Check(Call([&](Client& c) {
          c.ReportRestores(in_time, late);
          return Status::Ok();
        }),
        "memkv.Client.report_restores");
}

size_t PyClient::ServerFor(py::handle key) {
  constexpr std::string_view kCall = "memkv.Client.server_for";
  const std::string_view k = KeyView(key, kCall, {"key"});
  Result<size_t> server = Call([&](Client& c) -> Result<size_t> { return c.ServerFor(k); });
  Check(server.status(), kCall);
  return *server;
}

py::dict PyClient::Stats() {
  Result<ClientStats> stats = Call([](Client& c) -> Result<ClientStats> { return c.Stats(); });
  Check(stats.status(), "memkv.Client.stats");
  // Every row of ClientStatsTable(), by name: the counts, then the texts,
  // then the maps by ibv_wc_status.
  py::dict d;
  for (ClientStatKind kind : {ClientStatKind::kCount, ClientStatKind::kText, ClientStatKind::kByStatus}) {
    for (const ClientStatInfo& row : ClientStatsTable()) {
      if (row.kind != kind) continue;
      const py::str name(row.name.data(), row.name.size());
      switch (row.kind) {
        case ClientStatKind::kCount: d[name] = (*stats).*(row.count); break;
        case ClientStatKind::kText: d[name] = Utf8Lossy((*stats).*(row.text)); break;
        case ClientStatKind::kByStatus: {
          py::dict by_status;
          for (const auto& [wc_status, count] : (*stats).*(row.by_status)) by_status[py::int_(wc_status)] = count;
          d[name] = by_status;
          break;
        }
      }
    }
  }
  return d;
}

py::list PyClient::Servers() {
  Result<std::vector<ServerView>> views =
      Call([](Client& c) -> Result<std::vector<ServerView>> { return c.Servers(); });
  Check(views.status(), "memkv.Client.servers");
  py::list out;
  for (const ServerView& v : *views) {
    py::dict d;
    d["name"] = Utf8Lossy(v.name);
    d["source"] = Utf8Lossy(v.source);
    d["id"] = Utf8Lossy(v.id);
    d["weight"] = v.weight;
    d["share"] = v.share;
    d["state"] = Utf8Lossy(v.state);
    d["detail"] = Utf8Lossy(v.detail);
    out.append(d);
  }
  return out;
}

py::dict PyClient::Options() const {
  if (!options_) {
    ThrowStatus(FailedPrecondition("a client made by from_env() does not keep its options (MEMKV_CONFIG and the "
                                   "MEMKV_* variables gave them)"),
                "memkv.Client.options");
  }
  return OptionTextsToPython(*options_);
}

uintptr_t PyClient::RegisterMemory(py::handle region, py::handle length) {
  constexpr std::string_view kCall = "memkv.Client.register_memory";
  std::unique_ptr<HeldBuffers> held;
  std::span<uint8_t> span;
  if (length.is_none()) {
    held = std::make_unique<HeldBuffers>(1);
    span = held->Acquire(region, Access::kRead, kCall, {"region"});
  } else {
    span = RawSpan(SizeArg(region, kCall, {"region"}), SizeArg(length, kCall, {"length"}), kCall, {"region"});
  }
  Check(Call([&](Client& c) { return c.RegisterMemory(span); }), kCall);
  const uintptr_t base = reinterpret_cast<uintptr_t>(span.data());
  if (held != nullptr) registered_[base] = std::move(held);
  return base;
}

void PyClient::UnregisterMemory(py::handle region) {
  constexpr std::string_view kCall = "memkv.Client.unregister_memory";
  uintptr_t base = 0;
  if (PyObject_CheckBuffer(region.ptr())) {
    HeldBuffers held(1);
    base = reinterpret_cast<uintptr_t>(held.Acquire(region, Access::kRead, kCall, {"region"}).data());
  } else {
    base = SizeArg(region, kCall, {"region"});
  }
  Check(Call([&](Client& c) { return c.UnregisterMemory(reinterpret_cast<void*>(base)); }), kCall);
  registered_.erase(base);
}

void PyClient::Close() {
  closed_.store(true);
  // Released below with the GIL held, once nothing can touch them.
  std::unordered_map<uint64_t, std::unique_ptr<Submission>> held;
  {
    // Without the GIL: calls in flight may need it (a log callback) to finish,
    // and the client may log while it is torn down.
    py::gil_scoped_release nogil;
    std::unique_lock lock(mu_);
    {
      std::lock_guard<std::mutex> async_lock(async_mu_);
      queue_.reset();  // cancels what has not started, waits for what runs
      held.swap(submissions_);
    }
    client_.reset();
  }
  registered_.clear();  // after the client: its NIC no longer touches them
}

bool PyClient::closed() const { return closed_.load(); }

}  // namespace memkv::python
