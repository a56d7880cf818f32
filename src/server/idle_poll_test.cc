#include "server/idle_poll.h"

#include <gtest/gtest.h>

#include <vector>

namespace memkv::server {
namespace {

constexpr Nanos kUs = 1000;

TEST(IdlePollTest, StartsAtTheMostAndStaysWhileRequestsFollowSoon) {
  IdlePoll poll(100 * kUs);
  EXPECT_EQ(poll.window_ns(), 100 * kUs);
  for (Nanos idle : {5 * kUs, 60 * kUs, 100 * kUs}) {
    poll.OnIdle(idle);
    EXPECT_EQ(poll.window_ns(), 100 * kUs) << idle;
  }
}

TEST(IdlePollTest, SparseRequestsHalveTheWindowToZero) {
  IdlePoll poll(100 * kUs);
  std::vector<Nanos> windows;
  for (int i = 0; i < 8; ++i) {
    poll.OnIdle(250'000 * kUs);  // a sleep that timed out
    windows.push_back(poll.window_ns());
  }
  EXPECT_EQ(windows, (std::vector<Nanos>{50 * kUs, 25 * kUs, 12'500, 6'250, 3'125, 1'562, 0, 0}));
}

TEST(IdlePollTest, AShortSleepBringsPollingBack) {
  IdlePoll poll(100 * kUs);
  for (int i = 0; i < 10; ++i) poll.OnIdle(10'000 * kUs);
  ASSERT_EQ(poll.window_ns(), 0);
  poll.OnIdle(40 * kUs);  // slept, but a poll of 100 us would have caught it
  EXPECT_EQ(poll.window_ns(), 100 * kUs);
}

TEST(IdlePollTest, ZeroNeverPolls) {
  IdlePoll poll(0);
  EXPECT_EQ(poll.window_ns(), 0);
  poll.OnIdle(0);
  EXPECT_EQ(poll.window_ns(), 0);
  poll.OnIdle(5 * kUs);
  EXPECT_EQ(poll.window_ns(), 0);
}

}  // namespace
}  // namespace memkv::server
