// RetentionPolicy: pin TTLs defaulted and clamped, the pin cap with a
// replaced pin's room given back, idle pinned units as readers come and go,
// and a hit re-arming a pin's TTL only where the tier asks for it.
#include "storage/policy/retention/retention_policy.h"

#include <gtest/gtest.h>

#include "storage/policy/test_entry.h"

namespace memkv::storage::policy {
namespace {

using testing::MakeEntry;

PutOptions Put(uint64_t ttl_ms, Retention retention = Retention::kNormal) {
  PutOptions o;
  o.ttl_ms = ttl_ms;
  o.retention = retention;
  return o;
}

RetentionOptions Options(bool rearm = true) {
  return RetentionOptions{.pinned_max_fraction = 0.5, .pin_ttl_ms = 1000, .pin_ttl_max_ms = 5000, .rearm_on_hit = rearm};
}

TEST(RetentionPolicyTest, PinTtlIsDefaultedAndClampedOthersAsGiven) {
  ExpiryIndex ttl;
  RetentionPolicy r(Options(), 100, 64, &ttl);
  EXPECT_EQ(r.AppliedTtlMs(Put(0, Retention::kPinned)), 1000u);
  EXPECT_EQ(r.AppliedTtlMs(Put(3000, Retention::kPinned)), 3000u);
  EXPECT_EQ(r.AppliedTtlMs(Put(9000, Retention::kPinned)), 5000u);
  EXPECT_EQ(r.AppliedTtlMs(Put(9000)), 9000u);
  EXPECT_EQ(r.AppliedTtlMs(Put(0)), 0u);
}

TEST(RetentionPolicyTest, TheCapCountsLinkedPinsAndAReplacedPinGivesItsRoomBack) {
  ExpiryIndex ttl;
  RetentionPolicy r(Options(), 100, 64, &ttl);  // cap: 50 units
  EXPECT_EQ(r.cap_units(), 50u);
  auto pin = MakeEntry("p", 40, Retention::kPinned);
  r.OnLink(*pin);
  EXPECT_EQ(r.retained_units(), 40u);
  EXPECT_EQ(r.pinned_bytes(), 40u * 64);
  EXPECT_EQ(r.pinned_values(), 1u);
  EXPECT_TRUE(r.PinRoom("put", 10, 0).ok());
  Status refused = r.PinRoom("CommitPut(key 'q')", 11, 0);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("CommitPut(key 'q'): pinning"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("memory.pinned_max_fraction 0.5"), std::string::npos) << refused.message();
  EXPECT_TRUE(r.PinRoom("put", 50, 40).ok()) << "replacing the pin of the same key";
  auto normal = MakeEntry("n", 30);
  r.OnLink(*normal);
  EXPECT_EQ(r.retained_units(), 40u) << "a normal value takes nothing of the cap";
  r.OnUnlink(*pin, Removal::kOther);
  EXPECT_EQ(r.retained_units(), 0u);
  EXPECT_EQ(r.pinned_values(), 0u);
}

TEST(RetentionPolicyTest, IdleUnitsAreThePinnedUnitsNoReaderHolds) {
  ExpiryIndex ttl;
  RetentionPolicy r(Options(), 100, 64, &ttl);
  auto pin = MakeEntry("p", 8, Retention::kPinned);
  r.OnLink(*pin);
  EXPECT_EQ(r.idle_units(), 8u);
  pin->pins = 1;
  r.OnReaders(*pin, true);
  EXPECT_EQ(r.idle_units(), 0u);
  r.OnUnlink(*pin, Removal::kOther);  // unlinked while read
  EXPECT_EQ(r.idle_units(), 0u);
  EXPECT_EQ(r.retained_units(), 0u);
}

TEST(RetentionPolicyTest, AHitReArmsAPinsTtlOnlyWhereTheTierAsks) {
  for (bool rearm : {true, false}) {
    ExpiryIndex ttl;
    RetentionPolicy r(Options(rearm), 100, 64, &ttl);
    auto pin = MakeEntry("p", 1, Retention::kPinned);
    pin->ttl_ms = 1000;
    pin->expires_at_ms = 1000;
    ttl.OnLink(*pin);
    r.OnLink(*pin);
    r.OnTouch(*pin, 800);
    EXPECT_EQ(pin->expires_at_ms, rearm ? 1800 : 1000) << "rearm " << rearm;
    r.Rearm(*pin, 900);
    EXPECT_EQ(pin->expires_at_ms, 1900) << "a prefix match re-arms either way";
    EXPECT_EQ(ttl.NextDue(1900), pin.get());
  }
}

TEST(RetentionPolicyTest, OptionsOutOfRangeAreRefusedNamingTheSetting) {
  EXPECT_TRUE(CheckRetentionOptions(Options(), "MemoryStore").ok());
  RetentionOptions zero_fraction = Options();
  zero_fraction.pinned_max_fraction = 0;
  Status zero = CheckRetentionOptions(zero_fraction, "MemoryStore");
  EXPECT_EQ(zero.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(zero.message().find("MemoryStore: pinned_max_fraction 0"), std::string::npos) << zero.message();
  RetentionOptions inverted = Options();
  inverted.pin_ttl_ms = 10;
  inverted.pin_ttl_max_ms = 5;
  EXPECT_FALSE(CheckRetentionOptions(inverted, "MemoryStore").ok());
}

}  // namespace
}  // namespace memkv::storage::policy
