#include "client/store_shed.h"

#include <gtest/gtest.h>

namespace memkv::client {
namespace {

constexpr Nanos kMs = 1'000'000;

TEST(StoreShedderTest, ShedsBeyondStoresInFlightCountingEveryKey) {
  ClientCounters counters;
  StoreShedder shedder(/*latency_ms=*/0, /*max_inflight=*/2, &counters);
  ASSERT_TRUE(shedder.Admit("Put", 1).ok());
  ASSERT_TRUE(shedder.Admit("BatchPut", 4).ok());
  Status shed = shedder.Admit("BatchPut", 3);
  EXPECT_EQ(shed.code(), StatusCode::kBusy);
  EXPECT_NE(shed.message().find("BatchPut shed by the client"), std::string::npos) << shed.message();
  EXPECT_NE(shed.message().find("store_shed_inflight is 2"), std::string::npos) << shed.message();
  EXPECT_EQ(counters.stores_shed.load(), 3u);
  shedder.Finish(1 * kMs);
  EXPECT_TRUE(shedder.Admit("Put", 1).ok());
}

TEST(StoreShedderTest, ShedsWhileTheAverageIsHighButLetsOneStoreThrough) {
  ClientCounters counters;
  StoreShedder shedder(/*latency_ms=*/100, /*max_inflight=*/0, &counters);
  ASSERT_TRUE(shedder.Admit("Put", 1).ok());
  shedder.Finish(2000 * kMs);  // the tier is slow
  // Nothing in flight: one store still goes, to measure the tier.
  ASSERT_TRUE(shedder.Admit("Put", 1).ok());
  Status shed = shedder.Admit("Put", 1);
  EXPECT_EQ(shed.code(), StatusCode::kBusy);
  EXPECT_NE(shed.message().find("exceeds store_shed_latency_ms 100"), std::string::npos) << shed.message();
  EXPECT_EQ(counters.stores_shed.load(), 1u);
  // The tier recovers: fast stores bring the average under the bound.
  shedder.Finish(1 * kMs);
  for (int i = 0; i < 64 && shedder.average_ns() > 100 * kMs; ++i) {
    ASSERT_TRUE(shedder.Admit("Put", 1).ok()) << i;  // none in flight: admitted
    shedder.Finish(1 * kMs);
  }
  EXPECT_LE(shedder.average_ns(), 100 * kMs);
  ASSERT_TRUE(shedder.Admit("Put", 1).ok());
  EXPECT_TRUE(shedder.Admit("Put", 1).ok());  // two in flight: not slow any more
  EXPECT_EQ(counters.stores_shed.load(), 1u);
}

TEST(StoreShedderTest, ZeroTurnsEachBoundOff) {
  ClientCounters counters;
  StoreShedder shedder(0, 0, &counters);
  ASSERT_TRUE(shedder.Admit("Put", 1).ok());
  shedder.Finish(60'000 * kMs);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(shedder.Admit("Put", 1).ok());
  EXPECT_EQ(counters.stores_shed.load(), 0u);
}

TEST(StoreShedderTest, TicketFinishesOnlyAnAdmittedStore) {
  ClientCounters counters;
  StoreShedder shedder(0, 1, &counters);
  {
    StoreTicket first(&shedder, "Put", 1);
    ASSERT_TRUE(first.status().ok());
    StoreTicket second(&shedder, "Put", 1);
    EXPECT_EQ(second.status().code(), StatusCode::kBusy);
  }  // both gone: the one admitted store finished, the shed one did not count
  StoreTicket third(&shedder, "Put", 1);
  EXPECT_TRUE(third.status().ok());
  EXPECT_EQ(counters.stores_shed.load(), 1u);
}

}  // namespace
}  // namespace memkv::client
