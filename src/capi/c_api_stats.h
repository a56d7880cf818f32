// memkv_stats_t described against ClientStatsTable() (memkv/client.h):
// memkv_client_stats fills the struct by walking the table and writing each
// row into the C field of the same name. The struct's layout is the ABI and
// never changes; a counter the C API should carry is a field appended at the
// struct's end and one entry below. capi_stats_test checks that every entry
// names a row of the table and that the entries cover every field.
#ifndef MEMKV_CAPI_C_API_STATS_H_
#define MEMKV_CAPI_C_API_STATS_H_

#include <span>
#include <string_view>

#include "memkv/client.h"
#include "memkv/memkv.h"

namespace memkv::capi {

// The C fields, each by the name of its ClientStatsTable() row. A row's kind
// picks the member: counts are uint64_t, texts are fixed char arrays (cut to
// fit), except transport and rdma_state, which C carries as codes
// (MEMKV_TRANSPORT_*, MEMKV_RDMA_*); completion errors are an array by
// ibv_wc_status.
struct CStatsField {
  std::string_view name;
  uint64_t memkv_stats_t::*count = nullptr;
  char (memkv_stats_t::*text)[MEMKV_STATS_TEXT_BYTES] = nullptr;
  int32_t memkv_stats_t::*code = nullptr;
  int32_t (*encode)(std::string_view text) = nullptr;  // with `code`
  uint64_t (memkv_stats_t::*by_status)[MEMKV_STATS_COMPLETION_STATUSES] = nullptr;
};
std::span<const CStatsField> CStatsFields();

// The struct of `stats`, every field filled from its row.
memkv_stats_t ToC(const ClientStats& stats);

}  // namespace memkv::capi

#endif  // MEMKV_CAPI_C_API_STATS_H_
