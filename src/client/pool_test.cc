#include "client/pool.h"

#include <gtest/gtest.h>

namespace memkv::client {
namespace {

constexpr Nanos kMs = 1'000'000;

TEST(ServerHealthTest, HealthyUntilAFailure) {
  ServerHealth h;
  EXPECT_TRUE(h.Check(0, "s:1").ok());
}

TEST(ServerHealthTest, DownForTheBackoffNamingServerCauseAndRetry) {
  ServerHealth h;
  h.OnFailure(1000 * kMs, Unavailable("connect to s:1: Connection refused"));
  Status s = h.Check(1050 * kMs, "s:1");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("s:1"), std::string::npos);
  EXPECT_NE(s.message().find("Connection refused"), std::string::npos);
  EXPECT_NE(s.message().find("retried in 150 ms"), std::string::npos) << s.message();
  EXPECT_TRUE(h.Check(1200 * kMs, "s:1").ok());
}

TEST(ServerHealthTest, BackoffDoublesToTenSecondsAndResetsOnSuccess) {
  ServerHealth h;
  Nanos expected = 200 * kMs;
  for (int i = 0; i < 10; ++i) {
    h.OnFailure(0, Unavailable("x"));
    EXPECT_EQ(h.backoff(), expected);
    expected = std::min<Nanos>(expected * 2, 10'000 * kMs);
  }
  EXPECT_EQ(h.backoff(), 10'000 * kMs);
  h.OnSuccess();
  EXPECT_TRUE(h.Check(1, "s:1").ok());
  h.OnFailure(0, Unavailable("x"));
  EXPECT_EQ(h.backoff(), 200 * kMs);
}

}  // namespace
}  // namespace memkv::client
