// TieredStore without drives (storage.mode memory): the same interface over
// the DRAM pool alone, every operation completing inline, allocating nothing
// beyond what the MemoryStore itself allocates.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "base/allocation_count.h"
#include "drive/test_util.h"
#include "tier/tier_test_util.h"

namespace memkv::tier {
namespace {

using drive::Pattern;

constexpr uint64_t kPoolBytes = 16 << 20;

// A put whose bytes are `bytes`, reserved from `store` and ready to commit.
storage::PendingPut Filled(TieredStore& store, const std::vector<uint8_t>& bytes) {
  Result<storage::PendingPut> put = store.Reserve(bytes.size());
  EXPECT_TRUE(put.ok()) << put.status().ToString();
  if (!put.ok()) return storage::PendingPut();
  CopyInto(*put, bytes);
  return std::move(put).value();
}

TEST(TieredStoreMemoryTest, PutGetExistsSizeListAndDelete) {
  TierHarness h(kPoolBytes, /*with_drives=*/false);
  TieredStore& store = h.store();
  const std::vector<uint8_t> a = Pattern(100'000, 1), b = Pattern(0, 2), c = Pattern(3 << 20, 3);
  ASSERT_TRUE(PutNow(store, h.loop(), "dir/a", a).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "dir/b", b).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "other/c", c).ok());

  EXPECT_EQ(*GetBytes(store, h.loop(), "dir/a"), a);
  EXPECT_EQ(*GetBytes(store, h.loop(), "dir/b"), b) << "an empty value is a value";
  EXPECT_EQ(*GetBytes(store, h.loop(), "other/c"), c);
  EXPECT_EQ(GetNow(store, h.loop(), "dir/none").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store.Exists("dir/b"));
  EXPECT_FALSE(store.Exists("dir/none"));
  EXPECT_EQ(store.ValueSize("other/c"), c.size());
  EXPECT_EQ(store.ValueSize("dir/b"), 0u);
  EXPECT_EQ(store.ValueSize("dir/none"), std::nullopt);

  KeyPage page("dir/", "", 10);
  store.OfferKeys(&page);
  EXPECT_EQ(page.Take(), (std::vector<std::string>{"dir/a", "dir/b"}));

  EXPECT_TRUE(DeleteNow(store, h.loop(), "dir/a").ok());
  EXPECT_EQ(DeleteNow(store, h.loop(), "dir/a").code(), StatusCode::kNotFound);
  EXPECT_FALSE(store.Exists("dir/a"));
  EXPECT_EQ(GetNow(store, h.loop(), "dir/a").status().code(), StatusCode::kNotFound);
}

// ReadCheck::kLater (TCP gets): a corrupt DRAM value is handed out under
// its stored checksum and dropped once checked; an RDMA grant (kDramPin) is
// always checked first.
TEST(TieredStoreMemoryTest, ACheckLeftForLaterDropsACorruptValueOnceItIsChecked) {
  TierHarness h(kPoolBytes, /*with_drives=*/false);
  TieredStore& store = h.store();
  const std::vector<uint8_t> bytes = Pattern(70'000, 4);
  ASSERT_TRUE(PutNow(store, h.loop(), "k", bytes).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "pin", bytes).ok());
  ASSERT_TRUE(store.memory().CorruptForTesting("k").ok());
  ASSERT_TRUE(store.memory().CorruptForTesting("pin").ok());

  EXPECT_EQ(GetNow(store, h.loop(), "pin", ReadNeed::kDramPin).status().code(), StatusCode::kNotFound)
      << "an RDMA source is checked before it is granted";

  std::vector<std::string_view> keys = {"k", "absent"};
  std::optional<std::vector<Result<StoredValue>>> got;
  store.GetMany(
      keys, h.loop().reply(), [&](std::vector<Result<StoredValue>> v) { got = std::move(v); },
      storage::ReadCheck::kLater);
  ASSERT_TRUE(got.has_value()) << "DRAM only: inline";
  ASSERT_EQ(got->size(), 2u);
  ASSERT_TRUE((*got)[0].ok()) << (*got)[0].status().ToString();
  EXPECT_EQ((*got)[1].status().code(), StatusCode::kNotFound);
  EXPECT_NE(BytesOf(*(*got)[0]), bytes) << "the corrupt bytes, under the checksum of the right ones";
  EXPECT_EQ((*got)[0]->CheckLater().code(), StatusCode::kCorruption);
  EXPECT_FALSE(store.Exists("k"));
  EXPECT_EQ(store.MemoryStats().checksum_failures, 2u);
}

// Without drives nothing ever needs the inbox: a caller with none is served.
TEST(TieredStoreMemoryTest, EveryOperationCompletesInlineBeforeItReturns) {
  TierHarness h(kPoolBytes, /*with_drives=*/false);
  TieredStore& store = h.store();
  const ReplyTo nowhere;  // no inbox: a post would crash
  const std::vector<uint8_t> bytes = Pattern(5000, 7);

  bool done = false;
  EXPECT_EQ(store.Commit(Filled(store, bytes), "k", Checksum(bytes.data(), bytes.size()), nowhere,
                         [&](Status s) { done = s.ok(); }),
            Completion::kInline);
  EXPECT_TRUE(done);

  done = false;
  EXPECT_EQ(store.Get("k", ReadNeed::kBytes, nowhere,
                      [&](Result<StoredValue> v) { done = v.ok() && v->pinned() && BytesOf(*v) == bytes; }),
            Completion::kInline);
  EXPECT_TRUE(done);

  done = false;
  EXPECT_EQ(store.Get("k", ReadNeed::kDramPin, nowhere, [&](Result<StoredValue> v) { done = v.ok() && v->pinned(); }),
            Completion::kInline);
  EXPECT_TRUE(done);

  done = false;
  EXPECT_EQ(store.Get("missing", ReadNeed::kBytes, nowhere,
                      [&](Result<StoredValue> v) { done = v.status().code() == StatusCode::kNotFound; }),
            Completion::kInline);
  EXPECT_TRUE(done);

  std::vector<PutCommit> puts;
  puts.push_back({Filled(store, bytes), "m1", Checksum(bytes.data(), bytes.size())});
  puts.push_back({Filled(store, {}), "m2", Checksum(nullptr, 0)});
  done = false;
  EXPECT_EQ(store.CommitMany(std::move(puts), nowhere,
                             [&](std::vector<Status> s) { done = s.size() == 2 && s[0].ok() && s[1].ok(); }),
            Completion::kInline);
  EXPECT_TRUE(done);

  const std::vector<std::string_view> keys = {"m2", "missing", "m1"};
  done = false;
  EXPECT_EQ(store.GetMany(keys, nowhere,
                          [&](std::vector<Result<StoredValue>> v) {
                            done = v.size() == 3 && v[0].ok() && v[0]->size() == 0 &&
                                   v[1].status().code() == StatusCode::kNotFound && v[2].ok() &&
                                   BytesOf(*v[2]) == bytes;
                          }),
            Completion::kInline);
  EXPECT_TRUE(done);

  done = false;
  EXPECT_EQ(store.Delete("m1", nowhere, [&](Status s) { done = s.ok(); }), Completion::kInline);
  EXPECT_TRUE(done);
  EXPECT_FALSE(store.DrivesStats().has_value());
}

// The hot path of memory mode: a get that hits and a put's commit cost what
// MemoryStore::Get and CommitPut cost, with no wrapper, queue or copy of the
// key on top.
TEST(TieredStoreMemoryTest, GetsAndCommitsAllocateNothingBeyondTheMemoryStore) {
  TierHarness h(kPoolBytes, /*with_drives=*/false);
  TieredStore& store = h.store();
  storage::MemoryStore& memory = store.memory();
  const std::vector<uint8_t> bytes = Pattern(70'000, 9);
  const uint64_t sum = Checksum(bytes.data(), bytes.size());
  const std::string k1 = "a key longer than the short-string buffer/1";
  const std::string k2 = "a key longer than the short-string buffer/2";
  ASSERT_TRUE(PutNow(store, h.loop(), k1, bytes).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), k2, bytes).ok());
  const ReplyTo nowhere;

  const uint64_t direct_get = AllocationsOf([&] { EXPECT_TRUE(memory.Get(k1).ok()); });
  const uint64_t tier_get = AllocationsOf([&] {
    EXPECT_EQ(store.Get(k1, ReadNeed::kBytes, nowhere, [](Result<StoredValue> v) { EXPECT_TRUE(v.ok()); }),
              Completion::kInline);
  });
  EXPECT_EQ(tier_get, direct_get);
  const std::string absent = k1 + "/absent";
  const uint64_t direct_miss = AllocationsOf([&] { EXPECT_FALSE(memory.Get(absent).ok()); });
  const uint64_t tier_miss = AllocationsOf([&] {
    EXPECT_EQ(store.Get(absent, ReadNeed::kBytes, nowhere, [](Result<StoredValue> v) { EXPECT_FALSE(v.ok()); }),
              Completion::kInline);
  });
  EXPECT_LE(tier_miss, direct_miss);

  // The store keeps the room of its lists of dropped values from one commit
  // to the next (EventScope: two lists take turns): two overwrites make it.
  ASSERT_TRUE(PutNow(store, h.loop(), k1, bytes).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), k1, bytes).ok());
  // Each overwrites a value a reader still pins, so both commits take the
  // same path through the store (the old room is freed later, by the pin).
  Result<storage::ReadHandle> pin1 = memory.Get(k1);
  Result<storage::ReadHandle> pin2 = memory.Get(k2);
  ASSERT_TRUE(pin1.ok() && pin2.ok());
  storage::PendingPut put1 = Filled(store, bytes);
  storage::PendingPut put2 = Filled(store, bytes);
  const uint64_t direct_commit =
      AllocationsOf([&] { EXPECT_TRUE(memory.CommitPut(std::move(put1), k1, sum).ok()); });
  const uint64_t tier_commit = AllocationsOf([&] {
    EXPECT_EQ(store.Commit(std::move(put2), k2, sum, nowhere, [](Status s) { EXPECT_TRUE(s.ok()); }),
              Completion::kInline);
  });
  EXPECT_EQ(tier_commit, direct_commit);

  EXPECT_EQ(AllocationsOf([&] { EXPECT_TRUE(store.Exists(k1)); }),
            AllocationsOf([&] { EXPECT_TRUE(memory.Exists(k1)); }));
}

TEST(TieredStoreMemoryTest, AReaderKeepsItsPinnedBytesWhileTheValueIsOverwrittenAndDeleted) {
  TierHarness h(kPoolBytes, /*with_drives=*/false);
  TieredStore& store = h.store();
  const std::vector<uint8_t> old_bytes = Pattern(200'000, 11), new_bytes = Pattern(150'000, 12);
  ASSERT_TRUE(PutNow(store, h.loop(), "k", old_bytes).ok());
  Result<StoredValue> held = GetNow(store, h.loop(), "k");
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(held->pinned());

  ASSERT_TRUE(PutNow(store, h.loop(), "k", new_bytes).ok());
  EXPECT_EQ(*GetBytes(store, h.loop(), "k"), new_bytes);
  ASSERT_TRUE(DeleteNow(store, h.loop(), "k").ok());
  // Fill the pool over and over: free room is reused, the pinned bytes are not.
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(PutNow(store, h.loop(), "fill/" + std::to_string(i), Pattern(1 << 20, 100 + i)).ok());
  }
  EXPECT_EQ(BytesOf(*held), old_bytes);
  EXPECT_EQ(held->checksum(), Checksum(old_bytes.data(), old_bytes.size()));
}

TEST(TieredStoreMemoryTest, MoreDataThanThePoolEvictsTheLeastRecentlyUsed) {
  TierHarness h(8 << 20, /*with_drives=*/false);
  TieredStore& store = h.store();
  for (int i = 0; i < 32; ++i) {
    ASSERT_TRUE(PutNow(store, h.loop(), "v/" + std::to_string(i), Pattern(1 << 20, i)).ok()) << i;
  }
  EXPECT_EQ(GetNow(store, h.loop(), "v/0").status().code(), StatusCode::kNotFound) << "no drive to fall back on";
  EXPECT_EQ(*GetBytes(store, h.loop(), "v/31"), Pattern(1 << 20, 31));
  EXPECT_GT(store.MemoryStats().evictions, 0u);
  EXPECT_EQ(store.Counters().drive_hits, 0u);
}

}  // namespace
}  // namespace memkv::tier
