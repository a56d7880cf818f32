// The server's fact table as a whole: its rules, and /v1/status fields that
// show a family's sample naming one the family does emit.
#include <gtest/gtest.h>

#include <string>

#include "base/json.h"
#include "server/metrics_table.h"

namespace memkv::server {
namespace {

TEST(ServerFactTableTest, KeepsTheTableRules) {
  for (const std::string& problem : metrics::CheckFacts(metrics::FactInfos(ServerFactTable()))) {
    ADD_FAILURE() << problem;
  }
}

// A snapshot with everything a status field can depend on: drives, a fleet
// identity, RDMA up. Every field of the table then appears, so a row whose
// `.Status` names a sample its family never emits (a misspelt label value)
// fails here rather than silently leaving the field out.
TEST(ServerFactTableTest, EveryStatusFieldAppearsWithDrivesFleetAndRdma) {
  ServerMetrics cells;
  ServerSnapshot s;
  s.metrics = &cells;
  s.health.status = "healthy";
  s.storage_mode = "file";
  s.rdma_active = true;
  s.drives.emplace();
  s.drives->drives.resize(1);
  FleetState fleet(FleetIdentity{.id = "cache-7", .capacity_bytes = 1 << 30, .weight = 0, .source = "fleet.id"}, 0);
  s.fleet = &fleet;
  Result<JsonValue> json = ParseJson(ServerStatusJson(s));
  ASSERT_TRUE(json.ok()) << json.status().message();
  for (const StatusField& field : ServerStatusTable()) {
    const std::string_view section = metrics::StatusSection(field.path);
    const JsonValue* object = section.empty() ? &*json : json->Find(section);
    ASSERT_NE(object, nullptr) << field.path;
    EXPECT_NE(object->Find(metrics::StatusKey(field.path)), nullptr) << field.path << " missing";
  }
}

}  // namespace
}  // namespace memkv::server
