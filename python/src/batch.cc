// memkv.Client's batch calls. A batch raises only for bad arguments or a
// closed client; what happened to each key is in the BatchOutcome.
#include <string>

#include "client.h"
#include "errors.h"
#include "put_options.h"

namespace memkv::python {
namespace {

// The items of `sequence` (one per key) as held buffers.
template <typename Byte>
std::vector<std::span<Byte>> BufferSpans(py::handle sequence, size_t count, Access access, HeldBuffers* held,
                                         std::string_view call, const char* what) {
  py::object items = FastSequence(sequence, call, {what});
  const size_t n = static_cast<size_t>(PySequence_Fast_GET_SIZE(items.ptr()));
  if (n != count) ThrowInvalidArgument(call, std::to_string(count) + " keys but " + std::to_string(n) + " " + what);
  std::vector<std::span<Byte>> spans(n);
  for (size_t i = 0; i < n; ++i) {
    spans[i] = held->Acquire(PySequence_Fast_GET_ITEM(items.ptr(), static_cast<Py_ssize_t>(i)), access, call,
                             {what, static_cast<Py_ssize_t>(i)});
  }
  return spans;
}

// (address, length) pairs given as a sequence of ints and an int or a
// sequence of ints.
template <typename Byte>
std::vector<std::span<Byte>> RawSpans(py::handle addresses, py::handle lengths, size_t count,
                                      std::string_view call) {
  py::object items = FastSequence(addresses, call, {"addresses"});
  const size_t n = static_cast<size_t>(PySequence_Fast_GET_SIZE(items.ptr()));
  if (n != count) ThrowInvalidArgument(call, std::to_string(count) + " keys but " + std::to_string(n) + " addresses");
  const std::vector<size_t> sizes = Lengths(lengths, count, call);
  std::vector<std::span<Byte>> spans(n);
  for (size_t i = 0; i < n; ++i) {
    const ArgName name{"addresses", static_cast<Py_ssize_t>(i)};
    spans[i] = RawSpan(SizeArg(PySequence_Fast_GET_ITEM(items.ptr(), static_cast<Py_ssize_t>(i)), call, name),
                       sizes[i], call, name);
  }
  return spans;
}

BatchOutcome OutcomeOf(Result<BatchResult> result, std::string_view call) {
  Check(result.status(), call);
  BatchOutcome out;
  out.statuses = std::move(result->statuses);
  out.present_prefix = result->present_prefix;
  return out;
}

}  // namespace

BatchOutcome PyClient::BatchPutSpans(const KeyList& keys, std::span<const std::span<const uint8_t>> values,
                                     const std::vector<PutOptions>& options, std::string_view call) {
  return OutcomeOf(Call([&](Client& c) -> Result<BatchResult> {
                     return options.empty() ? c.BatchPut(keys.views(), values)
                                            : c.BatchPutWith(keys.views(), values, options);
                   }),
                   call);
}

BatchOutcome PyClient::BatchGetIntoSpans(const KeyList& keys, std::span<const std::span<uint8_t>> buffers,
                                         std::string_view call) {
  std::vector<size_t> sizes;
  BatchOutcome out = OutcomeOf(
      Call([&](Client& c) -> Result<BatchResult> { return c.BatchGetInto(keys.views(), buffers, &sizes); }), call);
  out.has_sizes = true;
  out.sizes = std::move(sizes);
  return out;
}

BatchOutcome PyClient::BatchPut(py::handle keys, py::handle values, py::handle options) {
  constexpr std::string_view kCall = "memkv.Client.batch_put";
  const KeyList k(keys, kCall);
  HeldBuffers held(k.size());
  const auto spans = BufferSpans<const uint8_t>(values, k.size(), Access::kRead, &held, kCall, "values");
  return BatchPutSpans(k, spans, PutOptionsList(options, k.size(), kCall), kCall);
}

BatchOutcome PyClient::BatchPutPtr(py::handle keys, py::handle addresses, py::handle lengths, py::handle options) {
  constexpr std::string_view kCall = "memkv.Client.batch_put_ptr";
  const KeyList k(keys, kCall);
  const auto spans = RawSpans<const uint8_t>(addresses, lengths, k.size(), kCall);
  return BatchPutSpans(k, spans, PutOptionsList(options, k.size(), kCall), kCall);
}

BatchOutcome PyClient::BatchGetInto(py::handle keys, py::handle buffers) {
  constexpr std::string_view kCall = "memkv.Client.batch_get_into";
  const KeyList k(keys, kCall);
  HeldBuffers held(k.size());
  return BatchGetIntoSpans(k, BufferSpans<uint8_t>(buffers, k.size(), Access::kWrite, &held, kCall, "buffers"),
                           kCall);
}

BatchOutcome PyClient::BatchGetIntoPtr(py::handle keys, py::handle addresses, py::handle lengths) {
  constexpr std::string_view kCall = "memkv.Client.batch_get_into_ptr";
  const KeyList k(keys, kCall);
  return BatchGetIntoSpans(k, RawSpans<uint8_t>(addresses, lengths, k.size(), kCall), kCall);
}

BatchOutcome PyClient::BatchExists(py::handle keys) {
  constexpr std::string_view kCall = "memkv.Client.batch_exists";
  const KeyList k(keys, kCall);
  return OutcomeOf(Call([&](Client& c) -> Result<BatchResult> { return c.BatchExists(k.views()); }), kCall);
}

size_t PyClient::MatchPrefix(py::handle keys) {
  constexpr std::string_view kCall = "memkv.Client.match_prefix";
  const KeyList k(keys, kCall);
  Result<size_t> matched = Call([&](Client& c) { return c.MatchPrefix(k.views()); });
  Check(matched.status(), kCall);
  return *matched;
}

}  // namespace memkv::python
