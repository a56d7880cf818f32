// The C API against a real server: same behaviour and codes as the C++ API.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "memkv/memkv.h"
#include "tests/harness.h"

extern "C" int memkv_c_header_check(void);

namespace memkv::testing {
namespace {

TEST(CApiTest, RoundTripMissAndErrors) {
  ASSERT_EQ(memkv_c_header_check(), 0);
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  memkv_client_t* c = nullptr;
  ASSERT_EQ(memkv_client_open(server.address().c_str(), kTestKeyHex, 3000, &c), MEMKV_OK) << memkv_last_error();

  std::vector<uint8_t> value = Pattern(3 << 20, 11);
  ASSERT_EQ(memkv_put(c, "k", 1, value.data(), value.size()), MEMKV_OK) << memkv_last_error();
  std::vector<uint8_t> buf(value.size() + 10);
  size_t len = 0;
  ASSERT_EQ(memkv_get(c, "k", 1, buf.data(), buf.size(), &len), MEMKV_OK) << memkv_last_error();
  ASSERT_EQ(len, value.size());
  EXPECT_EQ(std::memcmp(buf.data(), value.data(), len), 0);

  size_t unchanged = 7;
  EXPECT_EQ(memkv_get(c, "k", 1, buf.data(), 100, &unchanged), MEMKV_TOO_LARGE);
  EXPECT_EQ(unchanged, 7u);
  EXPECT_NE(std::string(memkv_last_error()).find("100"), std::string::npos) << memkv_last_error();

  EXPECT_EQ(memkv_get(c, "missing", 7, buf.data(), buf.size(), &len), MEMKV_NOT_FOUND);
  int present = -1;
  ASSERT_EQ(memkv_exists(c, "k", 1, &present), MEMKV_OK);
  EXPECT_EQ(present, 1);

  const void* keys[] = {"k", "missing", "k"};
  const size_t lens[] = {1, 7, 1};
  memkv_status_t statuses[3];
  size_t prefix = 99;
  ASSERT_EQ(memkv_batch_exists(c, keys, lens, 3, statuses, &prefix), MEMKV_OK);
  EXPECT_EQ(prefix, 1u);
  EXPECT_EQ(statuses[1], MEMKV_NOT_FOUND);
  EXPECT_EQ(statuses[2], MEMKV_OK);

  EXPECT_EQ(memkv_delete(c, "k", 1), MEMKV_OK);
  EXPECT_EQ(memkv_delete(c, "k", 1), MEMKV_NOT_FOUND);
  EXPECT_EQ(memkv_put(c, nullptr, 0, nullptr, 0), MEMKV_INVALID_ARGUMENT);
  EXPECT_STREQ(memkv_status_name(MEMKV_AUTH_FAILED), "AuthFailed");
  // Without an RDMA device (the usual test machine) the client is on TCP and
  // registering memory is accepted and does nothing.
  const std::string transport = memkv_transport(c);
  EXPECT_TRUE(transport == "tcp" || transport == "rdma") << transport;
  EXPECT_EQ(memkv_register_memory(c, buf.data(), buf.size()), MEMKV_OK) << memkv_last_error();
  EXPECT_EQ(memkv_unregister_memory(c, buf.data()), MEMKV_OK);
  EXPECT_EQ(memkv_register_memory(c, nullptr, 10), MEMKV_INVALID_ARGUMENT);
  memkv_client_close(c);

  memkv_client_t* bad = nullptr;
  EXPECT_EQ(memkv_client_open(server.address().c_str(), "not-hex", 0, &bad), MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(bad, nullptr);
  EXPECT_NE(std::string(memkv_last_error()).size(), 0u);
}

}  // namespace
}  // namespace memkv::testing
