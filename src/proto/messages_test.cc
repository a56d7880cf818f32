#include "proto/messages.h"

#include <gtest/gtest.h>

namespace memkv::proto {
namespace {

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(MessagesTest, BatchPutRoundTrip) {
  std::vector<PutItem> items = {{"a", 3, 11}, {"bb", 0, 22}, {"ccc", 5, 33}};
  std::string meta = EncodeBatchPutRequest(items);
  std::vector<PutItem> back;
  ASSERT_TRUE(DecodeBatchPutRequest(Bytes(meta), 8, &back).ok());
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[2].key, "ccc");
  EXPECT_EQ(back[2].value_len, 5u);
  EXPECT_EQ(back[1].checksum, 22u);
  // Lengths must add up to the payload.
  EXPECT_EQ(DecodeBatchPutRequest(Bytes(meta), 9, &back).code(), StatusCode::kProtocolError);
}

TEST(MessagesTest, TruncatedAndTrailingRejected) {
  std::vector<std::string_view> keys = {"k1", "k2"};
  std::string meta = EncodeKeyList(keys);
  std::vector<std::string_view> back;
  ASSERT_TRUE(DecodeKeyList(Bytes(meta), &back).ok());
  EXPECT_EQ(back[1], "k2");
  for (size_t cut = 0; cut < meta.size(); ++cut) {
    EXPECT_FALSE(DecodeKeyList(Bytes(meta.substr(0, cut)), &back).ok()) << cut;
  }
  EXPECT_FALSE(DecodeKeyList(Bytes(meta + "x"), &back).ok());
}

TEST(MessagesTest, BatchLimits) {
  std::vector<std::string_view> none;
  std::vector<std::string_view> back;
  EXPECT_EQ(DecodeKeyList(Bytes(EncodeKeyList(none)), &back).code(), StatusCode::kInvalidArgument);
  std::vector<std::string_view> many(kMaxBatchItems + 1, "k");
  EXPECT_EQ(DecodeKeyList(Bytes(EncodeKeyList(many)), &back).code(), StatusCode::kTooLarge);
  std::string long_key(kMaxKeyBytes + 1, 'x');
  std::vector<std::string_view> one = {long_key};
  EXPECT_EQ(DecodeKeyList(Bytes(EncodeKeyList(one)), &back).code(), StatusCode::kTooLarge);
  std::vector<std::string_view> empty_key = {""};
  EXPECT_EQ(DecodeKeyList(Bytes(EncodeKeyList(empty_key)), &back).code(), StatusCode::kInvalidArgument);
}

TEST(MessagesTest, GetResponseAndPrefix) {
  std::vector<GetItem> items = {{StatusCode::kOk, 4, 1}, {StatusCode::kNotFound, 0, 0}, {StatusCode::kOk, 2, 3}};
  std::string meta = EncodeBatchGetResponse(items);
  std::vector<GetItem> back;
  ASSERT_TRUE(DecodeBatchGetResponse(Bytes(meta), 3, 6, &back).ok());
  EXPECT_EQ(back[1].status, StatusCode::kNotFound);
  EXPECT_EQ(DecodeBatchGetResponse(Bytes(meta), 2, 6, &back).code(), StatusCode::kProtocolError);
  EXPECT_EQ(DecodeBatchGetResponse(Bytes(meta), 3, 7, &back).code(), StatusCode::kProtocolError);
  std::vector<StatusCode> statuses = {StatusCode::kOk, StatusCode::kOk, StatusCode::kNotFound, StatusCode::kOk};
  EXPECT_EQ(PresentPrefix(statuses), 2u);
  std::vector<StatusCode> decoded;
  ASSERT_TRUE(DecodeStatusList(Bytes(EncodeStatusList(statuses)), 4, &decoded).ok());
  EXPECT_EQ(decoded, statuses);
}

TEST(MessagesTest, ConnectResponseRoundTrip) {
  ConnectResponse r;
  r.server_nonce.fill(9);
  r.max_inflight = 77;
  std::string meta = EncodeConnectResponse(r);
  ConnectResponse back;
  ASSERT_TRUE(DecodeConnectResponse(Bytes(meta), &back).ok());
  EXPECT_EQ(back.server_nonce, r.server_nonce);
  EXPECT_EQ(back.max_inflight, 77u);
  EXPECT_FALSE(DecodeConnectResponse(Bytes(meta.substr(1)), &back).ok());
}

}  // namespace
}  // namespace memkv::proto
