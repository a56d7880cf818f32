// CompletionInbox and Callback: completions reach their loop in order, wake
// it, and are dropped (with what they hold) once the loop has closed.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <memory>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "tier/callback.h"
#include "tier/completion_inbox.h"
#include "tier/io_threads.h"

namespace memkv::tier {
namespace {

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

TEST(CallbackTest, HoldsMoveOnlyCapturesAndMovesWithThem) {
  auto owned = std::make_unique<int>(41);
  Callback<int(int)> add([p = std::move(owned)](int x) { return *p + x; });
  Callback<int(int)> moved = std::move(add);
  EXPECT_FALSE(static_cast<bool>(add));  // NOLINT(bugprone-use-after-move): moved-from is empty
  ASSERT_TRUE(static_cast<bool>(moved));
  EXPECT_EQ(moved(1), 42);
}

TEST(CompletionInboxTest, PostsWakeTheLoopAndAreTakenInOrderWithTheirOwners) {
  UniqueFd wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  CompletionInbox inbox(wake.get());
  EXPECT_FALSE(Readable(wake.get()));
  std::vector<int> ran;
  std::thread poster([&] {
    for (int i = 0; i < 3; ++i) inbox.Post(10 + i, [&ran, i] { ran.push_back(i); });
  });
  poster.join();
  EXPECT_TRUE(Readable(wake.get()));
  auto taken = inbox.Take();
  ASSERT_EQ(taken.size(), 3u);
  for (size_t i = 0; i < taken.size(); ++i) {
    EXPECT_EQ(taken[i].first, 10 + i);
    taken[i].second();
  }
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(inbox.Take().empty());
}

TEST(CompletionInboxTest, AfterCloseWhatWasPendingAndLaterPostsAreDroppedNotRun) {
  UniqueFd wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  CompletionInbox inbox(wake.get());
  auto held = std::make_shared<int>(0);  // stands for a pin a completion holds
  bool ran = false;
  inbox.Post(1, [held, &ran] { ran = true; });
  EXPECT_EQ(held.use_count(), 2);
  inbox.Close();
  EXPECT_EQ(held.use_count(), 1) << "the pending completion was destroyed by Close";
  inbox.Post(1, [held, &ran] { ran = true; });
  EXPECT_EQ(held.use_count(), 1) << "a post after Close is destroyed at once";
  EXPECT_TRUE(inbox.Take().empty());
  EXPECT_FALSE(ran);
}

TEST(IoThreadsTest, RunsEveryJobSubmittedEvenWhenDestroyedWithJobsQueued) {
  std::atomic<int> ran{0};
  {
    IoThreads io(2);
    for (int i = 0; i < 100; ++i) io.Submit([&ran] { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace memkv::tier
