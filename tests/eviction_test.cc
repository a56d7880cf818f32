// A server whose pool is much smaller than what is written to it: writes keep
// succeeding by evicting least-recently-used values, recent and frequently
// read values stay, and a value larger than the whole pool is refused
// clearly without disturbing the server.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/harness.h"

namespace memkv::testing {
namespace {

constexpr size_t kMiB = 1 << 20;
constexpr size_t kPoolBlocks = 16;  // "16 MiB" of "1 MiB" blocks
constexpr int kWrites = 64;

class EvictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerSpec spec;
    spec.memory_max_size = "16 MiB";
    spec.memory_block_size = "1 MiB";
    Status s = server_.Start(spec);
    ASSERT_TRUE(s.ok()) << s.ToString();
    client_ = ClientFor({&server_}, 20000);
    ASSERT_NE(client_, nullptr);
  }

  static std::string Key(int i) { return "evict/" + std::to_string(i); }
  static std::vector<uint8_t> Value(int i) { return Pattern(kMiB, 1000 + static_cast<uint64_t>(i)); }

  // How many of Key(0..kWrites-1) are present.
  size_t CountPresent() {
    std::vector<std::string> names;
    for (int i = 0; i < kWrites; ++i) names.push_back(Key(i));
    std::vector<std::string_view> keys(names.begin(), names.end());
    BatchResult r = client_->BatchExists(keys);
    size_t present = 0;
    for (const Status& s : r.statuses) {
      EXPECT_TRUE(s.ok() || s.code() == StatusCode::kNotFound) << s.ToString();
      present += s.ok();
    }
    return present;
  }

  void ExpectValue(const std::string& key, const std::vector<uint8_t>& expected) {
    Result<std::vector<uint8_t>> got = client_->Get(key);
    ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString() << "\n" << server_.Stderr();
    EXPECT_TRUE(*got == expected) << key << ": bytes differ";
  }

  ServerProcess server_;
  std::unique_ptr<Client> client_;
};

TEST_F(EvictionTest, WritingFourTimesThePoolSucceedsAndKeepsTheRecentValues) {
  for (int i = 0; i < kWrites; ++i) {
    Status s = client_->Put(Key(i), Value(i));
    ASSERT_TRUE(s.ok()) << "write " << i << ": " << s.ToString();
  }
  const size_t present = CountPresent();
  EXPECT_LE(present, kPoolBlocks);
  EXPECT_GE(present, 8u);
  // The oldest are gone, the newest are there byte for byte.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(client_->Get(Key(i)).status().code(), StatusCode::kNotFound) << Key(i);
  for (int i = kWrites - 8; i < kWrites; ++i) ExpectValue(Key(i), Value(i));
}

TEST_F(EvictionTest, BatchedWritesEvictToo) {
  constexpr int kPerBatch = 8;  // half the pool per batch
  for (int first = 0; first < kWrites; first += kPerBatch) {
    std::vector<std::string> names;
    std::vector<std::vector<uint8_t>> values;
    for (int i = first; i < first + kPerBatch; ++i) {
      names.push_back(Key(i));
      values.push_back(Value(i));
    }
    std::vector<std::string_view> keys(names.begin(), names.end());
    std::vector<std::span<const uint8_t>> views(values.begin(), values.end());
    BatchResult r = client_->BatchPut(keys, views);
    for (size_t i = 0; i < r.statuses.size(); ++i) {
      ASSERT_TRUE(r.statuses[i].ok()) << names[i] << ": " << r.statuses[i].ToString();
    }
  }
  EXPECT_LE(CountPresent(), kPoolBlocks);
  for (int i = kWrites - kPerBatch; i < kWrites; ++i) ExpectValue(Key(i), Value(i));
}

TEST_F(EvictionTest, AValueReadRepeatedlySurvivesWhileAnUnreadOneIsEvicted) {
  const std::vector<uint8_t> hot = Pattern(kMiB, 1);
  const std::vector<uint8_t> cold = Pattern(kMiB, 2);
  ASSERT_TRUE(client_->Put("evict/hot", hot).ok());
  ASSERT_TRUE(client_->Put("evict/cold", cold).ok());
  for (int i = 0; i < kWrites; ++i) {
    ASSERT_TRUE(client_->Put(Key(i), Value(i)).ok()) << i;
    // Reading makes it recently used; written after "cold", it would be
    // evicted before "cold" if reads did not count.
    ExpectValue("evict/hot", hot);
    if (HasFatalFailure() || HasFailure()) return;
  }
  ExpectValue("evict/hot", hot);
  EXPECT_EQ(client_->Get("evict/cold").status().code(), StatusCode::kNotFound);
}

TEST_F(EvictionTest, AValueLargerThanThePoolIsRefusedAndTheServerKeepsServing) {
  ASSERT_TRUE(client_->Put("evict/before", Value(1)).ok());
  const std::vector<uint8_t> huge = Pattern(17 * kMiB, 3);
  Status s = client_->Put("evict/huge", huge);
  EXPECT_EQ(s.code(), StatusCode::kTooLarge) << s.ToString();
  const bool names_value = s.message().find("17 MiB") != std::string::npos ||
                           s.message().find(std::to_string(huge.size())) != std::string::npos;
  EXPECT_TRUE(names_value) << "message does not name the value's size: " << s.ToString();
  const bool names_pool = s.message().find("16 MiB") != std::string::npos ||
                          s.message().find(std::to_string(16 * kMiB)) != std::string::npos;
  EXPECT_TRUE(names_pool) << "message does not name the pool's size: " << s.ToString();

  // Nothing was stored, nothing was evicted for it, and the server serves on.
  EXPECT_EQ(client_->Get("evict/huge").status().code(), StatusCode::kNotFound);
  ExpectValue("evict/before", Value(1));
  ASSERT_TRUE(client_->Put("evict/after", Value(2)).ok());
  ExpectValue("evict/after", Value(2));
  // A value of exactly the pool's size fits (evicting everything else).
  const std::vector<uint8_t> whole = Pattern(16 * kMiB, 4);
  Status fits = client_->Put("evict/whole", whole);
  ASSERT_TRUE(fits.ok()) << fits.ToString();
  ExpectValue("evict/whole", whole);
}

TEST_F(EvictionTest, ABatchItemLargerThanThePoolFailsAloneWithTooLarge) {
  const std::vector<uint8_t> small = Pattern(1000, 5);
  const std::vector<uint8_t> huge = Pattern(17 * kMiB, 6);
  std::vector<std::string_view> keys = {"evict/b0", "evict/b1", "evict/b2"};
  std::vector<std::span<const uint8_t>> values = {small, huge, small};
  BatchResult r = client_->BatchPut(keys, values);
  ASSERT_EQ(r.statuses.size(), 3u);
  EXPECT_TRUE(r.statuses[0].ok()) << r.statuses[0].ToString();
  EXPECT_EQ(r.statuses[1].code(), StatusCode::kTooLarge) << r.statuses[1].ToString();
  EXPECT_TRUE(r.statuses[2].ok()) << r.statuses[2].ToString();
  EXPECT_EQ(r.present_prefix, 1u);
  ExpectValue("evict/b0", small);
  ExpectValue("evict/b2", small);
  EXPECT_EQ(client_->Get("evict/b1").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace memkv::testing
