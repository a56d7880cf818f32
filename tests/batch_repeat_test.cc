// A batch put that names one key twice: the last item wins, in memory and in
// file mode alike. In file mode the drive tier writes a batch's items in
// parallel, so the server used to store a random one of them; and the client
// may send the items of one batch in different frames.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/checksum.h"
#include "proto/messages.h"
#include "tests/harness.h"
#include "tests/raw_connection.h"

namespace memkv::testing {
namespace {

class BatchRepeatTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ServerSpec spec = GetParam() ? FileModeSpec(dir_.path(), 2, "128 MiB", "64 MiB") : ServerSpec();
    Status s = server_.Start(spec);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  TempDir dir_;
  ServerProcess server_;
};

TEST_P(BatchRepeatTest, BatchPutNamingAKeyTwiceStoresTheLastItemInEveryMode) {
  auto raw = RawConnection::Open(server_.port());
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  ASSERT_TRUE((*raw)->Handshake(kTestKeyHex).ok());
  auto client = ClientFor({&server_}, 10000);
  for (int round = 0; round < 40; ++round) {
    // One frame naming the key 8 times (the tier's I/O threads write a
    // batch's items in parallel), with another key among them.
    const std::string key = "repeat/" + std::to_string(round);
    std::vector<std::vector<uint8_t>> values;
    std::vector<proto::PutItem> items;
    for (int i = 0; i < 9; ++i) values.push_back(Pattern(i == 4 ? 1000 : 60000 + 4096 * i, 10 * round + i));
    for (int i = 0; i < 9; ++i) {
      items.push_back({i == 4 ? std::string_view("repeat/other") : std::string_view(key), values[i].size(),
                       Checksum(values[i].data(), values[i].size())});
    }
    std::vector<uint8_t> payload;
    for (const auto& v : values) payload.insert(payload.end(), v.begin(), v.end());
    ASSERT_TRUE((*raw)
                    ->SendBytes((*raw)->BuildFrame(proto::Opcode::kBatchPut, proto::EncodeBatchPutRequest(items),
                                                   payload, 100 + round))
                    .ok());
    auto answer = (*raw)->Read(10000);
    ASSERT_TRUE(answer.ok()) << answer.status().ToString();
    std::vector<StatusCode> statuses;
    ASSERT_TRUE(proto::DecodeStatusList(answer->meta, 9, &statuses).ok()) << answer->message();
    EXPECT_EQ(statuses, std::vector<StatusCode>(9, StatusCode::kOk));
    auto got = client->Get(key);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(*got, values[8]) << "round " << round << ": an earlier item of the key was stored (" << got->size()
                               << " bytes)";
  }
}

TEST_P(BatchRepeatTest, ClientBatchPutNamingAKeyTwiceStoresTheLastItemEvenAcrossFrames) {
  auto client = ClientFor({&server_}, 10000);
  for (int round = 0; round < 10; ++round) {
    // Large enough that the client spreads the batch over several frames.
    const std::string key = "client-repeat/" + std::to_string(round);
    std::vector<uint8_t> first = Pattern(1536 * 1024, 2 * round), second = Pattern(1536 * 1024, 2 * round + 1);
    const std::string_view keys[] = {key, "client-repeat/other", key};
    std::vector<uint8_t> other = Pattern(2 << 20, 99);
    const std::span<const uint8_t> values[] = {first, other, second};
    BatchResult r = client->BatchPut(keys, values);
    ASSERT_EQ(r.statuses.size(), 3u);
    for (const Status& s : r.statuses) EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(r.present_prefix, 3u);
    auto got = client->Get(key);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, second) << "round " << round;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, BatchRepeatTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& mode) { return mode.param ? "File" : "Memory"; });

}  // namespace
}  // namespace memkv::testing
