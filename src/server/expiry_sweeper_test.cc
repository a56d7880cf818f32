#include "server/expiry_sweeper.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>

namespace memkv::server {
namespace {

using namespace std::chrono_literals;

TEST(ExpirySweeperTest, SweepsAgainAtOnceWhileABatchIsFull) {
  std::atomic<int> calls{0};
  std::promise<void> drained;
  // An interval no test waits out: only the full batches may call again.
  ExpirySweeper sweeper(
      [&](size_t max) -> size_t {
        const int n = ++calls;
        if (n < 4) return max;  // a wave of expiries
        if (n == 4) drained.set_value();
        return 0;
      },
      std::chrono::hours(1));
  ASSERT_EQ(drained.get_future().wait_for(60s), std::future_status::ready);
  sweeper.Stop();
  EXPECT_EQ(calls.load(), 4);
}

TEST(ExpirySweeperTest, SweepsEveryIntervalAndStops) {
  std::atomic<int> calls{0};
  std::promise<void> third;
  ExpirySweeper sweeper(
      [&](size_t) -> size_t {
        if (++calls == 3) third.set_value();
        return 0;
      },
      1ms);
  ASSERT_EQ(third.get_future().wait_for(60s), std::future_status::ready);
  sweeper.Stop();
  const int after_stop = calls.load();
  sweeper.Stop();  // twice is fine
  EXPECT_EQ(calls.load(), after_stop);
}

}  // namespace
}  // namespace memkv::server
