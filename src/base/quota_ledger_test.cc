// QuotaLedger: holds refused past the quota, given back on destruction,
// others' holds seen by a put, a reset leaving old holds out of the count,
// and threads holding at once never passing the quota together.
#include "base/quota_ledger.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace memkv {
namespace {

TEST(QuotaLedgerTest, HoldsPastTheQuotaAreRefusedAndDestructionGivesThemBack) {
  QuotaLedger ledger("tenants[].drive_quota");
  ledger.Reset(2);
  Result<QuotaHold> a = ledger.Hold(0, "team-a", 100, 60);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(ledger.Held(0), 60u);
  Result<QuotaHold> b = ledger.Hold(0, "team-a", 100, 50);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(b.status().message().find("team-a"), std::string::npos);
  EXPECT_NE(b.status().message().find("tenants[].drive_quota"), std::string::npos);
  EXPECT_EQ(ledger.Refusals(0), 1u);
  EXPECT_TRUE(ledger.Hold(1, "team-b", 100, 50).ok()) << "another tenant's quota is its own";
  EXPECT_EQ(ledger.Held(1), 0u) << "the temporary hold was given back";
  {
    Result<QuotaHold> c = ledger.Hold(0, "team-a", 100, 40);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(ledger.Others(0, c->bytes()), 60u);
    EXPECT_EQ(ledger.Held(0), 100u);
  }
  EXPECT_EQ(ledger.Held(0), 60u);
  QuotaHold moved = std::move(a).value();
  EXPECT_EQ(ledger.Held(0), 60u) << "moving a hold keeps it";
  moved.Release();
  EXPECT_EQ(ledger.Held(0), 0u);
}

TEST(QuotaLedgerTest, AValueLargerThanTheQuotaAndNoQuotaAtAll) {
  QuotaLedger ledger("tenants[].dram_quota");
  ledger.Reset(1);
  Result<QuotaHold> big = ledger.Hold(0, "team-a", 100, 101);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("larger than its whole quota"), std::string::npos);
  Result<QuotaHold> none = ledger.Hold(0, "team-a", 0, 1 << 30);
  ASSERT_TRUE(none.ok()) << "no quota: granted, not counted";
  EXPECT_EQ(ledger.Held(0), 0u);
  EXPECT_TRUE(ledger.Hold(7, "gone", 100, 10).ok()) << "a tenant the ledger does not know has no quota here";
}

TEST(QuotaLedgerTest, AResetLeavesOlderHoldsOutOfTheCount) {
  QuotaLedger ledger("tenants[].drive_quota");
  ledger.Reset(1);
  Result<QuotaHold> old = ledger.Hold(0, "team-a", 100, 70);
  ASSERT_TRUE(old.ok());
  ledger.Reset(1);
  EXPECT_EQ(ledger.Held(0), 0u);
  EXPECT_FALSE(ledger.Counts(0, *old));
  Result<QuotaHold> fresh = ledger.Hold(0, "team-a", 100, 70);
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(ledger.Counts(0, *fresh));
  old->Release();
  EXPECT_EQ(ledger.Held(0), 70u) << "an old hold gives back to its own counter";
}

TEST(QuotaLedgerTest, ThreadsHoldingAtOnceNeverPassTheQuotaTogether) {
  QuotaLedger ledger("tenants[].dram_quota");
  ledger.Reset(1);
  constexpr uint64_t kQuota = 1000;
  std::atomic<uint64_t> most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        Result<QuotaHold> hold = ledger.Hold(0, "team-a", kQuota, 300);
        const uint64_t held = ledger.Held(0);
        uint64_t seen = most.load();
        while (held > seen && !most.compare_exchange_weak(seen, held)) {
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(most.load(), kQuota);
  EXPECT_EQ(ledger.Held(0), 0u);
}

}  // namespace
}  // namespace memkv
