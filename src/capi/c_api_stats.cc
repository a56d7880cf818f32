// The C API's statistics, transport, version and log level names. ClientStats
// becomes memkv_stats_t, a struct that only grows at its end (struct_size),
// filled row by row from ClientStatsTable() (c_api_stats.h).
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "base/version.h"
#include "capi/c_api_internal.h"
#include "capi/c_api_stats.h"

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

int32_t TransportCode(std::string_view transport) {
  return transport == "rdma" ? MEMKV_TRANSPORT_RDMA : MEMKV_TRANSPORT_TCP;
}

int32_t RdmaStateCode(std::string_view state) {
  if (state == "active") return MEMKV_RDMA_ACTIVE;
  if (state == "fallback") return MEMKV_RDMA_FALLBACK;
  if (state == "no_device") return MEMKV_RDMA_NO_DEVICE;
  return MEMKV_RDMA_OFF;
}

// Copies `text` into a fixed field, cut to fit and always NUL-terminated.
void CopyText(std::string_view text, char (&field)[MEMKV_STATS_TEXT_BYTES]) {
  const size_t n = std::min(text.size(), sizeof(field) - 1);
  std::memcpy(field, text.data(), n);
  field[n] = '\0';
}

using T = memkv_stats_t;
constexpr CStatsField kFields[] = {
    {.name = "ops", .count = &T::ops},
    {.name = "bytes_sent", .count = &T::bytes_sent},
    {.name = "bytes_received", .count = &T::bytes_received},
    {.name = "checksum_failures", .count = &T::checksum_failures},
    {.name = "timeouts", .count = &T::timeouts},
    {.name = "connections_opened", .count = &T::connections_opened},
    {.name = "transport", .code = &T::transport, .encode = TransportCode},
    {.name = "rdma_state", .code = &T::rdma_state, .encode = RdmaStateCode},
    {.name = "rdma_ops", .count = &T::rdma_ops},
    {.name = "rdma_bytes", .count = &T::rdma_bytes},
    {.name = "rdma_zero_copy_ops", .count = &T::rdma_zero_copy_ops},
    {.name = "tcp_ops", .count = &T::tcp_ops},
    {.name = "tcp_bytes", .count = &T::tcp_bytes},
    {.name = "rdma_reissued", .count = &T::rdma_reissued},
    {.name = "fallbacks", .count = &T::fallbacks},
    {.name = "completion_errors", .by_status = &T::completion_errors},
    {.name = "fallback_reason", .text = &T::fallback_reason},
    {.name = "rdma_path", .text = &T::rdma_path},
    {.name = "put_options_dropped", .count = &T::put_options_dropped},
    {.name = "grace_lookups", .count = &T::grace_lookups},
    {.name = "grace_hits", .count = &T::grace_hits},
    {.name = "stores_shed", .count = &T::stores_shed},
    {.name = "placement_changes", .count = &T::placement_changes},
    {.name = "fallback_reads", .count = &T::fallback_reads},
    {.name = "fallback_writes", .count = &T::fallback_writes},
    {.name = "server_problems", .count = &T::server_problems},
    {.name = "lookups", .count = &T::lookups},
    {.name = "found", .count = &T::found},
    {.name = "fetched", .count = &T::fetched},
    {.name = "fetched_in_time", .count = &T::fetched_in_time},
    {.name = "fetched_late", .count = &T::fetched_late},
    {.name = "rdma_spare_puts", .count = &T::rdma_spare_puts},
};

const CStatsField* FindField(std::string_view name) {
  for (const CStatsField& field : kFields) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

}  // namespace

std::span<const CStatsField> CStatsFields() { return kFields; }

memkv_stats_t ToC(const ClientStats& s) {
  memkv_stats_t out{};
  out.struct_size = sizeof(out);
  for (const ClientStatInfo& row : ClientStatsTable()) {
    const CStatsField* field = FindField(row.name);
    if (field == nullptr) continue;  // not (yet) in the C struct
    switch (row.kind) {
      case ClientStatKind::kCount:
        if (field->count != nullptr) out.*(field->count) = s.*(row.count);
        break;
      case ClientStatKind::kText:
        if (field->text != nullptr) CopyText(s.*(row.text), out.*(field->text));
        if (field->code != nullptr) out.*(field->code) = field->encode(s.*(row.text));
        break;
      case ClientStatKind::kByStatus:
        if (field->by_status == nullptr) break;
        for (const auto& [wc_status, count] : s.*(row.by_status)) {
          (out.*(field->by_status))[std::clamp(wc_status, 0, MEMKV_STATS_COMPLETION_STATUSES - 1)] += count;
        }
        break;
    }
  }
  return out;
}

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

memkv_status_t memkv_report_restores(memkv_client_t* c, uint64_t in_time, uint64_t late) {
  return Call(__func__, {{"client", c}}, [&] {
    c->client->ReportRestores(in_time, late);
    return MEMKV_OK;
  });
}

const char* memkv_identity_tag(memkv_client_t* c) {
  if (c == nullptr) return "";
  return c->identity_tag.c_str();
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
