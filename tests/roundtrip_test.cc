// Round trips through a real server: every size class comes back byte for
// byte through Get and GetInto, single-key and batch calls agree, and a
// caller's too-small buffer is refused without breaking the connection.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/harness.h"
#include "tests/shared_server.h"

namespace memkv::testing {
namespace {

constexpr size_t kMiB = 1 << 20;

class RoundTripTest : public SharedServerTest {
 protected:
  void SetUp() override {
    client_ = ClientFor({server_}, 20000);
    ASSERT_NE(client_, nullptr);
  }

  // The key unique to this test, so tests sharing the server do not collide.
  static std::string Key(const std::string& suffix) {
    return std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "/" + suffix;
  }

  std::unique_ptr<Client> client_;
};

struct SizeCase {
  const char* name;
  size_t size;
};
constexpr SizeCase kSizes[] = {
    {"empty", 0}, {"one_byte", 1}, {"4KiB", 4096}, {"2MiB_plus_1", 2 * kMiB + 1}, {"64MiB", 64 * kMiB},
};

TEST_F(RoundTripTest, PutGetIsByteExactForEverySize) {
  for (const SizeCase& c : kSizes) {
    SCOPED_TRACE(c.name);
    const std::string key = Key(c.name);
    const std::vector<uint8_t> value = Pattern(c.size, c.size + 1);
    ASSERT_TRUE(client_->Put(key, value).ok());
    Result<std::vector<uint8_t>> got = client_->Get(key);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), c.size);
    EXPECT_TRUE(*got == value) << "bytes differ";
  }
}

TEST_F(RoundTripTest, GetIntoWritesExactlyTheValueIntoTheCallersBuffer) {
  constexpr size_t kSlack = 64;
  constexpr uint8_t kCanary = 0xA5;
  for (const SizeCase& c : kSizes) {
    SCOPED_TRACE(c.name);
    const std::string key = Key(c.name);
    const std::vector<uint8_t> value = Pattern(c.size, c.size + 7);
    ASSERT_TRUE(client_->Put(key, value).ok());

    // Exactly the right size.
    std::vector<uint8_t> exact(c.size, kCanary);
    Result<size_t> n = client_->GetInto(key, exact);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, c.size);
    EXPECT_TRUE(exact == value) << "bytes differ";

    // Larger than needed: the bytes past the value stay untouched.
    std::vector<uint8_t> roomy(c.size + kSlack, kCanary);
    n = client_->GetInto(key, roomy);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, c.size);
    EXPECT_TRUE(std::equal(value.begin(), value.end(), roomy.begin())) << "bytes differ";
    EXPECT_TRUE(std::all_of(roomy.begin() + static_cast<ptrdiff_t>(c.size), roomy.end(), [](uint8_t b) {
      return b == kCanary;
    })) << "GetInto wrote past the value";
  }
}

TEST_F(RoundTripTest, GetIntoTooSmallBufferIsTooLargeAndTheConnectionSurvives) {
  // One connection, so "afterwards" is provably the same connection.
  ClientOptions o = OptionsFor({server_}, 20000);
  o.num_connections = 1;
  auto created = Client::Create(o);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Client& client = **created;

  const std::string key = Key("v");
  const std::vector<uint8_t> value = Pattern(3 * kMiB + 5, 3);
  ASSERT_TRUE(client.Put(key, value).ok());
  const uint64_t opened = client.Stats().connections_opened;
  // One, plus the one Create asked ServerInfo on when the server predates
  // it (it closes a connection after "unknown opcode").
  EXPECT_LE(opened, 2u);

  std::vector<uint8_t> small(4096, 0);
  Result<size_t> n = client.GetInto(key, small);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kTooLarge) << n.status().ToString();
  EXPECT_NE(n.status().message().find(std::to_string(value.size())), std::string::npos) << n.status().ToString();
  EXPECT_NE(n.status().message().find("4096"), std::string::npos) << n.status().ToString();

  // The value (3 MiB of it was on the wire) was consumed, not left in the stream.
  Result<std::vector<uint8_t>> got = client.Get(key);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == value);
  std::vector<uint8_t> big(value.size());
  n = client.GetInto(key, big);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_TRUE(big == value);
  ASSERT_TRUE(client.Put(Key("after"), Pattern(10, 10)).ok());
  EXPECT_EQ(client.Stats().connections_opened, opened) << "the connection was dropped and reopened";
}

TEST_F(RoundTripTest, OverwriteReturnsTheNewValue) {
  const std::string key = Key("k");
  ASSERT_TRUE(client_->Put(key, Pattern(2 * kMiB + 1, 1)).ok());
  const std::vector<uint8_t> shorter = Pattern(1000, 2);
  ASSERT_TRUE(client_->Put(key, shorter).ok());
  Result<std::vector<uint8_t>> got = client_->Get(key);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == shorter);
  const std::vector<uint8_t> longer = Pattern(5 * kMiB, 3);
  ASSERT_TRUE(client_->Put(key, longer).ok());
  got = client_->Get(key);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == longer);
  ASSERT_TRUE(client_->Put(key, {}).ok());
  got = client_->Get(key);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->empty());
}

TEST_F(RoundTripTest, DeleteThenGetIsNotFoundAndExistsFollows) {
  const std::string key = Key("k");
  Result<bool> exists = client_->Exists(key);
  ASSERT_TRUE(exists.ok()) << exists.status().ToString();
  EXPECT_FALSE(*exists);
  EXPECT_EQ(client_->Get(key).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->Delete(key).code(), StatusCode::kNotFound);

  ASSERT_TRUE(client_->Put(key, Pattern(4096, 4)).ok());
  exists = client_->Exists(key);
  ASSERT_TRUE(exists.ok()) << exists.status().ToString();
  EXPECT_TRUE(*exists);

  ASSERT_TRUE(client_->Delete(key).ok());
  EXPECT_EQ(client_->Get(key).status().code(), StatusCode::kNotFound);
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(client_->GetInto(key, buf).status().code(), StatusCode::kNotFound);
  exists = client_->Exists(key);
  ASSERT_TRUE(exists.ok()) << exists.status().ToString();
  EXPECT_FALSE(*exists);
  EXPECT_EQ(client_->Delete(key).code(), StatusCode::kNotFound);

  // An empty value is present, not absent.
  ASSERT_TRUE(client_->Put(key, {}).ok());
  exists = client_->Exists(key);
  ASSERT_TRUE(exists.ok());
  EXPECT_TRUE(*exists);
}

TEST_F(RoundTripTest, KeysAreOpaqueBytesUpToTheLimit) {
  const std::string longest = Key("") + std::string(1024 - Key("").size(), 'x');
  ASSERT_EQ(longest.size(), 1024u);
  const std::string with_nul_a("bin\0a\xff\x80", 7);
  const std::string with_nul_b("bin\0b\xff\x80", 7);
  ASSERT_TRUE(client_->Put(longest, Pattern(10, 1)).ok());
  ASSERT_TRUE(client_->Put(with_nul_a, Pattern(10, 2)).ok());
  ASSERT_TRUE(client_->Put(with_nul_b, Pattern(10, 3)).ok());
  Result<std::vector<uint8_t>> got = client_->Get(longest);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, Pattern(10, 1));
  got = client_->Get(with_nul_a);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, Pattern(10, 2)) << "keys differing after a NUL byte collided";
  got = client_->Get(with_nul_b);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, Pattern(10, 3));
  EXPECT_EQ(client_->Get(std::string("bin", 3)).status().code(), StatusCode::kNotFound);

  // Outside the limits: refused before anything is sent, naming the limit.
  Status too_long = client_->Put(longest + "y", Pattern(10, 1));
  EXPECT_FALSE(too_long.ok());
  EXPECT_NE(too_long.message().find("1024"), std::string::npos) << too_long.ToString();
  EXPECT_FALSE(client_->Put("", Pattern(10, 1)).ok());
  EXPECT_FALSE(client_->Get("").ok());
  EXPECT_NE(client_->Get("").status().code(), StatusCode::kNotFound);
}

// Keys, values and views for a batch call; owns the storage the spans point to.
struct Batch {
  std::vector<std::string> keys;
  std::vector<std::vector<uint8_t>> values;

  std::vector<std::string_view> KeyViews() const { return {keys.begin(), keys.end()}; }
  std::vector<std::span<const uint8_t>> ValueViews() const { return {values.begin(), values.end()}; }
};

std::vector<std::span<uint8_t>> Views(std::vector<std::vector<uint8_t>>& buffers) {
  return {buffers.begin(), buffers.end()};
}

TEST_F(RoundTripTest, BatchReportsPerKeyResultsAndPresentPrefix) {
  Batch all;
  for (int i = 0; i < 10; ++i) {
    all.keys.push_back(Key("k" + std::to_string(i)));
    all.values.push_back(Pattern(1000 + static_cast<size_t>(i), static_cast<uint64_t>(i)));
  }
  Batch without5 = all;
  without5.keys.erase(without5.keys.begin() + 5);
  without5.values.erase(without5.values.begin() + 5);
  auto kv = without5.KeyViews();
  auto vv = without5.ValueViews();
  BatchResult put = client_->BatchPut(kv, vv);
  ASSERT_EQ(put.statuses.size(), 9u);
  for (const Status& s : put.statuses) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(put.present_prefix, 9u);

  auto keys = all.KeyViews();
  BatchResult exists = client_->BatchExists(keys);
  ASSERT_EQ(exists.statuses.size(), 10u);
  EXPECT_EQ(exists.present_prefix, 5u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(exists.statuses[i].code(), i == 5 ? StatusCode::kNotFound : StatusCode::kOk)
        << i << ": " << exists.statuses[i].ToString();
  }

  std::vector<std::vector<uint8_t>> buffers(10, std::vector<uint8_t>(2000, 0));
  auto bv = Views(buffers);
  std::vector<size_t> sizes;
  BatchResult get = client_->BatchGetInto(keys, bv, &sizes);
  ASSERT_EQ(get.statuses.size(), 10u);
  ASSERT_EQ(sizes.size(), 10u);
  EXPECT_EQ(get.present_prefix, 5u);
  for (size_t i = 0; i < 10; ++i) {
    if (i == 5) {
      EXPECT_EQ(get.statuses[i].code(), StatusCode::kNotFound) << get.statuses[i].ToString();
      continue;
    }
    ASSERT_TRUE(get.statuses[i].ok()) << i << ": " << get.statuses[i].ToString();
    ASSERT_EQ(sizes[i], all.values[i].size()) << i;
    EXPECT_TRUE(std::equal(all.values[i].begin(), all.values[i].end(), buffers[i].begin())) << i;
  }

  // The first key missing: prefix 0, the rest still reported.
  std::vector<std::string_view> missing_first = {keys[5], keys[0], keys[1]};
  exists = client_->BatchExists(missing_first);
  EXPECT_EQ(exists.present_prefix, 0u);
  ASSERT_EQ(exists.statuses.size(), 3u);
  EXPECT_EQ(exists.statuses[0].code(), StatusCode::kNotFound);
  EXPECT_TRUE(exists.statuses[1].ok());
  EXPECT_TRUE(exists.statuses[2].ok());
}

TEST_F(RoundTripTest, BatchOfMixedSizesIsByteExact) {
  const size_t sizes_in[] = {0, 1, 4096, 2 * kMiB + 1, 100, 7 * kMiB + 3, 65536, 1, 3 * kMiB};
  Batch b;
  for (size_t i = 0; i < std::size(sizes_in); ++i) {
    b.keys.push_back(Key(std::to_string(i)));
    b.values.push_back(Pattern(sizes_in[i], 100 + i));
  }
  auto kv = b.KeyViews();
  auto vv = b.ValueViews();
  BatchResult put = client_->BatchPut(kv, vv);
  for (size_t i = 0; i < put.statuses.size(); ++i)
    ASSERT_TRUE(put.statuses[i].ok()) << i << ": " << put.statuses[i].ToString();
  EXPECT_EQ(put.present_prefix, std::size(sizes_in));

  // Exact buffers, except item 3 gets one byte too few: TooLarge for it alone.
  std::vector<std::vector<uint8_t>> buffers;
  for (size_t i = 0; i < b.values.size(); ++i) buffers.emplace_back(b.values[i].size() - (i == 3 ? 1 : 0), 0xEE);
  auto bv = Views(buffers);
  std::vector<size_t> sizes;
  BatchResult get = client_->BatchGetInto(kv, bv, &sizes);
  ASSERT_EQ(get.statuses.size(), b.keys.size());
  EXPECT_EQ(get.present_prefix, 3u);
  for (size_t i = 0; i < b.keys.size(); ++i) {
    if (i == 3) {
      EXPECT_EQ(get.statuses[i].code(), StatusCode::kTooLarge) << get.statuses[i].ToString();
      EXPECT_NE(get.statuses[i].message().find(std::to_string(b.values[i].size())), std::string::npos)
          << get.statuses[i].ToString();
      continue;
    }
    ASSERT_TRUE(get.statuses[i].ok()) << i << ": " << get.statuses[i].ToString();
    EXPECT_EQ(sizes[i], b.values[i].size()) << i;
    EXPECT_TRUE(buffers[i] == b.values[i]) << i;
  }

  // The single-key calls see what the batch wrote, and the batch agrees with them.
  for (size_t i = 0; i < b.keys.size(); ++i) {
    Result<std::vector<uint8_t>> got = client_->Get(b.keys[i]);
    ASSERT_TRUE(got.ok()) << i << ": " << got.status().ToString();
    EXPECT_TRUE(*got == b.values[i]) << i;
  }
}

TEST_F(RoundTripTest, BatchLargerThanOneFrameIsSplitAndComplete) {
  // More keys than one frame may carry (1024 items). Every value takes at
  // least one whole block of the pool, so this needs small blocks: with the
  // suite's 1 MiB blocks 2500 values do not fit in 256 MiB at once.
  ServerProcess small_blocks;
  ServerSpec spec;
  spec.memory_max_size = "64 MiB";
  spec.memory_block_size = "4 KiB";
  Status started = small_blocks.Start(spec);
  ASSERT_TRUE(started.ok()) << started.ToString();
  client_ = ClientFor({&small_blocks}, 20000);
  ASSERT_NE(client_, nullptr);
  constexpr size_t kKeys = 2500;
  Batch b;
  for (size_t i = 0; i < kKeys; ++i) {
    b.keys.push_back(Key(std::to_string(i)));
    b.values.push_back(Pattern(i % 300, i));
  }
  auto kv = b.KeyViews();
  auto vv = b.ValueViews();
  BatchResult put = client_->BatchPut(kv, vv);
  ASSERT_EQ(put.statuses.size(), kKeys);
  EXPECT_EQ(put.present_prefix, kKeys) << (put.present_prefix < kKeys ? put.statuses[put.present_prefix].ToString()
                                                                      : "");

  ASSERT_TRUE(client_->Delete(b.keys[2000]).ok());
  BatchResult exists = client_->BatchExists(kv);
  EXPECT_EQ(exists.present_prefix, 2000u);
  ASSERT_EQ(exists.statuses.size(), kKeys);
  EXPECT_EQ(exists.statuses[2000].code(), StatusCode::kNotFound);
  EXPECT_TRUE(exists.statuses[2001].ok()) << exists.statuses[2001].ToString();

  std::vector<std::vector<uint8_t>> buffers(kKeys, std::vector<uint8_t>(300));
  auto bv = Views(buffers);
  std::vector<size_t> sizes;
  BatchResult get = client_->BatchGetInto(kv, bv, &sizes);
  EXPECT_EQ(get.present_prefix, 2000u);
  for (size_t i = 0; i < kKeys; ++i) {
    if (i == 2000) {
      EXPECT_EQ(get.statuses[i].code(), StatusCode::kNotFound);
      continue;
    }
    ASSERT_TRUE(get.statuses[i].ok()) << i << ": " << get.statuses[i].ToString();
    ASSERT_EQ(sizes[i], b.values[i].size()) << i;
    ASSERT_TRUE(std::equal(b.values[i].begin(), b.values[i].end(), buffers[i].begin())) << i;
  }
}

}  // namespace
}  // namespace memkv::testing
