#include <gtest/gtest.h>

#include "verbs/verbs.h"

namespace memkv::verbs {
namespace {

Gid MakeGid(std::initializer_list<uint8_t> bytes) {
  Gid g{};
  size_t i = 0;
  for (uint8_t b : bytes) g[i++] = b;
  return g;
}

Gid Ipv4Gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return MakeGid({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d});
}

TEST(WcStatusNameTest, NamesTheStatusAndItsNumber) {
  EXPECT_EQ(WcStatusName(kWcSuccess), "IBV_WC_SUCCESS (status 0)");
  EXPECT_EQ(WcStatusName(kWcRetryExcErr), "IBV_WC_RETRY_EXC_ERR (status 12)");
  EXPECT_EQ(WcStatusName(kWcWrFlushErr), "IBV_WC_WR_FLUSH_ERR (status 5)");
  EXPECT_EQ(WcStatusName(kWcRemAccessErr), "IBV_WC_REM_ACCESS_ERR (status 10)");
  EXPECT_EQ(WcStatusName(kWcRnrRetryExcErr), "IBV_WC_RNR_RETRY_EXC_ERR (status 13)");
  EXPECT_EQ(WcStatusName(kWcLocProtErr), "IBV_WC_LOC_PROT_ERR (status 4)");
  EXPECT_EQ(WcStatusName(kWcGeneralErr), "IBV_WC_GENERAL_ERR (status 21)");
  EXPECT_EQ(WcStatusName(20), "IBV_WC_RESP_TIMEOUT_ERR (status 20)");
  EXPECT_EQ(WcStatusName(23), "IBV_WC_TM_RNDV_INCOMPLETE (status 23)");
}

TEST(WcStatusNameTest, UnknownValuesStillNameTheNumber) {
  EXPECT_EQ(WcStatusName(24), "IBV_WC status 24");
  EXPECT_EQ(WcStatusName(-1), "IBV_WC status -1");
}

TEST(MtuTest, OnlyIbPathMtusAreValid) {
  for (uint32_t m : {256u, 512u, 1024u, 2048u, 4096u}) EXPECT_TRUE(IsValidMtu(m)) << m;
  for (uint32_t m : {0u, 1u, 128u, 1500u, 3000u, 8192u, 9000u}) EXPECT_FALSE(IsValidMtu(m)) << m;
}

TEST(GidTest, TypeNames) {
  EXPECT_STREQ(GidTypeName(GidType::kIb), "IB");
  EXPECT_STREQ(GidTypeName(GidType::kRoceV1), "RoCE v1");
  EXPECT_STREQ(GidTypeName(GidType::kRoceV2), "RoCE v2");
}

TEST(GidTest, FormatsLikeSysfs) {
  EXPECT_EQ(GidToString(Ipv4Gid(10, 77, 0, 1)), "0000:0000:0000:0000:0000:ffff:0a4d:0001");
  EXPECT_EQ(GidToString(MakeGid({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xff, 0xfe, 0x77, 0x00, 0x01})),
            "fe80:0000:0000:0000:5054:00ff:fe77:0001");
  EXPECT_EQ(GidToString(Gid{}), "0000:0000:0000:0000:0000:0000:0000:0000");
}

TEST(GidTest, Ipv4Mapped) {
  EXPECT_TRUE(GidIsIpv4Mapped(Ipv4Gid(10, 0, 0, 1)));
  EXPECT_EQ(GidIpv4(Ipv4Gid(10, 0, 0, 1)), "10.0.0.1");
  EXPECT_EQ(GidIpv4(Ipv4Gid(192, 168, 255, 254)), "192.168.255.254");
  // Link-local IPv6, an IPv4-compatible (no ffff) address, and all zeros are not.
  Gid link_local = MakeGid({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 0xff, 0xff, 10, 0, 0, 1});
  EXPECT_FALSE(GidIsIpv4Mapped(link_local));
  EXPECT_EQ(GidIpv4(link_local), "");
  EXPECT_FALSE(GidIsIpv4Mapped(MakeGid({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1})));
  EXPECT_FALSE(GidIsIpv4Mapped(Gid{}));
}

}  // namespace
}  // namespace memkv::verbs
