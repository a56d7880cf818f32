#include "drive/extent_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <thread>

#include "base/bytes.h"
#include "base/checksum.h"
#include "drive/aligned_buffer.h"
#include "drive/store_fixture.h"

namespace memkv::drive {
namespace {

constexpr uint64_t kBlock = 64 << 10;

Superblock ReadSuperblock(const std::string& path) {
  auto raw = ReadRaw(path, 0, kDriveHeaderBytes);
  auto sb = DecodeSuperblock(raw, path);
  EXPECT_TRUE(sb.ok()) << sb.status().ToString();
  return sb.ok() ? *sb : Superblock{};
}

TEST(ExtentStore, SmallEmptyAndStripedValuesRoundTrip) {
  StoreFixture t(3);
  t.FormatAndOpen();
  auto small = Pattern(100, 1);
  auto big = Pattern(5 * kBlock + 123, 2);  // 6 extents over 3 drives
  ASSERT_TRUE(t.store->Put("small", small).ok());
  ASSERT_TRUE(t.store->Put("empty", {}).ok());
  ASSERT_TRUE(t.store->Put("big", big).ok());
  EXPECT_EQ(*t.Get("small"), small);
  EXPECT_TRUE(t.Get("empty")->empty());
  EXPECT_EQ(*t.Get("big"), big);
  EXPECT_TRUE(t.store->Exists("big"));
  EXPECT_FALSE(t.store->Exists("nope"));
  EXPECT_EQ(t.Get("nope").status().code(), StatusCode::kNotFound);

  auto info = t.store->Stat("big");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size_bytes, big.size());
  EXPECT_EQ(info->checksum, Checksum(big.data(), big.size()));

  ExtentStoreStats st = t.store->Stats();
  EXPECT_EQ(st.keys, 3u);
  EXPECT_EQ(st.value_bytes, small.size() + big.size());
  EXPECT_EQ(st.unit_bytes, 4096u);
  EXPECT_FALSE(st.degraded);
  ASSERT_EQ(st.drives.size(), 3u);
  uint64_t used = 0, value_bytes = 0;
  for (const DriveStats& d : st.drives) {
    EXPECT_GE(d.used_bytes, kBlock) << "the big value is striped over every drive";
    EXPECT_EQ(d.raw_bytes, 8u << 20);
    EXPECT_LE(d.usable_bytes, d.raw_bytes);
    EXPECT_EQ(d.usable_bytes % 4096, 0u);
    EXPECT_EQ(d.free_bytes + d.used_bytes, d.usable_bytes);
    EXPECT_EQ(d.slots_total, d.usable_bytes / kBlock);
    EXPECT_EQ(d.state, DriveState::kOnline);
    used += d.used_bytes;
    value_bytes += d.value_bytes;
  }
  EXPECT_EQ(used, (5 * 16 + 1 + 1) * 4096u) << "5 full extents and one unit for big, one unit for small, none for empty";
  EXPECT_EQ(value_bytes, st.value_bytes);

  std::vector<uint8_t> buf(big.size() + 10);
  auto n = t.store->GetInto("big", buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, big.size());
  EXPECT_TRUE(std::equal(big.begin(), big.end(), buf.begin()));
  std::vector<uint8_t> tiny(10);
  auto too = t.store->GetInto("big", tiny);
  EXPECT_EQ(too.status().code(), StatusCode::kTooLarge);
  EXPECT_NE(too.status().message().find(std::to_string(big.size())), std::string::npos);
}

// One group commit for several puts: each one's own status, and what was
// acknowledged is there after a reopen, under either sync policy.
TEST(ExtentStore, PutManyCommitsTogetherAndRefusesOnlyTheBadOne) {
  for (SyncMode mode : {SyncMode::kAlways, SyncMode::kInterval}) {
    SCOPED_TRACE(std::string(SyncModeName(mode)));
    StoreFixture t(2);
    t.sync = mode;
    t.FormatAndOpen();
    ASSERT_TRUE(t.store->Put("b", Pattern(10, 9)).ok());
    const std::vector<std::vector<uint8_t>> values = {Pattern(4096, 1), Pattern(3 * kBlock + 5, 2), Pattern(7, 3),
                                                      {}};
    std::vector<iovec> iovs;
    for (const auto& v : values) iovs.push_back(iovec{const_cast<uint8_t*>(v.data()), v.size()});
    const std::vector<std::string> keys = {"a", "b", "c", "d"};
    std::vector<ExtentStore::IovPut> puts;
    for (size_t i = 0; i < keys.size(); ++i) {
      puts.push_back({keys[i], std::span<const iovec>(&iovs[i], 1), Checksum(values[i].data(), values[i].size())});
    }
    puts[2].checksum ^= 1;  // "c": bytes that do not match its checksum
    const uint64_t commits = t.store->Stats().journal_commits;
    std::vector<Status> got = t.store->PutManyIov(puts);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_TRUE(got[0].ok()) << got[0].ToString();
    EXPECT_TRUE(got[1].ok()) << got[1].ToString();
    EXPECT_EQ(got[2].code(), StatusCode::kInvalidArgument) << got[2].ToString();
    EXPECT_TRUE(got[3].ok()) << got[3].ToString();
    EXPECT_EQ(t.store->Stats().journal_commits, commits + 1) << "one journal commit for the batch";
    ASSERT_TRUE(t.Open().ok());
    EXPECT_EQ(*t.Get("a"), values[0]);
    EXPECT_EQ(*t.Get("b"), values[1]) << "the batch's put replaced the older value";
    EXPECT_EQ(t.Get("c").status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(t.Get("d")->empty());
    EXPECT_EQ(t.store->Stats().keys, 3u);
  }
}

// The default journal holds the records of a drive filled with 4 KiB values
// under 64-byte keys: the data area, not the journal, is what fills.
TEST(ExtentStore, TheDefaultJournalLetsFourKibValuesFillTheDataArea) {
  StoreFixture t(1, 64 << 10, 64 << 20);  // journal size: the default
  t.sync = SyncMode::kInterval;           // buffered: the fill takes a moment
  t.FormatAndOpen();
  const ExtentStoreStats before = t.store->Stats();
  const uint64_t units = before.drives[0].usable_bytes / 4096;
  const auto value = Pattern(4096, 5);
  uint64_t stored = 0;
  Status refused;
  for (uint64_t i = 0; i < units; ++i) {
    std::string key = std::to_string(i);
    key.insert(0, 64 - key.size(), 'k');  // 64-byte keys
    refused = t.store->Put(key, value);
    if (!refused.ok()) break;
    stored++;
  }
  const ExtentStoreStats after = t.store->Stats();
  EXPECT_GE(double(stored), 0.95 * double(units)) << refused.ToString();
  EXPECT_EQ(refused.code(), stored == units ? StatusCode::kOk : StatusCode::kResourceExhausted) << refused.ToString();
  EXPECT_EQ(refused.message().find("journal"), std::string::npos) << "the journal filled first: " << refused.ToString();
  EXPECT_LE(after.journal_live_bytes, after.journal_budget_bytes);
  std::printf("%llu of %llu units hold 4 KiB values; the live index takes %llu of %llu journal bytes\n",
              (unsigned long long)stored, (unsigned long long)units, (unsigned long long)after.journal_live_bytes,
              (unsigned long long)after.journal_budget_bytes);
  ASSERT_TRUE(t.Open().ok()) << "and it all replays";
  EXPECT_EQ(t.store->Stats().keys, stored);
}

// Every journal holds every drive's records: with several drives the
// default is capped so that the two areas take at most 1/8 of a drive.
TEST(ExtentStore, TheDefaultJournalOfSeveralDrivesTakesAtMostAnEighthOfEach) {
  for (int drives : {1, 2, 4}) {
    SCOPED_TRACE(std::to_string(drives) + " drives");
    StoreFixture t(drives, 64 << 10, 64 << 20);
    t.FormatAndOpen();
    const ExtentStoreStats st = t.store->Stats();
    const uint64_t both_areas = 2 * st.drives[0].journal_area_bytes;
    EXPECT_LE(both_areas, (64u << 20) / kJournalMaxShareOfDrive);
    const uint64_t per_unit = uint64_t(drives) * (64u << 20) / 4096 * kJournalBytesPerUnit;
    if (drives == 1) {
      EXPECT_GE(st.drives[0].journal_area_bytes, per_unit) << "one drive: the whole per-unit rule";
    }
  }
}

TEST(ExtentStore, OverwriteAndDeleteFreeTheirExtents) {
  StoreFixture t(2);
  t.FormatAndOpen();
  ASSERT_TRUE(t.store->Put("k", Pattern(3 * kBlock, 1)).ok());
  ASSERT_TRUE(t.store->Put("k", Pattern(kBlock / 2, 2)).ok());
  EXPECT_EQ(*t.Get("k"), Pattern(kBlock / 2, 2));
  auto used = [&] {
    uint64_t n = 0;
    for (const DriveStats& d : t.store->Stats().drives) n += d.used_bytes;
    return n;
  };
  EXPECT_EQ(used(), kBlock / 2);
  ASSERT_TRUE(t.store->Delete("k").ok());
  EXPECT_EQ(used(), 0u);
  EXPECT_EQ(t.Get("k").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t.store->Delete("k").code(), StatusCode::kNotFound);
}

TEST(ExtentStore, KeysOutsideTheLimitsAreRefused) {
  StoreFixture t(1);
  t.FormatAndOpen();
  EXPECT_EQ(t.store->Put("", Pattern(1, 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.store->Put(std::string(kMaxDriveKeyBytes + 1, 'k'), Pattern(1, 1)).code(), StatusCode::kInvalidArgument);
  std::string longest(kMaxDriveKeyBytes, 'k');
  ASSERT_TRUE(t.store->Put(longest, Pattern(10, 1)).ok());
  Status reopened = t.Open();
  ASSERT_TRUE(reopened.ok()) << reopened.ToString();
  EXPECT_EQ(*t.Get(longest), Pattern(10, 1));
}

TEST(ExtentStore, EverythingAcknowledgedSurvivesReopen) {
  StoreFixture t(3);
  t.FormatAndOpen();
  std::map<std::string, std::vector<uint8_t>> want;
  for (int i = 0; i < 60; ++i) {
    std::string key = "key-" + std::to_string(i % 40);
    auto v = Pattern(size_t(i * 7919) % (3 * kBlock), uint64_t(i));
    ASSERT_TRUE(t.store->Put(key, v).ok());
    want[key] = v;
    if (i % 9 == 0) {
      ASSERT_TRUE(t.store->Delete(key).ok());
      want.erase(key);
    }
  }
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(t.store->Stats().keys, want.size());
  for (int i = 0; i < 40; ++i) {
    std::string key = "key-" + std::to_string(i);
    auto got = t.Get(key);
    if (want.count(key)) {
      ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
      EXPECT_EQ(*got, want[key]) << key;
    } else {
      EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << key;
    }
  }
  // The allocator was rebuilt from the index: new values do not land on old ones.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(t.store->Put("new-" + std::to_string(i), Pattern(kBlock, 1000 + i)).ok());
  for (auto& [key, v] : want) EXPECT_EQ(*t.Get(key), v) << key;
}

TEST(ExtentStore, DrivesMayBeGivenInAnyOrder) {
  StoreFixture t(3);
  t.FormatAndOpen();
  ASSERT_TRUE(t.store->Put("k", Pattern(4 * kBlock, 5)).ok());
  ASSERT_TRUE(t.Open({t.paths[2], t.paths[0], t.paths[1]}).ok());
  EXPECT_EQ(*t.Get("k"), Pattern(4 * kBlock, 5));
  EXPECT_EQ(t.store->Stats().drives[2].path, t.paths[2]);
}

TEST(ExtentStore, FullStoreIsResourceExhaustedNamingDrivesAndEvictColdestMakesRoom) {
  StoreFixture t(2, kBlock, 4 << 20);  // 2 x 1 MiB of journal, then 1 MiB of data per drive
  t.FormatAndOpen();
  const uint64_t slots = t.store->Stats().drives[0].slots_total + t.store->Stats().drives[1].slots_total;
  ASSERT_GT(slots, 4u);
  for (uint64_t i = 0; i < slots; ++i) ASSERT_TRUE(t.store->Put("v" + std::to_string(i), Pattern(kBlock, i)).ok());
  Status full = t.store->Put("one-more", Pattern(kBlock, 99));
  ASSERT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find(t.paths[0]), std::string::npos) << full.message();
  EXPECT_NE(full.message().find(t.paths[1]), std::string::npos) << full.message();
  EXPECT_NE(full.message().find("0 of"), std::string::npos) << full.message();

  // v0 is the coldest; reading it makes v1 the coldest.
  ASSERT_TRUE(t.Get("v0").ok());
  auto evicted = t.store->EvictColdest(2 * kBlock);
  ASSERT_TRUE(evicted.ok());
  EXPECT_EQ(*evicted, (std::vector<std::string>{"v1", "v2"}));
  EXPECT_FALSE(t.store->Exists("v1"));
  EXPECT_TRUE(t.store->Exists("v0"));
  EXPECT_EQ(t.store->Stats().evictions, 2u);
  ASSERT_TRUE(t.store->Put("one-more", Pattern(kBlock, 99)).ok());
  // Evictions are journaled like deletes.
  ASSERT_TRUE(t.Open().ok());
  EXPECT_FALSE(t.store->Exists("v1"));
  EXPECT_TRUE(t.store->Exists("one-more"));
  EXPECT_EQ(t.store->EvictColdest(0).status().code(), StatusCode::kInvalidArgument);
}

TEST(ExtentStore, EvictColdestTakesSparedValuesOnlyWhenTheOthersDoNotSuffice) {
  StoreFixture t(1, kBlock, 4 << 20);
  t.FormatAndOpen();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(t.store->Put("v" + std::to_string(i), Pattern(kBlock, i)).ok());
  auto spare = [](std::string_view key) { return key == "v0" || key == "v2"; };
  auto evicted = t.store->EvictColdest(1, spare);
  ASSERT_TRUE(evicted.ok());
  EXPECT_EQ(*evicted, (std::vector<std::string>{"v1"})) << "v0 is colder but spared";
  evicted = t.store->EvictColdest(3 * kBlock, spare);
  ASSERT_TRUE(evicted.ok());
  EXPECT_EQ(*evicted, (std::vector<std::string>{"v3", "v0", "v2"})) << "then the spared, coldest first";
}

TEST(ExtentStore, ValuesBeyondTheExtentLimitAreTooLarge) {
  StoreFixture t(1, 4096, 4 << 20);
  t.FormatAndOpen();
  // Mapped, never touched: the size is refused before any byte is read.
  auto huge = AlignedBuffer::Allocate(size_t(kMaxExtentsPerValue) * 4096 + 1);
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(t.store->Put("huge", huge->span()).code(), StatusCode::kTooLarge);
}

TEST(ExtentStoreFormat, RefusesMemKvDrivesWithoutForce) {
  StoreFixture t(2);
  t.FormatAndOpen();
  ASSERT_TRUE(t.store->Put("k", Pattern(10, 1)).ok());
  t.store.reset();
  Status again = t.Format();
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("already holds store"), std::string::npos) << again.message();
  EXPECT_NE(again.message().find("force"), std::string::npos);
  t.format.force = true;
  ASSERT_TRUE(t.Format().ok());
  ASSERT_TRUE(t.Open().ok());
  EXPECT_FALSE(t.store->Exists("k")) << "a reformatted store is empty";
}

TEST(ExtentStoreFormat, TooSmallDriveIsNamedWithSizes) {
  StoreFixture t(1, 1 << 20, 2 << 20);
  Status s = t.Format();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(t.paths[0]), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("needs at least"), std::string::npos) << s.message();
}

TEST(ExtentStoreOpen, RefusesANewerFormatNamingBothVersions) {
  StoreFixture t(2);
  t.FormatAndOpen();
  t.store.reset();
  auto raw = ReadRaw(t.paths[1], 0, kDriveHeaderBytes);
  StoreLe32(raw.data() + 8, kDriveFormatVersion + 1);
  WriteRaw(t.paths[1], 0, raw);
  Status s = t.Open();
  ASSERT_EQ(s.code(), StatusCode::kUnsupportedVersion) << s.ToString();
  EXPECT_NE(s.message().find("version " + std::to_string(kDriveFormatVersion + 1)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("format version " + std::to_string(kDriveFormatVersion)), std::string::npos);
  EXPECT_NE(s.message().find(t.paths[1]), std::string::npos);
}

TEST(ExtentStoreOpen, RefusesUnformattedAndForeignDrives) {
  StoreFixture t(1);
  StoreFixture other(1);
  ASSERT_TRUE(t.Format().ok());
  ASSERT_TRUE(other.Format().ok());
  Status mixed = t.Open({t.paths[0], other.paths[0]});
  EXPECT_EQ(mixed.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(mixed.message().find("belongs to store"), std::string::npos) << mixed.message();

  std::string blank = t.dir.File("blank");
  WriteRaw(blank, 0, {});
  ASSERT_EQ(truncate(blank.c_str(), 4 << 20), 0);
  Status unformatted = t.Open({blank});
  EXPECT_EQ(unformatted.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(unformatted.message().find("not formatted"), std::string::npos) << unformatted.message();
  EXPECT_EQ(t.Open({t.dir.File("missing")}).code(), StatusCode::kUnavailable);
}

TEST(ExtentStore, ACorruptExtentIsAMissNeverWrongBytes) {
  StoreFixture t(1);
  t.FormatAndOpen();
  ASSERT_TRUE(t.store->Put("k", Pattern(3000, 1)).ok());
  Superblock sb = ReadSuperblock(t.paths[0]);
  auto byte = ReadRaw(t.paths[0], sb.unit_offset(0) + 1000, 1);
  byte[0] ^= 0x01;  // bit rot in the data
  WriteRaw(t.paths[0], sb.unit_offset(0) + 1000, byte);
  auto got = t.Get("k");
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_NE(got.status().message().find("checksum"), std::string::npos) << got.status().message();
  EXPECT_EQ(t.store->Stats().checksum_failures, 1u);
  EXPECT_FALSE(t.store->Exists("k")) << "a corrupt value is dropped";
}

TEST(ExtentStore, AStaleExtentIsNeverReturned) {
  // A drive that silently kept an old extent where a new one was written
  // (a lost write): the units hold the key's previous value.
  StoreFixture t(1);
  t.FormatAndOpen();
  Superblock sb = ReadSuperblock(t.paths[0]);
  ASSERT_TRUE(t.store->Put("k", Pattern(5000, 1)).ok());  // units 0..1
  auto old_extent = ReadRaw(t.paths[0], sb.unit_offset(0), 8192);
  ASSERT_TRUE(t.store->Put("k", Pattern(5000, 2)).ok());  // units 2..3, then 0..1 are freed
  WriteRaw(t.paths[0], sb.unit_offset(2), old_extent);
  auto got = t.Get("k");
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_NE(got.status().message().find("stale"), std::string::npos) << got.status().message();
}

TEST(ExtentStore, ConcurrentWritersShareJournalCommitsAndAllSurvive) {
  StoreFixture t(2, 16 << 10, 32 << 20);
  t.FormatAndOpen();
  constexpr int kThreads = 8;
  constexpr int kOps = 40;
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      for (int i = 0; i < kOps; ++i) {
        std::string key = "t" + std::to_string(th) + "-" + std::to_string(i % 10);
        EXPECT_TRUE(t.store->Put(key, Pattern(size_t(i * 997 % 40000), uint64_t(th * 1000 + i))).ok());
        auto got = t.store->Get(key);
        EXPECT_TRUE(got.ok());
        if (got.ok()) {
          EXPECT_EQ(*got, Pattern(size_t(i * 997 % 40000), uint64_t(th * 1000 + i)));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ExtentStoreStats st = t.store->Stats();
  EXPECT_EQ(st.puts, uint64_t(kThreads * kOps));
  EXPECT_LE(st.journal_commits, st.puts);
  ASSERT_TRUE(t.Open().ok());
  for (int th = 0; th < kThreads; ++th) {
    for (int k = 0; k < 10; ++k) {
      int last = kOps - 10 + k;
      auto got = t.Get("t" + std::to_string(th) + "-" + std::to_string(k));
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(*got, Pattern(size_t(last * 997 % 40000), uint64_t(th * 1000 + last)));
    }
  }
}

TEST(ExtentStore, AFullJournalAreaIsCheckpointedAndNothingIsLost) {
  StoreFixture t(2, 16 << 10, 8 << 20, 16 << 10);  // 16 KiB journal areas: a checkpoint every ~100 records
  t.FormatAndOpen();
  std::map<std::string, uint64_t> want;
  for (int i = 0; i < 600; ++i) {
    std::string key = "k" + std::to_string(i % 23);
    ASSERT_TRUE(t.store->Put(key, Pattern(100 + i, uint64_t(i))).ok()) << i;
    want[key] = uint64_t(i);
  }
  EXPECT_GT(t.store->Stats().checkpoints, 2u);
  ASSERT_TRUE(t.Open().ok());
  for (auto& [key, i] : want) EXPECT_EQ(*t.Get(key), Pattern(100 + i, i)) << key;
  ASSERT_TRUE(t.store->Checkpoint().ok());
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(t.store->Stats().keys, want.size());
}

TEST(ExtentStore, AJournalTooSmallForTheLiveIndexIsResourceExhausted) {
  StoreFixture t(1, 4096, 8 << 20, 8 << 10);  // one 4 KiB block of records
  t.FormatAndOpen();
  Status s;
  int stored = 0;
  for (int i = 0; i < 200 && s.ok(); ++i) {
    s = t.store->Put("key-number-" + std::to_string(i), Pattern(10, uint64_t(i)));
    if (s.ok()) stored++;
  }
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("journal"), std::string::npos) << s.message();
  EXPECT_GT(stored, 10);
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(t.store->Stats().keys, uint64_t(stored));
}

TEST(ExtentStore, AMissingDriveDegradesTheStoreAndIsReadmittedEmpty) {
  StoreFixture t(3);
  t.FormatAndOpen();
  // One extent each, round-robin: v0 on drive 0, v1 on drive 1, ...
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(t.store->Put("v" + std::to_string(i), Pattern(1000, uint64_t(i))).ok());
  ASSERT_TRUE(t.Open({t.paths[0], t.paths[2]}).ok());
  ExtentStoreStats st = t.store->Stats();
  EXPECT_TRUE(st.degraded);
  EXPECT_EQ(st.drives[1].state, DriveState::kOffline);
  EXPECT_FALSE(st.drives[1].reason.empty());
  EXPECT_EQ(t.Get("v1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t.Get("v4").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*t.Get("v0"), Pattern(1000, 0));
  EXPECT_EQ(*t.Get("v5"), Pattern(1000, 5));
  // While drive 1 is away, v1 gets a new value and v4 is deleted elsewhere.
  ASSERT_TRUE(t.store->Put("v1", Pattern(1000, 101)).ok());
  ASSERT_TRUE(t.store->Put("big", Pattern(4 * kBlock, 7)).ok());
  ASSERT_TRUE(t.store->Checkpoint().ok());

  // Drive 1 comes back: its journal is stale, so it is readmitted empty and
  // nothing it holds comes back (v1's old value, v4).
  ASSERT_TRUE(t.Open().ok());
  st = t.store->Stats();
  EXPECT_FALSE(st.degraded);
  EXPECT_EQ(*t.Get("v1"), Pattern(1000, 101));
  EXPECT_EQ(t.Get("v4").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*t.Get("big"), Pattern(4 * kBlock, 7));
  EXPECT_EQ(st.drives[1].free_bytes, st.drives[1].usable_bytes);
  // And it takes new extents again.
  ASSERT_TRUE(t.store->Put("after", Pattern(3 * kBlock, 8)).ok());
  EXPECT_LT(t.store->Stats().drives[1].free_bytes, st.drives[1].usable_bytes);
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(*t.Get("after"), Pattern(3 * kBlock, 8));
  EXPECT_EQ(*t.Get("v1"), Pattern(1000, 101));
}

// Regression: a checkpoint taken because a Delete's record did not fit gave
// the checkpointed (still live) value a sequence above the Delete's, so the
// value came back at the next open (found by PowerCut.EveryCutPoint...).
TEST(ExtentStore, ADeleteThatForcesACheckpointStaysDeletedAfterReopen) {
  StoreFixture t(1, 4096, 4 << 20, 8 << 10);
  t.FormatAndOpen();
  const std::string victim(100, 'v');  // its Delete record (168 bytes) is longer than a filler's Put (88)
  ASSERT_TRUE(t.store->Put(victim, Pattern(10, 1)).ok());
  auto room = [&] {
    DriveStats d = t.store->Stats().drives[0];
    return d.journal_area_bytes - d.journal_used_bytes;
  };
  for (int i = 0; room() >= 80; ++i) ASSERT_TRUE(t.store->Put("f", Pattern(10, uint64_t(i))).ok());
  const uint64_t checkpoints = t.store->Stats().checkpoints;
  ASSERT_TRUE(t.store->Delete(victim).ok());
  EXPECT_EQ(t.store->Stats().checkpoints, checkpoints + 1) << "the Delete did not fit: the area was checkpointed";
  ASSERT_TRUE(t.Open().ok());
  EXPECT_FALSE(t.store->Exists(victim));
  EXPECT_TRUE(t.store->Exists("f"));
}

TEST(ExtentStore, ClosingReleasesTheDrivesAtOnce) {
  // Regression: io_uring rings tear down asynchronously and their registered
  // files held the drive's flock for a moment after the store was gone.
  StoreFixture t(2);
  t.FormatAndOpen();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(t.store->Put("k", Pattern(100, uint64_t(i))).ok());
    Status s = t.Open();
    ASSERT_TRUE(s.ok()) << "reopen " << i << ": " << s.ToString();
  }
}

}  // namespace
}  // namespace memkv::drive
