// TieredStore with drives in storage.sync interval: small puts deferred to
// the end of an event loop's turn (ReplyTo::turn) and written by FinishTurn
// in one drive commit, answered in the order they came, each to its owner;
// and in storage.sync always, where FinishTurn flushes them on the caller's
// thread while flushes are fast, else on an I/O thread.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "drive/test_util.h"
#include "tier/tier_test_util.h"

namespace memkv::tier {
namespace {

using drive::Pattern;

constexpr uint64_t kPoolBytes = 4 << 20;

class TurnTest : public ::testing::Test {
 protected:
  explicit TurnTest(drive::SyncMode sync = drive::SyncMode::kInterval, TieredStoreOptions options = {})
      : h_(kPoolBytes, /*with_drives=*/true, options, 8 << 20, nullptr, sync) {
    reply_ = h_.loop().reply();
    reply_.turn = &turn_;
  }

  // A reply for `owner` that defers to this test's turn.
  ReplyTo ReplyFor(uint64_t owner) const {
    ReplyTo r = reply_;
    r.owner = owner;
    return r;
  }

  storage::PendingPut Filled(const std::string& key, const std::vector<uint8_t>& bytes) {
    Result<storage::PendingPut> put = h_.store().Reserve(bytes.size(), key);
    EXPECT_TRUE(put.ok()) << put.status().ToString();
    CopyInto(*put, bytes);
    return std::move(put).value();
  }

  Completion Put(uint64_t owner, const std::string& key, const std::vector<uint8_t>& bytes,
                 std::optional<Status>* result) {
    return h_.store().Commit(Filled(key, bytes), key, Checksum(bytes.data(), bytes.size()), ReplyFor(owner),
                             [result](Status s) { *result = std::move(s); });
  }

  TierHarness h_;
  TurnCommits turn_;
  ReplyTo reply_;
};

TEST_F(TurnTest, SmallPutsWaitForTheEndOfTheTurnAndAreAnsweredInOrderEachToItsOwner) {
  TieredStore& store = h_.store();
  const std::vector<uint8_t> a1 = Pattern(4096, 1), b = Pattern(10'000, 2), a2 = Pattern(3000, 3);
  const std::vector<uint8_t> c = Pattern(4096, 4), d = Pattern(70'000, 5);
  std::optional<Status> put_a1, put_b, put_a2;
  std::optional<std::vector<Status>> batch;

  EXPECT_EQ(Put(7, "a", a1, &put_a1), Completion::kTurn);
  EXPECT_EQ(Put(8, "b", b, &put_b), Completion::kTurn);
  std::vector<PutCommit> many;
  many.emplace_back(Filled("c", c), "c", Checksum(c.data(), c.size()));
  many.emplace_back(Filled("d", d), "d", Checksum(d.data(), d.size()));
  EXPECT_EQ(store.CommitMany(std::move(many), ReplyFor(9), [&](std::vector<Status> s) { batch = std::move(s); }),
            Completion::kTurn);
  // The same key again in the same turn: written after the first, so it wins.
  EXPECT_EQ(Put(7, "a", a2, &put_a2), Completion::kTurn);
  EXPECT_FALSE(turn_.empty());
  EXPECT_FALSE(put_a1 || put_b || put_a2 || batch) << "nothing is answered before the turn ends";
  EXPECT_FALSE(store.Exists("b")) << "nor published";

  std::vector<std::pair<uint64_t, CompletionInbox::Closure>> done = store.FinishTurn(turn_);
  EXPECT_TRUE(turn_.empty());
  ASSERT_EQ(done.size(), 4u);
  EXPECT_EQ(done[0].first, 7u);
  EXPECT_EQ(done[1].first, 8u);
  EXPECT_EQ(done[2].first, 9u);
  EXPECT_EQ(done[3].first, 7u);
  EXPECT_FALSE(put_a1) << "completions run where the loop runs them";
  for (auto& [owner, closure] : done) closure();
  ASSERT_TRUE(put_a1 && put_b && put_a2 && batch);
  EXPECT_TRUE(put_a1->ok()) << put_a1->ToString();
  EXPECT_TRUE(put_b->ok()) << put_b->ToString();
  EXPECT_TRUE(put_a2->ok()) << put_a2->ToString();
  ASSERT_EQ(batch->size(), 2u);
  EXPECT_TRUE((*batch)[0].ok() && (*batch)[1].ok());

  EXPECT_EQ(GetBytes(store, h_.loop(), "a").value(), a2);
  EXPECT_EQ(GetBytes(store, h_.loop(), "d").value(), d);
  drive::ExtentStore& drives = h_.ReopenDrives();
  EXPECT_EQ(drives.Get("a").value(), a2) << "the later put of the key is the one on the drives";
  EXPECT_EQ(drives.Get("b").value(), b);
  EXPECT_EQ(drives.Get("c").value(), c);
  EXPECT_EQ(drives.Get("d").value(), d);
}

TEST_F(TurnTest, AFailedPutIsAnsweredWithItsOwnStatusAndTheOthersAreStored) {
  TieredStore& store = h_.store();
  const std::vector<uint8_t> good = Pattern(4096, 1), bad = Pattern(4096, 2);
  std::optional<Status> put_good, put_bad;
  EXPECT_EQ(Put(1, "good", good, &put_good), Completion::kTurn);
  // A checksum that does not match the bytes: refused by the drives.
  EXPECT_EQ(store.Commit(Filled("bad", bad), "bad", Checksum(bad.data(), bad.size()) + 1, ReplyFor(2),
                         [&](Status s) { put_bad = std::move(s); }),
            Completion::kTurn);
  for (auto& [owner, closure] : store.FinishTurn(turn_)) closure();
  ASSERT_TRUE(put_good && put_bad);
  EXPECT_TRUE(put_good->ok()) << put_good->ToString();
  EXPECT_EQ(put_bad->code(), StatusCode::kInvalidArgument) << put_bad->ToString();
  EXPECT_EQ(GetBytes(store, h_.loop(), "good").value(), good);
  EXPECT_EQ(GetBytes(store, h_.loop(), "bad").status().code(), StatusCode::kNotFound);
}

TEST_F(TurnTest, WithoutATurnASmallPutIsWrittenInline) {
  const std::vector<uint8_t> bytes = Pattern(4096, 1);
  std::optional<Status> result;
  EXPECT_EQ(h_.store().Commit(Filled("k", bytes), "k", Checksum(bytes.data(), bytes.size()), h_.loop().reply(),
                              [&](Status s) { result = std::move(s); }),
            Completion::kInline);
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->ok());
  EXPECT_TRUE(turn_.empty());
}

// flush_on_loop_ns 0: every turn goes to an I/O thread.
class TurnAlwaysTest : public TurnTest {
 protected:
  TurnAlwaysTest() : TurnTest(drive::SyncMode::kAlways) {}
};

TEST_F(TurnAlwaysTest, ATurnsPutsThatMustBeFlushedGoToAnIoThreadAsOneJobAndComeBackThroughTheInbox) {
  const std::vector<uint8_t> a = Pattern(4096, 1), b = Pattern(20'000, 2), big = Pattern(300'000, 3);
  std::optional<Status> put_a, put_b, put_big;
  EXPECT_EQ(Put(1, "a", a, &put_a), Completion::kPending);
  EXPECT_EQ(Put(1, "b", b, &put_b), Completion::kPending);
  EXPECT_FALSE(turn_.empty()) << "small puts wait for the end of the turn";
  // A value the drives do not buffer has an I/O job of its own at once.
  EXPECT_EQ(Put(1, "big", big, &put_big), Completion::kPending);
  EXPECT_TRUE(h_.store().FinishTurn(turn_).empty()) << "answered through the inbox, not by FinishTurn";
  EXPECT_TRUE(turn_.empty());
  ASSERT_TRUE(h_.loop().RunUntil([&] { return put_a && put_b && put_big; }));
  EXPECT_TRUE(put_a->ok()) << put_a->ToString();
  EXPECT_TRUE(put_b->ok()) << put_b->ToString();
  EXPECT_TRUE(put_big->ok()) << put_big->ToString();
  drive::ExtentStore& drives = h_.ReopenDrives();
  EXPECT_EQ(drives.Get("a").value(), a);
  EXPECT_EQ(drives.Get("b").value(), b);
  EXPECT_EQ(drives.Get("big").value(), big);
}

TieredStoreOptions FlushOnLoop(int64_t limit_ns) {
  TieredStoreOptions options;
  options.flush_on_loop_ns = limit_ns;
  return options;
}

// Flushes on the loop while they take at most an hour: every one here.
class TurnOnLoopTest : public TurnTest {
 protected:
  TurnOnLoopTest() : TurnTest(drive::SyncMode::kAlways, FlushOnLoop(int64_t{3600} * 1'000'000'000)) {}
};

TEST_F(TurnOnLoopTest, WhileFlushesAreFastFinishTurnFlushesTheTurnsPutsItselfAndAnswersThem) {
  TieredStore& store = h_.store();
  const std::vector<uint8_t> a = Pattern(4096, 1), b = Pattern(20'000, 2);
  std::optional<Status> put_a, put_b;
  EXPECT_EQ(Put(1, "a", a, &put_a), Completion::kPending);
  EXPECT_EQ(Put(2, "b", b, &put_b), Completion::kPending);
  std::vector<std::pair<uint64_t, CompletionInbox::Closure>> done = store.FinishTurn(turn_);
  ASSERT_EQ(done.size(), 2u) << "answered by FinishTurn, not through the inbox";
  EXPECT_EQ(done[0].first, 1u);
  EXPECT_EQ(done[1].first, 2u);
  EXPECT_TRUE(store.Exists("a")) << "published before FinishTurn returned";
  for (auto& [owner, closure] : done) closure();
  ASSERT_TRUE(put_a && put_b);
  EXPECT_TRUE(put_a->ok()) << put_a->ToString();
  EXPECT_TRUE(put_b->ok()) << put_b->ToString();
  EXPECT_EQ(store.Counters().loop_commits, 1u);
  drive::ExtentStore& drives = h_.ReopenDrives();
  EXPECT_EQ(drives.Get("a").value(), a);
  EXPECT_EQ(drives.Get("b").value(), b);
}

// Flushes on the loop only while they take at most 1 ns: none does.
class TurnSlowFlushTest : public TurnTest {
 protected:
  TurnSlowFlushTest() : TurnTest(drive::SyncMode::kAlways, FlushOnLoop(1)) {}
};

TEST_F(TurnSlowFlushTest, AfterAFlushSlowerThanTheLimitTheTurnGoesToAnIoThread) {
  TieredStore& store = h_.store();
  // A put on its own (no turn): an I/O thread writes and flushes it.
  const std::vector<uint8_t> first = Pattern(4096, 1), a = Pattern(4096, 2);
  std::optional<Status> put_first, put_a;
  EXPECT_EQ(store.Commit(Filled("first", first), "first", Checksum(first.data(), first.size()), h_.loop().reply(),
                         [&](Status s) { put_first = std::move(s); }),
            Completion::kPending);
  ASSERT_TRUE(h_.loop().RunUntil([&] { return put_first.has_value(); }));
  ASSERT_TRUE(put_first->ok()) << put_first->ToString();

  EXPECT_EQ(Put(1, "a", a, &put_a), Completion::kPending);
  EXPECT_TRUE(store.FinishTurn(turn_).empty()) << "the last flush took longer than 1 ns: through the inbox";
  ASSERT_TRUE(h_.loop().RunUntil([&] { return put_a.has_value(); }));
  EXPECT_TRUE(put_a->ok()) << put_a->ToString();
  EXPECT_EQ(store.Counters().loop_commits, 0u);
  EXPECT_EQ(h_.ReopenDrives().Get("a").value(), a);
}

}  // namespace
}  // namespace memkv::tier
