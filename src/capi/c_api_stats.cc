// The C API's statistics, transport, version and log level names. ClientStats
// becomes memkv_stats_t, a struct that only grows at its end (struct_size).
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "base/version.h"
#include "capi/c_api_internal.h"

// The header's version macros are written by hand; this keeps them equal to
// project(VERSION) in CMakeLists.txt, which the library reports.
static_assert(std::string_view(MEMKV_VERSION_STRING) == std::string_view(memkv::kMemkvVersion),
              "update MEMKV_VERSION_MAJOR/MINOR/PATCH in include/memkv/memkv.h to the project version");
static_assert(MEMKV_STATS_MIN_SIZE <= sizeof(memkv_stats_t));
static_assert(MEMKV_LOG_DEBUG == static_cast<int>(memkv::ClientLogLevel::kDebug) &&
              MEMKV_LOG_INFO == static_cast<int>(memkv::ClientLogLevel::kInfo) &&
              MEMKV_LOG_WARN == static_cast<int>(memkv::ClientLogLevel::kWarn) &&
              MEMKV_LOG_ERROR == static_cast<int>(memkv::ClientLogLevel::kError) &&
              MEMKV_LOG_OFF == static_cast<int>(memkv::ClientLogLevel::kOff));

namespace memkv::capi {
namespace {

int32_t RdmaState(std::string_view state) {
  if (state == "active") return MEMKV_RDMA_ACTIVE;
  if (state == "fallback") return MEMKV_RDMA_FALLBACK;
  if (state == "no_device") return MEMKV_RDMA_NO_DEVICE;
  return MEMKV_RDMA_OFF;
}

// Copies `text` into a fixed field, cut to fit and always NUL-terminated.
template <size_t N>
void CopyText(std::string_view text, char (&field)[N]) {
  const size_t n = std::min(text.size(), N - 1);
  std::memcpy(field, text.data(), n);
  field[n] = '\0';
}

memkv_stats_t ToC(const ClientStats& s) {
  memkv_stats_t out{};
  out.struct_size = sizeof(out);
  out.ops = s.ops;
  out.bytes_sent = s.bytes_sent;
  out.bytes_received = s.bytes_received;
  out.checksum_failures = s.checksum_failures;
  out.timeouts = s.timeouts;
  out.connections_opened = s.connections_opened;
  out.transport = s.transport == "rdma" ? MEMKV_TRANSPORT_RDMA : MEMKV_TRANSPORT_TCP;
  out.rdma_state = RdmaState(s.rdma_state);
  out.rdma_ops = s.rdma_ops;
  out.rdma_bytes = s.rdma_bytes;
  out.rdma_zero_copy_ops = s.rdma_zero_copy_ops;
  out.tcp_ops = s.tcp_ops;
  out.tcp_bytes = s.tcp_bytes;
  out.rdma_reissued = s.rdma_reissued;
  out.fallbacks = s.fallbacks;
  for (const auto& [wc_status, count] : s.completion_errors) {
    out.completion_errors[std::clamp(wc_status, 0, MEMKV_STATS_COMPLETION_STATUSES - 1)] += count;
  }
  CopyText(s.fallback_reason, out.fallback_reason);
  CopyText(s.rdma_path, out.rdma_path);
  return out;
}

}  // namespace
}  // namespace memkv::capi

using memkv::capi::Call;
using memkv::capi::CallOr;
using memkv::capi::Fail;

extern "C" {

memkv_status_t memkv_client_stats(memkv_client_t* c, memkv_stats_t* stats) {
  return Call(__func__, {{"client", c}, {"stats", stats}}, [&] {
    const size_t caller_size = stats->struct_size;
    if (caller_size < MEMKV_STATS_MIN_SIZE) {
      return Fail(memkv::InvalidArgument("memkv_client_stats: stats->struct_size " + std::to_string(caller_size) +
                                         " is below MEMKV_STATS_MIN_SIZE " + std::to_string(MEMKV_STATS_MIN_SIZE) +
                                         "; set it to sizeof(memkv_stats_t)"));
    }
    const memkv_stats_t full = memkv::capi::ToC(c->client->Stats());
    // A caller built with a newer header has a longer struct: fill what this
    // library knows, zero the rest, and say how much was filled.
    const size_t filled = std::min(caller_size, sizeof(full));
    std::memcpy(stats, &full, filled);
    std::memset(reinterpret_cast<char*>(stats) + filled, 0, caller_size - filled);
    stats->struct_size = filled;
    return MEMKV_OK;
  });
}

const char* memkv_transport(memkv_client_t* c) {
  if (c == nullptr) return "";
  return CallOr<const char*>("", [c] { return c->client->Stats().transport == "rdma" ? "rdma" : "tcp"; });
}

const char* memkv_version(void) {
  // A view of a string literal: NUL-terminated and static.
  return memkv::LibraryVersion().data();
}

uint32_t memkv_version_number(void) { return MEMKV_VERSION_NUMBER; }

const char* memkv_log_level_name(int level) {
  if (level < MEMKV_LOG_DEBUG || level > MEMKV_LOG_OFF) return "unknown";
  return memkv::ClientLogLevelName(static_cast<memkv::ClientLogLevel>(level)).data();
}

}  // extern "C"
