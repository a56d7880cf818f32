// What a put says about its value besides its bytes (ValueAttrs) on the
// drives: the journal record's optional tail, kept across restarts; expired
// values as misses, deleted at open and by the sweep; eviction order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/checksum.h"
#include "base/clock.h"
#include "drive/format.h"
#include "drive/store_fixture.h"

namespace memkv::drive {
namespace {

ValueAttrs Attrs(int64_t expires_at_ms, Retention retention = Retention::kNormal) {
  ValueAttrs a;
  a.expires_at_ms = expires_at_ms;
  a.ttl_ms = expires_at_ms == 0 ? 0 : 1000;
  a.retention = retention;
  return a;
}

JournalRecord PutRecord() {
  JournalRecord r;
  r.type = RecordType::kPut;
  r.sequence = 7;
  r.generation = 3;
  r.value_bytes = 5000;
  r.value_checksum = 0x1234;
  r.key = "key";
  r.extents = {ExtentRef{.drive = 0, .unit = 10, .units = 2}};
  return r;
}

TEST(ValueAttrsRecord, APlainPutIsEncodedAsBeforeAttributesExisted) {
  JournalRecord r = PutRecord();
  std::vector<uint8_t> bytes;
  EncodeRecord(r, 99, &bytes);
  EXPECT_EQ(bytes.size(), kRecordHeadBytes + 8 + 16 + 8) << "head, padded key, one extent, checksum";
  EXPECT_EQ(bytes[5], 0) << "no flags: older binaries read it";
  JournalRecord out;
  size_t consumed = 0;
  uint64_t sum = 0;
  ASSERT_TRUE(DecodeRecord(bytes, 99, &out, &consumed, &sum));
  EXPECT_TRUE(out.attrs.empty());
}

TEST(ValueAttrsRecord, AttributesRoundTripAndDamageIsCaught) {
  JournalRecord r = PutRecord();
  r.attrs.expires_at_ms = 1'700'000'123'456;
  r.attrs.ttl_ms = 60'000;
  r.attrs.retention = Retention::kPinned;
  r.attrs.hash_kind = HashKind::kInt64;
  r.attrs.parent_key = "parent-key";
  r.attrs.block_hash = std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8);
  r.attrs.parent_hash = "ph";
  std::vector<uint8_t> bytes;
  EncodeRecord(r, 5, &bytes);
  EXPECT_EQ(bytes.size(), EncodedRecordBytes(r));
  EXPECT_EQ(bytes[5], 1);
  JournalRecord out;
  size_t consumed = 0;
  uint64_t sum = 0;
  ASSERT_TRUE(DecodeRecord(bytes, 5, &out, &consumed, &sum));
  EXPECT_EQ(consumed, bytes.size());
  EXPECT_EQ(out.attrs, r.attrs);
  EXPECT_EQ(out.key, r.key);
  EXPECT_EQ(out.extents, r.extents);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    std::vector<uint8_t> bad = bytes;
    bad[i] ^= 0x10;
    EXPECT_FALSE(DecodeRecord(bad, 5, &out, &consumed, &sum)) << "byte " << i;
  }
}

class ExtentStoreAttrs : public ::testing::Test {
 protected:
  void SetUp() override {
    fx_.clock = &clock_;
    ASSERT_TRUE(fx_.Format().ok());
    ASSERT_TRUE(fx_.Open().ok());
  }
  Status PutWith(const std::string& key, const ValueAttrs& attrs) {
    const std::vector<uint8_t> v = Pattern(10'000, uint32_t(key.size()) + 1);
    const iovec one{const_cast<uint8_t*>(v.data()), v.size()};
    return fx_.store->PutIov(key, std::span<const iovec>(&one, 1), Checksum(v.data(), v.size()), &attrs);
  }
  ExtentStore& store() { return *fx_.store; }

  ManualRealtimeClock clock_;
  StoreFixture fx_{2};
};

TEST_F(ExtentStoreAttrs, ARestartKeepsTtlAndRetentionAndAnExpiryPassedWhileClosedFreesTheValue) {
  const int64_t now = clock_.NowMillis();
  ASSERT_TRUE(PutWith("brief", Attrs(now + 1000)).ok());
  ValueAttrs pinned = Attrs(now + 5000, Retention::kPinned);
  pinned.parent_key = "brief";
  pinned.block_hash = "bh";
  ASSERT_TRUE(PutWith("pin", pinned).ok());
  ASSERT_TRUE(store().Checkpoint().ok());  // the tail survives a checkpoint too
  ASSERT_TRUE(PutWith("later", Attrs(0, Retention::kEvictFirst)).ok());

  ASSERT_TRUE(fx_.Open().ok());
  Result<ValueInfo> brief = store().Stat("brief");
  ASSERT_TRUE(brief.ok()) << brief.status().ToString();
  EXPECT_EQ(brief->attrs.expires_at_ms, now + 1000);
  Result<ValueInfo> pin = store().Stat("pin");
  ASSERT_TRUE(pin.ok());
  EXPECT_EQ(pin->attrs, pinned);
  EXPECT_EQ(store().Stat("later")->attrs.retention, Retention::kEvictFirst);
  EXPECT_TRUE(store().Get("brief").ok());

  clock_.Advance(1000);
  EXPECT_FALSE(store().Exists("brief"));
  EXPECT_FALSE(store().ValueSize("brief").has_value());
  EXPECT_EQ(store().Get("brief").status().code(), StatusCode::kNotFound);
  const uint64_t used = store().Stats().used_bytes();

  ASSERT_TRUE(fx_.Open().ok());  // deletes it at open
  EXPECT_EQ(store().Stats().expired, 1u);
  EXPECT_EQ(store().Stats().keys, 2u);
  EXPECT_LT(store().Stats().used_bytes(), used);
  EXPECT_TRUE(store().Exists("pin"));
}

TEST_F(ExtentStoreAttrs, TheSweepDeletesExpiredValuesAndTellsWhatTheyWere) {
  const int64_t now = clock_.NowMillis();
  ASSERT_TRUE(PutWith("a", Attrs(now + 10)).ok());
  ASSERT_TRUE(PutWith("b", Attrs(now + 20)).ok());
  ASSERT_TRUE(PutWith("c", Attrs(0)).ok());
  EXPECT_TRUE(store().SweepExpired(10).empty());
  clock_.Advance(20);
  std::vector<RemovedValue> removed = store().SweepExpired(1);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_TRUE(removed[0].expired);
  EXPECT_EQ(removed[0].size_bytes, 10'000u);
  EXPECT_EQ(store().SweepExpired(10).size(), 1u);
  EXPECT_EQ(store().Stats().keys, 1u);
}

TEST_F(ExtentStoreAttrs, EvictionTakesExpiredThenEvictFirstThenTheColdestAndNeverARunningPin) {
  const int64_t now = clock_.NowMillis();
  ASSERT_TRUE(PutWith("cold", Attrs(0)).ok());
  ASSERT_TRUE(PutWith("pin", Attrs(now + 100'000, Retention::kPinned)).ok());
  ASSERT_TRUE(PutWith("first", Attrs(0, Retention::kEvictFirst)).ok());
  ASSERT_TRUE(PutWith("gone", Attrs(now + 5)).ok());
  ASSERT_TRUE(PutWith("warm", Attrs(0)).ok());
  clock_.Advance(5);
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) {
    Result<std::vector<RemovedValue>> evicted = store().EvictColdestValues(1);
    ASSERT_TRUE(evicted.ok()) << i << ": " << evicted.status().ToString();
    ASSERT_EQ(evicted->size(), 1u);
    order.push_back((*evicted)[0].key);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"gone", "first", "cold", "warm"}));
  EXPECT_EQ(store().EvictColdestValues(1).status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(store().Exists("pin"));
  EXPECT_EQ(store().Stats().expired, 1u);
  EXPECT_EQ(store().Stats().evictions, 3u);
}

}  // namespace
}  // namespace memkv::drive
