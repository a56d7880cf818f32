// The extent store through the fault-injecting engine: drives that fail,
// fill up or lie.
#include <gtest/gtest.h>

#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <functional>
#include <thread>

#include "drive/extent_store.h"
#include "drive/store_fixture.h"
#include "drive/test_util.h"

namespace memkv::drive {
namespace {

constexpr uint64_t kBlock = 64 << 10;

// Puts v0..v{n-1}, one extent each; with 2 drives v_even land on drive 0.
void PutSpread(StoreFixture& t, int n) {
  for (int i = 0; i < n; ++i) ASSERT_TRUE(t.store->Put("v" + std::to_string(i), Pattern(5000, uint64_t(i))).ok());
}

TEST(ExtentStoreFaults, AWriteErrorTakesTheDriveOfflineAndThePutGoesElsewhere) {
  StoreFixture t(2);
  ASSERT_TRUE(t.Format().ok());
  ASSERT_TRUE(t.OpenFaulty().ok());
  PutSpread(t, 4);
  t.faults->FailNth(1, IoKind::kWrite, 1, EIO, /*sticky=*/true);
  ASSERT_TRUE(t.store->Put("after", Pattern(3 * kBlock, 50)).ok()) << "retried on drive 0";
  ExtentStoreStats st = t.store->Stats();
  EXPECT_TRUE(st.degraded);
  EXPECT_EQ(st.drives[1].state, DriveState::kOffline);
  EXPECT_NE(st.drives[1].reason.find("EIO"), std::string::npos) << st.drives[1].reason;
  EXPECT_EQ(st.drives[0].state, DriveState::kOnline);
  EXPECT_GT(st.io_errors, 0u);
  EXPECT_EQ(t.Get("v1").status().code(), StatusCode::kNotFound) << "its values are misses";
  EXPECT_EQ(*t.Get("v0"), Pattern(5000, 0)) << "the other drive keeps serving";
  EXPECT_EQ(*t.Get("after"), Pattern(3 * kBlock, 50));

  ASSERT_TRUE(t.Open().ok());  // clean engine: drive 1 is back, readmitted empty
  EXPECT_FALSE(t.store->Stats().degraded);
  EXPECT_EQ(*t.Get("v2"), Pattern(5000, 2));
  EXPECT_EQ(*t.Get("after"), Pattern(3 * kBlock, 50));
  EXPECT_FALSE(t.store->Exists("v1"));
}

TEST(ExtentStoreFaults, AReadErrorIsAMissAndTheOtherDrivesServe) {
  StoreFixture t(2);
  ASSERT_TRUE(t.Format().ok());
  ASSERT_TRUE(t.OpenFaulty().ok());
  PutSpread(t, 6);
  t.faults->FailNth(0, IoKind::kRead, 1, EIO, /*sticky=*/true);
  auto miss = t.Get("v0");
  EXPECT_EQ(miss.status().code(), StatusCode::kNotFound);
  EXPECT_NE(miss.status().message().find("EIO"), std::string::npos) << miss.status().message();
  EXPECT_TRUE(t.store->Stats().degraded);
  EXPECT_FALSE(t.store->Exists("v2")) << "every value on the failed drive is gone from the index";
  EXPECT_EQ(*t.Get("v1"), Pattern(5000, 1));
  EXPECT_EQ(*t.Get("v5"), Pattern(5000, 5));
  ASSERT_TRUE(t.store->Put("new", Pattern(2 * kBlock, 9)).ok());
  EXPECT_EQ(*t.Get("new"), Pattern(2 * kBlock, 9));
}

TEST(ExtentStoreFaults, DiskFullIsACleanResourceExhausted) {
  StoreFixture t(2);
  ASSERT_TRUE(t.Format().ok());
  ASSERT_TRUE(t.OpenFaulty().ok());
  const uint64_t data_offset = [&] {
    auto sb = DecodeSuperblock(ReadRaw(t.paths[0], 0, kDriveHeaderBytes), "d0");
    return sb->data_offset;
  }();
  // Drive 0's filesystem fills after its third extent, drive 1's after its
  // fifth (a fresh drive fills from its first unit up).
  t.faults->LimitWrites(0, data_offset + 3 * kBlock);
  t.faults->LimitWrites(1, data_offset + 5 * kBlock);
  int stored = 0;
  Status s;
  for (int i = 0; i < 100 && s.ok(); ++i) {
    s = t.store->Put("k" + std::to_string(i), Pattern(kBlock, uint64_t(i)));
    if (s.ok()) stored++;
  }
  ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_EQ(stored, 8);
  EXPECT_NE(s.message().find(t.paths[0]), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(t.paths[1]), std::string::npos) << s.message();
  ExtentStoreStats st = t.store->Stats();
  EXPECT_EQ(st.drives[0].state, DriveState::kFull);
  EXPECT_EQ(st.drives[1].state, DriveState::kFull);
  EXPECT_NE(st.drives[0].reason.find("ENOSPC"), std::string::npos) << st.drives[0].reason;
  EXPECT_FALSE(st.degraded) << "full is not failed";
  for (int i = 0; i < stored; ++i) EXPECT_EQ(*t.Get("k" + std::to_string(i)), Pattern(kBlock, uint64_t(i)));
  ASSERT_TRUE(t.store->Delete("k0").ok()) << "the journal still takes records";
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(t.store->Stats().keys, uint64_t(stored - 1));
}

TEST(ExtentStoreFaults, AJournalWriteErrorOnOneDriveStillAcknowledgesDurably) {
  StoreFixture t(2);
  ASSERT_TRUE(t.Format().ok());
  ASSERT_TRUE(t.OpenFaulty().ok());
  // The first put's extent goes to drive 0; drive 1 only sees the journal write.
  t.faults->FailNth(1, IoKind::kWrite, 1, EIO, /*sticky=*/true);
  ASSERT_TRUE(t.store->Put("k", Pattern(1000, 1)).ok());
  EXPECT_EQ(t.store->Stats().drives[1].state, DriveState::kOffline);
  EXPECT_NE(t.store->Stats().drives[1].reason.find("journal"), std::string::npos);
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(*t.Get("k"), Pattern(1000, 1));
}

TEST(ExtentStoreFaults, ASyncErrorTakesTheDriveOfflineAndThePutRetries) {
  StoreFixture t(2);
  ASSERT_TRUE(t.Format().ok());
  ASSERT_TRUE(t.OpenFaulty().ok());
  t.faults->FailNth(0, IoKind::kSync, 1, EIO);
  ASSERT_TRUE(t.store->Put("k", Pattern(1000, 1)).ok());
  EXPECT_EQ(t.store->Stats().drives[0].state, DriveState::kOffline);
  EXPECT_EQ(*t.Get("k"), Pattern(1000, 1));
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(*t.Get("k"), Pattern(1000, 1));
}

TEST(ExtentStoreFaults, EveryDriveFailingIsAnErrorNotACrash) {
  StoreFixture t(2);
  ASSERT_TRUE(t.Format().ok());
  ASSERT_TRUE(t.OpenFaulty().ok());
  PutSpread(t, 2);
  for (uint32_t d = 0; d < 2; ++d) {
    t.faults->FailNth(d, IoKind::kWrite, 1, EIO, true);
    t.faults->FailNth(d, IoKind::kRead, 1, EIO, true);
  }
  Status s = t.store->Put("k", Pattern(1000, 1));
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.code() == StatusCode::kIoError || s.code() == StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(t.Get("v0").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t.store->Put("k2", Pattern(10, 1)).code(), StatusCode::kUnavailable);
  EXPECT_TRUE(t.store->Stats().degraded);
  ASSERT_TRUE(t.Open().ok()) << "the files are fine; a clean reopen works";
}

TEST(ExtentStoreFaults, ADriveThatLiesAboutAWriteIsCaughtOnRead) {
  StoreFixture t(1);
  ASSERT_TRUE(t.Format().ok());
  ASSERT_TRUE(t.OpenFaulty().ok());
  t.faults->TearNthWrite(0, 1, 4096);  // the extent's first unit lands, the other 15 do not
  ASSERT_TRUE(t.store->Put("k", Pattern(kBlock, 3)).ok());
  auto got = t.Get("k");
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t.store->Stats().checksum_failures, 1u);
}

TEST(ExtentStoreFaults, FlushesWithinSeesAFlushThatRunsLongAndRemembersTheLastSlowOnes) {
  constexpr int64_t kLimit = 1'000'000;  // 1 ms
  constexpr int64_t kNoLimit = int64_t{3600} * 1'000'000'000;
  StoreFixture t(2);
  ASSERT_TRUE(t.Format().ok());
  ASSERT_TRUE(t.OpenFaulty().ok());
  ASSERT_EQ(t.store->sync_mode(), SyncMode::kAlways);
  ASSERT_TRUE(t.store->Put("before", Pattern(5000, 1)).ok());
  EXPECT_TRUE(t.store->FlushesWithin(kNoLimit));

  // A flush that stalls: the put's commit waits in its fdatasync.
  t.faults->HoldSyncs(true);
  Status stalled_put;
  std::thread putter([&] { stalled_put = t.store->Put("stalled", Pattern(5000, 2)); });
  ASSERT_TRUE(PollFor([&] { return t.faults->syncs_held() == 1; }));
  EXPECT_TRUE(PollFor([&] { return !t.store->FlushesWithin(kLimit); }))
      << "a flush running longer than the limit is seen while it runs";
  EXPECT_TRUE(t.store->FlushesWithin(kNoLimit)) << "and not against a limit it has not reached";
  t.faults->HoldSyncs(false);
  putter.join();
  ASSERT_TRUE(stalled_put.ok()) << stalled_put.ToString();
  EXPECT_FALSE(t.store->FlushesWithin(kLimit)) << "the slow flush counts after it ended";

  // It stays among the recent flushes until kRecentFlushes others follow.
  for (size_t i = 0; i + 1 < ExtentStore::kRecentFlushes; ++i) {
    ASSERT_TRUE(t.store->Put("after" + std::to_string(i), Pattern(5000, 3 + i)).ok());
  }
  EXPECT_FALSE(t.store->FlushesWithin(kLimit)) << "one flush short of pushing it out";
  ASSERT_TRUE(t.store->Put("last", Pattern(5000, 99)).ok());
  EXPECT_TRUE(t.store->FlushesWithin(kNoLimit));
  EXPECT_EQ(*t.Get("stalled"), Pattern(5000, 2));
}

// The group commit's wait for puts still writing their values
// (ExtentStoreOptions::staged_wait_ns; here long enough never to run out).
class StagedPuts : public ::testing::Test {
 protected:
  static constexpr int64_t kForever = int64_t{600} * 1'000'000'000;

  void SetUp() override {
    t.staged_wait_ns = kForever;
    ASSERT_TRUE(t.Format().ok());
    ASSERT_TRUE(t.OpenFaulty().ok());
    ASSERT_EQ(t.store->sync_mode(), SyncMode::kAlways);
    ASSERT_TRUE(t.store->Put("warm", Pattern(5000, 1)).ok());
    data_offset = DecodeSuperblock(ReadRaw(t.paths[0], 0, kDriveHeaderBytes), "d0")->data_offset;
    before = t.store->Stats();
  }

  // Starts `put` on a thread of its own with its value write held, then a
  // put of "a" that finds it staged: "a" leads the next commit and waits.
  void StartHeldThenA(std::function<Status()> put) {
    t.faults->HoldNextWrite(0, data_offset);
    held = std::thread([this, put = std::move(put)] { held_status = put(); });
    ASSERT_TRUE(PollFor([&] { return t.faults->writes_held() == 1; }));
    a = std::thread([this] {
      a_status = t.store->Put("a", Pattern(5000, 2));
      a_done = true;
    });
    ASSERT_TRUE(PollFor([&] { return t.store->Stats().commit_waits == before.commit_waits + 1; }))
        << "the leader waits for the put whose value is still being written";
  }

  void TearDown() override {
    t.faults->ReleaseWrite();
    if (held.joinable()) held.join();
    if (a.joinable()) a.join();
  }

  StoreFixture t{1};
  uint64_t data_offset = 0;
  ExtentStoreStats before;
  std::thread held;
  std::thread a;
  Status held_status;
  Status a_status;
  std::atomic<bool> a_done{false};
};

TEST_F(StagedPuts, APutWritingItsValueJoinsTheCommitThatWaitedForIt) {
  StartHeldThenA([&] { return t.store->Put("b", Pattern(3 * kBlock, 3)); });
  EXPECT_FALSE(a_done) << "nothing is committed while the leader waits";
  EXPECT_EQ(t.store->Stats().journal_commits, before.journal_commits);
  t.faults->ReleaseWrite();
  held.join();
  a.join();
  ASSERT_TRUE(held_status.ok()) << held_status.ToString();
  ASSERT_TRUE(a_status.ok()) << a_status.ToString();
  EXPECT_EQ(t.store->Stats().journal_commits, before.journal_commits + 1) << "one commit, one flush, both puts";
  EXPECT_EQ(*t.Get("a"), Pattern(5000, 2));
  EXPECT_EQ(*t.Get("b"), Pattern(3 * kBlock, 3));
}

TEST_F(StagedPuts, AStagedPutThatFailsLetsTheLeaderGoOn) {
  // A put whose bytes do not match the checksum given for it: refused after
  // its write, so it never joins the commit queue.
  const std::vector<uint8_t> value = Pattern(kBlock, 4);
  const iovec one{const_cast<uint8_t*>(value.data()), value.size()};
  StartHeldThenA([&] { return t.store->PutIov("b", std::span<const iovec>(&one, 1), /*checksum=*/12345); });
  t.faults->ReleaseWrite();
  held.join();
  EXPECT_EQ(held_status.code(), StatusCode::kInvalidArgument) << held_status.ToString();
  ASSERT_TRUE(PollFor([&] { return a_done.load(); })) << "the leader stops waiting when the staged put gives up";
  a.join();
  ASSERT_TRUE(a_status.ok()) << a_status.ToString();
  EXPECT_EQ(t.store->Stats().journal_commits, before.journal_commits + 1);
  EXPECT_EQ(*t.Get("a"), Pattern(5000, 2));
  EXPECT_FALSE(t.store->Exists("b"));
}

TEST(ExtentStoreStagedPuts, WithoutAWaitALeaderCommitsAlone) {
  StoreFixture t(1);
  t.staged_wait_ns = 0;
  ASSERT_TRUE(t.Format().ok());
  ASSERT_TRUE(t.OpenFaulty().ok());
  const uint64_t data_offset = DecodeSuperblock(ReadRaw(t.paths[0], 0, kDriveHeaderBytes), "d0")->data_offset;
  const ExtentStoreStats before = t.store->Stats();
  t.faults->HoldNextWrite(0, data_offset);
  Status b_status;
  std::thread b([&] { b_status = t.store->Put("b", Pattern(5000, 3)); });
  ASSERT_TRUE(PollFor([&] { return t.faults->writes_held() == 1; }));
  ASSERT_TRUE(t.store->Put("a", Pattern(5000, 2)).ok()) << "returns while b's value is still being written";
  EXPECT_EQ(t.store->Stats().journal_commits, before.journal_commits + 1);
  EXPECT_EQ(t.store->Stats().commit_waits, before.commit_waits);
  t.faults->ReleaseWrite();
  b.join();
  ASSERT_TRUE(b_status.ok()) << b_status.ToString();
  EXPECT_EQ(t.store->Stats().journal_commits, before.journal_commits + 2);
}

}  // namespace
}  // namespace memkv::drive
