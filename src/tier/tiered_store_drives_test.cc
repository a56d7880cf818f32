// TieredStore with drives: the DRAM pool in front of a real ExtentStore on
// two files. Write-through, reads of values only the drives hold (promoted or
// not), drive eviction when full, deletes from both tiers, and completions
// that come back to the caller's loop.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "drive/test_util.h"
#include "tier/tier_test_util.h"

namespace memkv::tier {
namespace {

using drive::Pattern;

constexpr uint64_t kPoolBytes = 4 << 20;
constexpr size_t kValueBytes = 48 << 10;  // one extent

std::vector<uint8_t> ValueOf(int i) { return Pattern(kValueBytes, 1000 + i); }

// What DRAM eviction does to a value: its DRAM copy goes, the drives keep it.
void DropFromDram(TieredStore& store, const std::string& key) {
  ASSERT_TRUE(store.memory().Delete(key).ok()) << key;
}

TEST(TieredStoreDrivesTest, APutCompletesOnTheCallersLoopOnceItIsOnTheDrives) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  const std::vector<uint8_t> bytes = Pattern(150'000, 1);  // three extents, striped
  Result<storage::PendingPut> put = store.Reserve(bytes.size());
  ASSERT_TRUE(put.ok());
  CopyInto(*put, bytes);
  std::optional<Status> result;
  std::thread::id ran_on;
  const Completion c = store.Commit(std::move(put).value(), "k", Checksum(bytes.data(), bytes.size()), h.loop().reply(),
                                    [&](Status s) {
                                      ran_on = std::this_thread::get_id();
                                      result = std::move(s);
                                    });
  EXPECT_EQ(c, Completion::kPending);
  ASSERT_TRUE(h.loop().RunUntil([&] { return result.has_value(); }));
  EXPECT_TRUE(result->ok()) << result->ToString();
  EXPECT_EQ(ran_on, std::this_thread::get_id()) << "completions run on the loop that takes them, not an I/O thread";
  EXPECT_TRUE(store.memory().Exists("k")) << "published in DRAM after the drives";

  drive::ExtentStore& drives = h.ReopenDrives();
  Result<std::vector<uint8_t>> on_disk = drives.Get("k");
  ASSERT_TRUE(on_disk.ok()) << on_disk.status().ToString();
  EXPECT_EQ(*on_disk, bytes);
}

TEST(TieredStoreDrivesTest, HitsAndMissesInBothTiersCompleteInlineOnlyDriveReadsWait) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  ASSERT_TRUE(PutNow(store, h.loop(), "hot", ValueOf(1)).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "cold", ValueOf(2)).ok());
  DropFromDram(store, "cold");

  Completion how;
  Result<StoredValue> hot = GetNow(store, h.loop(), "hot", ReadNeed::kBytes, &how);
  EXPECT_EQ(how, Completion::kInline);
  ASSERT_TRUE(hot.ok());
  EXPECT_EQ(BytesOf(*hot), ValueOf(1));

  EXPECT_EQ(GetNow(store, h.loop(), "nowhere", ReadNeed::kBytes, &how).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(how, Completion::kInline) << "the drive index says no without I/O";

  Result<StoredValue> cold = GetNow(store, h.loop(), "cold", ReadNeed::kBytes, &how);
  EXPECT_EQ(how, Completion::kPending);
  ASSERT_TRUE(cold.ok());
  EXPECT_EQ(BytesOf(*cold), ValueOf(2));
}

TEST(TieredStoreDrivesTest, AValueOnlyOnTheDrivesIsReadBackAndPromoted) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  const std::vector<uint8_t> bytes = Pattern(200'000, 5);
  ASSERT_TRUE(PutNow(store, h.loop(), "k", bytes).ok());
  DropFromDram(store, "k");
  EXPECT_TRUE(store.Exists("k"));

  Completion how;
  Result<StoredValue> v = GetNow(store, h.loop(), "k", ReadNeed::kBytes, &how);
  EXPECT_EQ(how, Completion::kPending);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->pinned()) << "promoted, and served from the pool";
  EXPECT_EQ(BytesOf(*v), bytes);
  EXPECT_EQ(v->checksum(), Checksum(bytes.data(), bytes.size()));
  EXPECT_TRUE(store.memory().Exists("k"));
  EXPECT_EQ(store.Counters().drive_hits, 1u);
  EXPECT_EQ(store.Counters().promotions, 1u);

  Result<StoredValue> again = GetNow(store, h.loop(), "k", ReadNeed::kBytes, &how);
  EXPECT_EQ(how, Completion::kInline) << "the next get is a DRAM hit";
  EXPECT_EQ(store.Counters().drive_hits, 1u);
}

// A get sizes its read from the drive index before the key's lock is taken;
// a put of another size may run in between. With one I/O thread the put,
// submitted first, runs first: the get must notice the size changed and
// return the new value whole, never old-sized room holding new bytes.
TEST(TieredStoreDrivesTest, AGetRacingAPutOfAnotherSizeReturnsTheNewValueWhole) {
  for (const bool promote : {true, false}) {
    for (const size_t new_size : {size_t(30'000), size_t(170'000)}) {
      SCOPED_TRACE(std::string(promote ? "promoted" : "not promoted") + ", new size " + std::to_string(new_size));
      TierHarness h(kPoolBytes, /*with_drives=*/true, TieredStoreOptions{.io_threads = 1, .promote_on_read = promote});
      TieredStore& store = h.store();
      ASSERT_TRUE(PutNow(store, h.loop(), "k", Pattern(100'000, 1)).ok());
      DropFromDram(store, "k");

      const std::vector<uint8_t> bytes = Pattern(new_size, 2);
      Result<storage::PendingPut> put = store.Reserve(bytes.size());
      ASSERT_TRUE(put.ok());
      CopyInto(*put, bytes);
      std::optional<Status> committed;
      store.Commit(std::move(put).value(), "k", Checksum(bytes.data(), bytes.size()), h.loop().reply(),
                   [&](Status s) { committed = std::move(s); });
      Result<StoredValue> got = GetNow(store, h.loop(), "k");
      ASSERT_TRUE(h.loop().RunUntil([&] { return committed.has_value(); }));
      ASSERT_TRUE(committed->ok()) << committed->ToString();
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->size(), new_size);
      EXPECT_EQ(BytesOf(*got), bytes);
      EXPECT_EQ(got->checksum(), Checksum(bytes.data(), bytes.size()));
      got = StoredValue();
      DropFromDram(store, "k");
      EXPECT_EQ(*GetBytes(store, h.loop(), "k"), bytes);
    }
  }
}

TEST(TieredStoreDrivesTest, WithoutPromotionADriveValueIsServedFromItsOwnBufferAndDramIsLeftAlone) {
  TierHarness h(kPoolBytes, /*with_drives=*/true, TieredStoreOptions{.io_threads = 2, .promote_on_read = false});
  TieredStore& store = h.store();
  const std::vector<uint8_t> bytes = Pattern(100'000, 6);
  ASSERT_TRUE(PutNow(store, h.loop(), "k", bytes).ok());
  DropFromDram(store, "k");

  for (int i = 0; i < 2; ++i) {
    Result<StoredValue> v = GetNow(store, h.loop(), "k");
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_FALSE(v->pinned());
    EXPECT_EQ(BytesOf(*v), bytes);
    EXPECT_EQ(v->checksum(), Checksum(bytes.data(), bytes.size()));
    EXPECT_FALSE(store.memory().Exists("k"));
  }
  EXPECT_EQ(store.Counters().drive_hits, 2u);
  EXPECT_EQ(store.Counters().promotions, 0u);

  // An RDMA grant needs a pool pin: that read promotes regardless.
  Result<StoredValue> pin = GetNow(store, h.loop(), "k", ReadNeed::kDramPin);
  ASSERT_TRUE(pin.ok()) << pin.status().ToString();
  EXPECT_TRUE(pin->pinned());
  EXPECT_EQ(BytesOf(*pin), bytes);
  EXPECT_TRUE(store.memory().Exists("k"));
  EXPECT_EQ(store.Counters().promotions, 1u);
}

TEST(TieredStoreDrivesTest, WithThePoolAllPinnedADriveValueIsStillServedButNotGrantedForRdma) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  ASSERT_TRUE(PutNow(store, h.loop(), "cold", ValueOf(0)).ok());
  DropFromDram(store, "cold");
  // Readers pin value after value until the pool has no room left.
  std::vector<StoredValue> readers;
  for (int i = 1; store.Reserve(kValueBytes).ok(); ++i) {
    ASSERT_LT(i, 1000) << "the pool never filled";
    const std::string key = "pinned/" + std::to_string(i);
    ASSERT_TRUE(PutNow(store, h.loop(), key, ValueOf(i)).ok());
    Result<StoredValue> v = GetNow(store, h.loop(), key);
    if (v.ok()) readers.push_back(std::move(v).value());
  }
  Result<StoredValue> pin = GetNow(store, h.loop(), "cold", ReadNeed::kDramPin);
  EXPECT_EQ(pin.status().code(), StatusCode::kResourceExhausted) << pin.status().ToString();
  Result<StoredValue> bytes = GetNow(store, h.loop(), "cold", ReadNeed::kBytes);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_FALSE(bytes->pinned());
  EXPECT_EQ(BytesOf(*bytes), ValueOf(0));
}

// Drives full: the coldest values on the drives make room, so puts keep
// succeeding (DRAM -> drive -> gone); one DRAM holds is taken last.
TEST(TieredStoreDrivesTest, APutOnFullDrivesEvictsTheirColdestValuesAndSparesWhatDramHolds) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  uint64_t usable_bytes = 0;
  const drive::ExtentStoreStats drives = *store.DrivesStats();
  for (const drive::DriveStats& d : drives.drives) usable_bytes += d.usable_bytes;
  // Well past what the drives hold, in case each value costs less than a
  // value's size of them.
  const int most = static_cast<int>(4 * usable_bytes / kValueBytes);

  // The first value written is the coldest on the drives, but a reader holds
  // it in DRAM for the whole test.
  ASSERT_TRUE(PutNow(store, h.loop(), "v/0", ValueOf(0)).ok());
  Result<StoredValue> held = GetNow(store, h.loop(), "v/0");
  ASSERT_TRUE(held.ok() && held->pinned());
  int values = 1;
  for (; store.Counters().drive_evictions < 8; ++values) {
    ASSERT_LT(values, most) << "the drives never filled";
    Status s = PutNow(store, h.loop(), "v/" + std::to_string(values), ValueOf(values));
    ASSERT_TRUE(s.ok()) << values << ": " << s.ToString();
  }
  EXPECT_EQ(store.Counters().write_failures, 0u);
  EXPECT_LT(store.DrivesStats()->keys, uint64_t(values));

  EXPECT_EQ(GetNow(store, h.loop(), "v/1").status().code(), StatusCode::kNotFound)
      << "the coldest value DRAM did not hold left both tiers";
  EXPECT_EQ(*GetBytes(store, h.loop(), "v/" + std::to_string(values - 1)), ValueOf(values - 1));
  held = StoredValue();
  DropFromDram(store, "v/0");
  EXPECT_EQ(*GetBytes(store, h.loop(), "v/0"), ValueOf(0)) << "spared on the drives while DRAM held it";
}

TEST(TieredStoreDrivesTest, DeleteRemovesTheValueFromBothTiers) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  ASSERT_TRUE(PutNow(store, h.loop(), "both", ValueOf(1)).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "drive-only", ValueOf(2)).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "kept", ValueOf(3)).ok());
  DropFromDram(store, "drive-only");

  bool done = false;
  EXPECT_EQ(store.Delete("both", h.loop().reply(), [&](Status s) { done = s.ok(); }), Completion::kPending);
  ASSERT_TRUE(h.loop().RunUntil([&] { return done; }));
  EXPECT_TRUE(DeleteNow(store, h.loop(), "drive-only").ok());
  EXPECT_EQ(DeleteNow(store, h.loop(), "both").code(), StatusCode::kNotFound);
  EXPECT_EQ(DeleteNow(store, h.loop(), "never").code(), StatusCode::kNotFound);
  EXPECT_FALSE(store.Exists("both"));
  EXPECT_FALSE(store.memory().Exists("both"));
  EXPECT_EQ(GetNow(store, h.loop(), "drive-only").status().code(), StatusCode::kNotFound);

  drive::ExtentStore& drives = h.ReopenDrives();
  EXPECT_FALSE(drives.Exists("both"));
  EXPECT_FALSE(drives.Exists("drive-only"));
  EXPECT_TRUE(drives.Exists("kept"));
}

TEST(TieredStoreDrivesTest, ExistsSizeAndListingSeeBothTiersOnce) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  ASSERT_TRUE(PutNow(store, h.loop(), "p/both", Pattern(10, 1)).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "p/drive", Pattern(70'000, 2)).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "q/other", Pattern(1, 3)).ok());
  DropFromDram(store, "p/drive");

  EXPECT_TRUE(store.Exists("p/both"));
  EXPECT_TRUE(store.Exists("p/drive"));
  EXPECT_FALSE(store.Exists("p/none"));
  EXPECT_EQ(store.ValueSize("p/both"), 10u);
  EXPECT_EQ(store.ValueSize("p/drive"), 70'000u);
  EXPECT_EQ(store.ValueSize("p/none"), std::nullopt);
  KeyPage page("p/", "", 10);
  store.OfferKeys(&page);
  EXPECT_EQ(page.Take(), (std::vector<std::string>{"p/both", "p/drive"}));
  EXPECT_FALSE(store.memory().Exists("p/drive")) << "index lookups read nothing back";
}

TEST(TieredStoreDrivesTest, AReaderKeepsItsPinnedBytesWhileTheValueIsOverwritten) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  const std::vector<uint8_t> old_bytes = Pattern(120'000, 7), new_bytes = Pattern(90'000, 8);
  ASSERT_TRUE(PutNow(store, h.loop(), "k", old_bytes).ok());
  Result<StoredValue> held = GetNow(store, h.loop(), "k");
  ASSERT_TRUE(held.ok() && held->pinned());

  ASSERT_TRUE(PutNow(store, h.loop(), "k", new_bytes).ok());
  EXPECT_EQ(*GetBytes(store, h.loop(), "k"), new_bytes);
  DropFromDram(store, "k");
  EXPECT_EQ(*GetBytes(store, h.loop(), "k"), new_bytes) << "the drives hold the new value too";
  EXPECT_EQ(BytesOf(*held), old_bytes);
}

TEST(TieredStoreDrivesTest, BatchesMixDramHitsDriveReadsAndMissesInKeyOrder) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  std::vector<PutCommit> puts;
  for (int i = 0; i < 4; ++i) {
    const std::vector<uint8_t> bytes = ValueOf(i);
    Result<storage::PendingPut> put = store.Reserve(bytes.size());
    ASSERT_TRUE(put.ok());
    CopyInto(*put, bytes);
    puts.push_back({std::move(put).value(), "b/" + std::to_string(i), Checksum(bytes.data(), bytes.size())});
  }
  std::optional<std::vector<Status>> statuses;
  EXPECT_EQ(store.CommitMany(std::move(puts), h.loop().reply(), [&](std::vector<Status> s) { statuses = std::move(s); }),
            Completion::kPending);
  ASSERT_TRUE(h.loop().RunUntil([&] { return statuses.has_value(); }));
  ASSERT_EQ(statuses->size(), 4u);
  for (const Status& s : *statuses) EXPECT_TRUE(s.ok()) << s.ToString();
  DropFromDram(store, "b/1");
  DropFromDram(store, "b/3");

  const std::vector<std::string_view> keys = {"b/0", "b/1", "b/none", "b/3", "b/2"};
  std::optional<std::vector<Result<StoredValue>>> values;
  EXPECT_EQ(store.GetMany(keys, h.loop().reply(), [&](std::vector<Result<StoredValue>> v) { values = std::move(v); }),
            Completion::kPending);
  ASSERT_TRUE(h.loop().RunUntil([&] { return values.has_value(); }));
  ASSERT_EQ(values->size(), keys.size());
  const int expected[] = {0, 1, -1, 3, 2};
  for (size_t i = 0; i < keys.size(); ++i) {
    Result<StoredValue>& v = (*values)[i];
    if (expected[i] < 0) {
      EXPECT_EQ(v.status().code(), StatusCode::kNotFound) << keys[i];
    } else {
      ASSERT_TRUE(v.ok()) << keys[i] << ": " << v.status().ToString();
      EXPECT_EQ(BytesOf(*v), ValueOf(expected[i])) << keys[i];
    }
  }
  EXPECT_EQ(store.Counters().drive_hits, 2u);
  values.reset();  // the pins go before the pool

  drive::ExtentStore& drives = h.ReopenDrives();
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(drives.Exists("b/" + std::to_string(i))) << i;
}

}  // namespace
}  // namespace memkv::tier
