// ExpiryIndex: soonest first, nothing due before its instant, re-arming
// moves a value, and the saturating arithmetic of ExpiryAfter.
#include "storage/policy/ttl/expiry_index.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage/policy/test_entry.h"

namespace memkv::storage::policy {
namespace {

using testing::MakeEntry;

TEST(ExpiryIndexTest, DueValuesComeSoonestFirstAndNothingBeforeItsInstant) {
  ExpiryIndex index;
  auto late = MakeEntry("late", 1);
  auto soon = MakeEntry("soon", 1);
  auto never = MakeEntry("never", 1);
  late->expires_at_ms = 300;
  soon->expires_at_ms = 100;
  index.OnLink(*late);
  index.OnLink(*soon);
  index.OnLink(*never);
  EXPECT_EQ(index.size(), 2u) << "a value without expiry is not indexed";
  EXPECT_EQ(index.NextDue(99), nullptr);
  EXPECT_EQ(index.NextDue(100), soon.get()) << "due at its instant";
  std::vector<std::string> due;
  index.ForEachDue(1000, [&](PolicyEntry& e) {
    due.emplace_back(e.stored_key);
    return true;
  });
  EXPECT_EQ(due, (std::vector<std::string>{"soon", "late"}));
  index.OnUnlink(*soon, Removal::kExpired);
  EXPECT_EQ(index.NextDue(1000), late.get());
  index.OnUnlink(*late, Removal::kOther);
  index.OnUnlink(*never, Removal::kOther);
  EXPECT_TRUE(index.empty());
}

TEST(ExpiryIndexTest, SetExpiryMovesAValueAndZeroTakesItOut) {
  ExpiryIndex index;
  auto a = MakeEntry("a", 1);
  a->expires_at_ms = 100;
  index.OnLink(*a);
  index.SetExpiry(*a, 500);
  EXPECT_EQ(index.NextDue(100), nullptr) << "re-armed past 100";
  EXPECT_EQ(index.NextDue(500), a.get());
  index.SetExpiry(*a, 0);
  EXPECT_TRUE(index.empty());
  index.SetExpiry(*a, 50);
  EXPECT_EQ(index.NextDue(60), a.get());
  index.OnUnlink(*a, Removal::kOther);
  EXPECT_TRUE(index.empty());
}

TEST(ExpiryIndexTest, ExpiryAfterSaturatesAndZeroMeansNever) {
  EXPECT_EQ(ExpiryAfter(1000, 0), 0);
  EXPECT_EQ(ExpiryAfter(1000, 5), 1005);
  EXPECT_EQ(ExpiryAfter(INT64_MAX - 1, 10), INT64_MAX);
  EXPECT_EQ(ExpiryAfter(-1, 10), INT64_MAX);
}

}  // namespace
}  // namespace memkv::storage::policy
