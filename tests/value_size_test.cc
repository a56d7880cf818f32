// A value's size without its bytes (the Stat opcode, Client::ValueSize,
// memkv_value_size): what `stat` through the preload shim and other callers
// that only need the size use, instead of fetching the value.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "memkv/memkv.h"
#include "tests/harness.h"

namespace memkv::testing {
namespace {

double GetBytes(const ServerProcess& server) {
  HttpResult r = HttpRequestTo(server.AdminPort(), "GET", "/v1/metrics");
  double total = 0;
  for (const auto& [sample, value] : PrometheusSamples(r.body)) {
    if (sample.rfind("memkv_value_bytes_total{op=\"get\"", 0) == 0) total += value;
  }
  return total;
}

class ValueSizeTest : public ::testing::TestWithParam<bool> {
 protected:
  ServerSpec Spec() { return GetParam() ? FileModeSpec(dir_.path(), 1) : ServerSpec(); }
  TempDir dir_;
};

TEST_P(ValueSizeTest, SizeOfEveryValueWithoutMovingItsBytes) {
  const std::vector<size_t> sizes = {0, 1, 4096, (3 << 20) + 5};
  {
    ServerProcess first;
    ASSERT_TRUE(first.Start(Spec()).ok()) << first.Stderr();
    auto client = ClientFor({&first});
    for (size_t i = 0; i < sizes.size(); ++i) {
      ASSERT_TRUE(client->Put("size/" + std::to_string(i), Pattern(sizes[i], i)).ok());
    }
    const double before = GetBytes(first);
    for (size_t i = 0; i < sizes.size(); ++i) {
      Result<uint64_t> size = client->ValueSize("size/" + std::to_string(i));
      ASSERT_TRUE(size.ok()) << size.status().ToString();
      EXPECT_EQ(*size, sizes[i]);
    }
    EXPECT_EQ(GetBytes(first), before) << "no value bytes were served";
    EXPECT_EQ(client->ValueSize("size/missing").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(client->ValueSize("").status().code(), StatusCode::kInvalidArgument);
    if (!GetParam()) return;
    ASSERT_EQ(first.Stop(), 0);
  }
  // File mode after a restart: the values are on the drive only.
  ServerProcess second;
  ASSERT_TRUE(second.Start(Spec()).ok()) << second.Stderr();
  auto client = ClientFor({&second});
  for (size_t i = 0; i < sizes.size(); ++i) {
    Result<uint64_t> size = client->ValueSize("size/" + std::to_string(i));
    ASSERT_TRUE(size.ok()) << size.status().ToString();
    EXPECT_EQ(*size, sizes[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ValueSizeTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "File" : "Memory"; });

TEST(ValueSizeCApiTest, MemkvValueSizeGivesTheSizeOrNotFound) {
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  memkv_client_t* c = nullptr;
  ASSERT_EQ(memkv_client_open(server.address().c_str(), kTestKeyHex, 5000, &c), MEMKV_OK) << memkv_last_error();
  const std::vector<uint8_t> value = Pattern(12345, 7);
  ASSERT_EQ(memkv_put(c, "k", 1, value.data(), value.size()), MEMKV_OK);
  uint64_t size = 0;
  EXPECT_EQ(memkv_value_size(c, "k", 1, &size), MEMKV_OK) << memkv_last_error();
  EXPECT_EQ(size, value.size());
  EXPECT_EQ(memkv_value_size(c, "absent", 6, &size), MEMKV_NOT_FOUND);
  EXPECT_EQ(memkv_value_size(c, "k", 1, nullptr), MEMKV_INVALID_ARGUMENT);
  EXPECT_NE(std::string(memkv_last_error()).find("size is NULL"), std::string::npos) << memkv_last_error();
  memkv_client_close(c);
}

}  // namespace
}  // namespace memkv::testing
