// memkv_stats_t against ClientStatsTable(): every C field is filled from the
// row of its name, and every field of the struct is one of them.
#include "capi/c_api_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

namespace memkv::capi {
namespace {

const ClientStatInfo* Row(std::string_view name) {
  for (const ClientStatInfo& row : ClientStatsTable()) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

TEST(CStatsFieldsTest, EachNamesARowOfItsKind) {
  for (const CStatsField& field : CStatsFields()) {
    const ClientStatInfo* row = Row(field.name);
    ASSERT_NE(row, nullptr) << field.name << ": no ClientStatsTable row of that name; the field would stay 0";
    const int members = (field.count != nullptr) + (field.text != nullptr) + (field.code != nullptr) +
                        (field.by_status != nullptr);
    EXPECT_EQ(members, 1) << field.name;
    EXPECT_EQ(field.code != nullptr, field.encode != nullptr) << field.name;
    const ClientStatKind kind = field.count != nullptr       ? ClientStatKind::kCount
                                : field.by_status != nullptr ? ClientStatKind::kByStatus
                                                             : ClientStatKind::kText;
    EXPECT_EQ(row->kind, kind) << field.name;
  }
}

// The fields tile the struct after struct_size: none is left unfilled.
TEST(CStatsFieldsTest, CoverEveryFieldOfTheStruct) {
  memkv_stats_t probe{};
  const auto* base = reinterpret_cast<const char*>(&probe);
  std::vector<std::pair<size_t, size_t>> spans;  // (offset, size)
  auto add = [&](const void* member, size_t size) {
    spans.emplace_back(static_cast<size_t>(static_cast<const char*>(member) - base), size);
  };
  for (const CStatsField& field : CStatsFields()) {
    if (field.count != nullptr) add(&(probe.*(field.count)), sizeof(uint64_t));
    if (field.text != nullptr) add(&(probe.*(field.text)), sizeof(probe.*(field.text)));
    if (field.code != nullptr) add(&(probe.*(field.code)), sizeof(int32_t));
    if (field.by_status != nullptr) add(&(probe.*(field.by_status)), sizeof(probe.*(field.by_status)));
  }
  std::sort(spans.begin(), spans.end());
  size_t next = offsetof(memkv_stats_t, ops);
  for (const auto& [offset, size] : spans) {
    EXPECT_EQ(offset, next) << "a field of memkv_stats_t at offset " << next << " is not in CStatsFields()";
    next = offset + size;
  }
  EXPECT_EQ(next, sizeof(memkv_stats_t));
}

TEST(CStatsFieldsTest, ToCCopiesEveryRow) {
  ClientStats s;
  uint64_t n = 0;
  for (const ClientStatInfo& row : ClientStatsTable()) {
    if (row.kind == ClientStatKind::kCount) s.*(row.count) = ++n * 1000;
  }
  s.transport = "rdma";
  s.rdma_state = "fallback";
  s.fallback_reason = std::string(MEMKV_STATS_TEXT_BYTES + 10, 'x');
  s.rdma_path = "mlx5_0 gid 3";
  s.completion_errors = {{5, 1}, {12, 2}, {40, 3}, {31, 4}};
  const memkv_stats_t c = ToC(s);
  EXPECT_EQ(c.struct_size, sizeof(memkv_stats_t));
  for (const CStatsField& field : CStatsFields()) {
    if (field.count != nullptr) {
      EXPECT_EQ(c.*(field.count), s.*(Row(field.name)->count)) << field.name;
    }
  }
  EXPECT_EQ(c.ops, s.ops);
  EXPECT_EQ(c.fallbacks, s.fallbacks);
  EXPECT_EQ(c.transport, MEMKV_TRANSPORT_RDMA);
  EXPECT_EQ(c.rdma_state, MEMKV_RDMA_FALLBACK);
  EXPECT_EQ(std::strlen(c.fallback_reason), size_t(MEMKV_STATS_TEXT_BYTES - 1));
  EXPECT_STREQ(c.rdma_path, "mlx5_0 gid 3");
  EXPECT_EQ(c.completion_errors[5], 1u);
  EXPECT_EQ(c.completion_errors[12], 2u);
  EXPECT_EQ(c.completion_errors[31], 7u);  // 31 and everything above
}

}  // namespace
}  // namespace memkv::capi
