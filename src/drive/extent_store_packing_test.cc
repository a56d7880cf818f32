// Packed drives: small values share the data area in 4 KiB units. What the
// store's own figures say a value costs, units coming back after overwrites
// and deletes, a value cut to fit a fragmented drive, the allocators rebuilt
// at open, the journal's share, and drives of the first format refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "base/checksum.h"
#include "drive/extent_store.h"
#include "drive/store_fixture.h"

namespace memkv::drive {
namespace {

// Durability is not what these tests look at: files in memory keep them quick.
const char* const kInMemory = "/dev/shm";

struct Space {
  uint64_t usable = 0, used = 0, free = 0, value = 0, runs = 0, longest = 0;
};

Space SpaceOf(const ExtentStoreStats& st) {
  Space s;
  for (const DriveStats& d : st.drives) {
    s.usable += d.usable_bytes;
    s.used += d.used_bytes;
    s.free += d.free_bytes;
    s.value += d.value_bytes;
    s.runs += d.free_runs;
    s.longest = std::max(s.longest, d.largest_free_bytes);
  }
  EXPECT_EQ(s.value, st.value_bytes) << "the drives' value bytes add up to the store's";
  EXPECT_EQ(s.used + s.free, s.usable);
  return s;
}

// Puts values of `size` bytes until the drives are full; returns how many fit.
uint64_t Fill(StoreFixture& t, size_t size) {
  for (uint64_t i = 0;; ++i) {
    Status s = t.store->Put("v" + std::to_string(i), Pattern(size, i));
    if (s.ok()) continue;
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
    EXPECT_NE(s.message().find("bytes of drive space"), std::string::npos) << "the data area, not the journal: " << s.message();
    return i;
  }
}

// Fills two drives with values of one size and checks the bytes of data
// area each value byte costs, from the store's own statistics.
void ExpectPacking(uint64_t block, uint64_t file_bytes, size_t value_bytes, double max_ratio, double min_fill) {
  StoreFixture t(2, block, file_bytes, 0, kInMemory);
  t.FormatAndOpen();
  const uint64_t stored = Fill(t, value_bytes);
  ExtentStoreStats st = t.store->Stats();
  Space s = SpaceOf(st);
  ASSERT_EQ(st.keys, stored);
  ASSERT_EQ(st.value_bytes, stored * value_bytes);
  const double ratio = double(s.used) / double(s.value);
  const double fill = double(s.used) / double(s.usable);
  std::printf("packing: %zu-byte values, block %llu: %llu values, %.4f drive bytes per value byte, %.1f%% of the "
              "data area used\n",
              value_bytes, (unsigned long long)block, (unsigned long long)stored, ratio, 100 * fill);
  EXPECT_LE(ratio, max_ratio);
  EXPECT_GE(fill, min_fill) << "the drives were not filled";
  for (const DriveStats& d : st.drives) EXPECT_LE(d.bytes_per_value_byte(), max_ratio) << "drive " << d.index;
  // Every value is still there, byte-exact, after a reopen.
  ASSERT_TRUE(t.Open().ok());
  for (uint64_t i = 0; i < stored; i += 97) EXPECT_EQ(*t.Get("v" + std::to_string(i)), Pattern(value_bytes, i)) << i;
  EXPECT_EQ(SpaceOf(t.store->Stats()).used, s.used) << "the allocators are rebuilt to the same figures";
}

TEST(Packing, FourKibValuesCostAtMostOneAndAQuarterTheirSize) {
  ExpectPacking(4 << 20, 8 << 20, 4096, 1.25, 0.99);
}

TEST(Packing, SixtyFourKibValuesCostAtMostOnePointOneTheirSize) {
  ExpectPacking(4 << 20, 8 << 20, 64 << 10, 1.10, 0.99);
}

TEST(Packing, ValuesJustOverHalfABlockCostTheirSize) {
  ExpectPacking(4 << 20, 32 << 20, (2 << 20) + 1, 1.01, 0.95);
}

TEST(Packing, OverwrittenAndDeletedSmallValuesGiveTheirUnitsBack) {
  StoreFixture t(2, 64 << 10, 8 << 20, 0, kInMemory);
  t.FormatAndOpen();
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(t.store->Put("k" + std::to_string(i), Pattern(3000, uint64_t(i))).ok());
  Space full = SpaceOf(t.store->Stats());
  EXPECT_EQ(full.used, 200u * 4096);
  EXPECT_EQ(full.runs, 2u) << "each drive filled from its start: one free run left each";

  // Values alternate over the drives (k<i> at unit i / 2 of drive i % 2).
  // Every other one of each drive deleted: holes of one unit between live
  // neighbours.
  auto deleted = [](int i) { return (i / 2) % 2 == 0; };
  for (int i = 0; i < 200; ++i) {
    if (deleted(i)) {
      ASSERT_TRUE(t.store->Delete("k" + std::to_string(i)).ok());
    }
  }
  Space holes = SpaceOf(t.store->Stats());
  EXPECT_EQ(holes.used, 100u * 4096);
  EXPECT_GE(holes.runs, 100u) << "the free space is in pieces";
  for (const DriveStats& d : t.store->Stats().drives) {
    EXPECT_GT(d.fragmentation(), 0.0);
    EXPECT_LT(d.fragmentation(), 1.0);
    EXPECT_DOUBLE_EQ(d.fragmentation(), 1.0 - double(d.largest_free_bytes) / double(d.free_bytes));
  }

  // Overwrites of the survivors, as small, take the holes (best fit), and
  // give their old units back: the space used stays that of 100 values.
  for (int i = 0; i < 200; ++i) {
    if (!deleted(i)) {
      ASSERT_TRUE(t.store->Put("k" + std::to_string(i), Pattern(4000, 1000 + i)).ok());
    }
  }
  EXPECT_EQ(SpaceOf(t.store->Stats()).used, 100u * 4096);
  // New small values fill the holes before the long runs at the end.
  const uint64_t longest_before = SpaceOf(t.store->Stats()).longest;
  for (int i = 0; i < 80; ++i) ASSERT_TRUE(t.store->Put("new" + std::to_string(i), Pattern(100, 5000 + i)).ok());
  EXPECT_EQ(SpaceOf(t.store->Stats()).longest, longest_before) << "no small value was cut from the long runs";

  // All of it survives a reopen byte-exact, and the rebuilt allocators agree.
  const Space before = SpaceOf(t.store->Stats());
  ASSERT_TRUE(t.Open().ok());
  const Space after = SpaceOf(t.store->Stats());
  EXPECT_EQ(after.used, before.used);
  EXPECT_EQ(after.runs, before.runs);
  EXPECT_EQ(after.longest, before.longest);
  for (int i = 0; i < 200; ++i) {
    auto got = t.Get("k" + std::to_string(i));
    if (deleted(i)) {
      EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << i;
    } else {
      EXPECT_EQ(*got, Pattern(4000, 1000 + i)) << i;
    }
  }
  for (int i = 0; i < 80; ++i) EXPECT_EQ(*t.Get("new" + std::to_string(i)), Pattern(100, 5000 + i)) << i;
  // New values after the reopen land on free units only.
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(t.store->Put("late" + std::to_string(i), Pattern(9000, 7000 + i)).ok());
  for (int i = 0; i < 200; ++i) {
    if (!deleted(i)) {
      EXPECT_EQ(*t.Get("k" + std::to_string(i)), Pattern(4000, 1000 + i)) << i;
    }
  }
}

TEST(Packing, AValueIsCutIntoTheFreeRunsOfAFragmentedDrive) {
  StoreFixture t(1, 64 << 10, 4 << 20, 0, kInMemory);  // 1 MiB of data: 256 units
  t.FormatAndOpen();
  const uint64_t stored = [&] {
    uint64_t i = 0;
    while (t.store->Put("s" + std::to_string(i), Pattern(4096, i)).ok()) ++i;
    return i;
  }();
  ASSERT_EQ(stored, 256u);
  for (uint64_t i = 0; i < stored; i += 2) ASSERT_TRUE(t.store->Delete("s" + std::to_string(i)).ok());
  DriveStats d = t.store->Stats().drives[0];
  ASSERT_EQ(d.largest_free_bytes, 4096u);
  ASSERT_EQ(d.free_bytes, 128u * 4096);
  EXPECT_NEAR(d.fragmentation(), 1.0 - 1.0 / 128, 1e-9);

  // 40 KiB, with no two free units side by side: ten one-unit extents.
  const auto big = Pattern(40 << 10, 99);
  ASSERT_TRUE(t.store->Put("big", big).ok());
  EXPECT_EQ(*t.Get("big"), big);
  EXPECT_EQ(t.store->Stats().drives[0].used_bytes, (128u + 10) * 4096);
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(*t.Get("big"), big) << "a cut value is rebuilt from its journal record";
  EXPECT_EQ(*t.Get("s1"), Pattern(4096, 1));
  // Freed, its pieces coalesce with the holes around them.
  ASSERT_TRUE(t.store->Delete("big").ok());
  EXPECT_EQ(t.store->Stats().drives[0].free_bytes, 128u * 4096);
  EXPECT_EQ(t.store->Stats().drives[0].free_runs, 128u);
}

TEST(Packing, AFullJournalRefusesPutsAndEvictionMakesRoomAgain) {
  // 16 KiB areas: 12 KiB of records, 9 KiB of them for the live index, ~100 values.
  StoreFixture t(1, 64 << 10, 8 << 20, 16 << 10, kInMemory);
  t.FormatAndOpen();
  int stored = 0;
  Status s;
  while ((s = t.store->Put("key-" + std::to_string(stored), Pattern(100, uint64_t(stored)))).ok()) ++stored;
  ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("the journal is full"), std::string::npos) << s.message();
  EXPECT_GT(stored, 80);
  EXPECT_LE(t.store->Stats().journal_live_bytes, 9u << 10);
  // Deletes always find room, and what they free takes new puts.
  auto evicted = t.store->EvictColdest(4 * 4096);
  ASSERT_TRUE(evicted.ok()) << evicted.status().ToString();
  EXPECT_EQ(evicted->size(), 4u);
  EXPECT_EQ(evicted->front(), "key-0");
  ASSERT_TRUE(t.store->Put("one-more", Pattern(100, 1)).ok());
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(t.store->Stats().keys, uint64_t(stored - 4 + 1));
  EXPECT_EQ(*t.Get("one-more"), Pattern(100, 1));
}

TEST(Packing, AValueThatDoesNotMatchItsChecksumIsNotStored) {
  StoreFixture t(1, 64 << 10, 4 << 20, 0, kInMemory);
  t.FormatAndOpen();
  auto v = Pattern(5000, 3);
  const iovec one{v.data(), v.size()};
  Status s = t.store->PutIov("k", std::span<const iovec>(&one, 1), Checksum(v.data(), v.size()) ^ 1);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("checksum"), std::string::npos) << s.message();
  EXPECT_FALSE(t.store->Exists("k"));
  EXPECT_EQ(t.store->Stats().drives[0].used_bytes, 0u) << "its units were given back";
  ASSERT_TRUE(t.store->PutIov("k", std::span<const iovec>(&one, 1), Checksum(v.data(), v.size())).ok());
  EXPECT_EQ(*t.Get("k"), v);
}

TEST(Packing, AVersionOneDriveIsRefusedNamingBothVersionsUntilReformatted) {
  StoreFixture t(1, 64 << 10, 8 << 20);
  WriteVersionOneDrive(t.paths[0], 8 << 20, 64 << 10);
  Status s = t.Open();
  ASSERT_EQ(s.code(), StatusCode::kUnsupportedVersion) << s.ToString();
  EXPECT_NE(s.message().find(t.paths[0]), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("format version 1 is older"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("format version " + std::to_string(kDriveFormatVersion)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("memkv setup --force"), std::string::npos) << s.message();
  EXPECT_EQ(ReadRaw(t.paths[0], 8, 1), std::vector<uint8_t>{1}) << "the refused drive is left as it was";

  Status again = t.Format();
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition) << again.ToString();
  EXPECT_NE(again.message().find("version 1"), std::string::npos) << again.message();
  t.format.force = true;
  ASSERT_TRUE(t.Format().ok());
  ASSERT_TRUE(t.Open().ok());
  EXPECT_FALSE(t.store->Exists("old")) << "a reformatted drive is empty";
  ASSERT_TRUE(t.store->Put("new", Pattern(100, 2)).ok());
  EXPECT_EQ(*t.Get("new"), Pattern(100, 2));
}

}  // namespace
}  // namespace memkv::drive
