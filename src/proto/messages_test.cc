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

PutOptions FullOptions() {
  PutOptions o;
  o.ttl_ms = 123456;
  o.retention = Retention::kPinned;
  o.hash_kind = HashKind::kInt64;
  o.parent_key = "parent";
  o.block_hash = std::string(8, 'b');
  o.parent_hash = std::string(64, 'p');
  return o;
}

void ExpectSameOptions(const PutOptions& a, const PutOptions& b) {
  EXPECT_EQ(a.ttl_ms, b.ttl_ms);
  EXPECT_EQ(a.retention, b.retention);
  EXPECT_EQ(a.hash_kind, b.hash_kind);
  EXPECT_EQ(a.parent_key, b.parent_key);
  EXPECT_EQ(a.block_hash, b.block_hash);
  EXPECT_EQ(a.parent_hash, b.parent_hash);
}

TEST(MessagesTest, BatchPutWithRoundTripTruncationAndSize) {
  std::vector<PutItem> items = {{"a", 3, 11}, {"bb", 5, 22}};
  std::vector<PutOptions> options = {FullOptions(), PutOptions()};
  const std::string meta = EncodeBatchPutWithRequest(items, options);
  EXPECT_EQ(meta.size(), 4 + BatchPutWithItemBytes("a", options[0]) + BatchPutWithItemBytes("bb", options[1]));
  std::vector<PutItem> back;
  std::vector<PutOptions> back_options;
  ASSERT_TRUE(DecodeBatchPutWithRequest(Bytes(meta), 8, &back, &back_options).ok());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].key, "bb");
  EXPECT_EQ(back[1].checksum, 22u);
  ExpectSameOptions(back_options[0], options[0]);
  ExpectSameOptions(back_options[1], options[1]);
  for (size_t cut = 0; cut < meta.size(); ++cut) {
    EXPECT_FALSE(DecodeBatchPutWithRequest(Bytes(meta.substr(0, cut)), 8, &back, &back_options).ok()) << cut;
  }
  EXPECT_EQ(DecodeBatchPutWithRequest(Bytes(meta), 9, &back, &back_options).code(), StatusCode::kProtocolError);
}

TEST(MessagesTest, OutOfRangeOptionsAreInvalidArgumentNamingTheField) {
  std::vector<PutItem> items = {{"k", 0, 0}};
  auto decode = [&](const PutOptions& o) {
    std::vector<PutOptions> options = {o};
    std::vector<PutItem> back;
    std::vector<PutOptions> back_options;
    return DecodeBatchPutWithRequest(Bytes(EncodeBatchPutWithRequest(items, options)), 0, &back, &back_options);
  };
  PutOptions o;
  o.retention = static_cast<Retention>(3);
  Status s = decode(o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "item 0: retention 3 is not a retention class; allowed: 0 (normal), 1 (pinned), 2 (evict_first)");
  o = PutOptions();
  o.hash_kind = static_cast<HashKind>(2);
  EXPECT_EQ(decode(o).code(), StatusCode::kInvalidArgument);
  o = PutOptions();
  o.parent_hash = std::string(65, 'x');
  s = decode(o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("parent_hash of 65 bytes exceeds the limit of 64 bytes"), std::string::npos);
  o = PutOptions();
  o.parent_key = std::string(1025, 'x');
  EXPECT_EQ(CheckPutOptions(o).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckPutOptions(FullOptions()).ok());
}

TEST(MessagesTest, RdmaPutWithRoundTrip) {
  const PutOptions options = FullOptions();
  const std::string meta = EncodeRdmaPutWithRequest("the/key", 4096, 77, options);
  std::string_view key;
  uint64_t len = 0, checksum = 0;
  PutOptions back;
  ASSERT_TRUE(DecodeRdmaPutWithRequest(Bytes(meta), &key, &len, &checksum, &back).ok());
  EXPECT_EQ(key, "the/key");
  EXPECT_EQ(len, 4096u);
  EXPECT_EQ(checksum, 77u);
  ExpectSameOptions(back, options);
  EXPECT_FALSE(DecodeRdmaPutWithRequest(Bytes(meta.substr(0, 20)), &key, &len, &checksum, &back).ok());
  // No key left after the options.
  const std::string keyless = EncodeRdmaPutWithRequest("", 1, 1, options);
  EXPECT_FALSE(DecodeRdmaPutWithRequest(Bytes(keyless), &key, &len, &checksum, &back).ok());
}

TEST(MessagesTest, RdmaCommitToRoundTrip) {
  const PutOptions options = FullOptions();
  const std::string meta = EncodeRdmaCommitToRequest(42, "the/key", 4096, 77, options);
  uint64_t token = 0, len = 0, checksum = 0;
  std::string_view key;
  PutOptions back;
  ASSERT_TRUE(DecodeRdmaCommitToRequest(Bytes(meta), &token, &key, &len, &checksum, &back).ok());
  EXPECT_EQ(token, 42u);
  EXPECT_EQ(key, "the/key");
  EXPECT_EQ(len, 4096u);
  EXPECT_EQ(checksum, 77u);
  ExpectSameOptions(back, options);
  EXPECT_EQ(DecodeRdmaCommitToRequest(Bytes(meta.substr(0, 6)), &token, &key, &len, &checksum, &back).code(),
            StatusCode::kProtocolError);
  const Status keyless = DecodeRdmaCommitToRequest(Bytes(EncodeRdmaCommitToRequest(1, "", 1, 1, options)), &token,
                                                   &key, &len, &checksum, &back);
  EXPECT_FALSE(keyless.ok());
  EXPECT_NE(keyless.message().find("RdmaCommitTo request"), std::string::npos) << keyless.message();
}

TEST(MessagesTest, StatusMessageListAndMatchPrefixResponse) {
  const std::vector<Status> statuses = {Status::Ok(), ResourceExhausted("pinned bytes at the cap"),
                                        NotFound(std::string(2000, 'm'))};
  std::vector<Status> back;
  ASSERT_TRUE(DecodeStatusMessageList(Bytes(EncodeStatusMessageList(statuses)), 3, &back).ok());
  EXPECT_TRUE(back[0].ok());
  EXPECT_EQ(back[1].code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(back[1].message(), "pinned bytes at the cap");
  EXPECT_EQ(back[2].message().size(), kMaxStatusMessageBytes);
  EXPECT_EQ(DecodeStatusMessageList(Bytes(EncodeStatusMessageList(statuses)), 2, &back).code(),
            StatusCode::kProtocolError);
  uint32_t matched = 0;
  ASSERT_TRUE(DecodeMatchPrefixResponse(Bytes(EncodeMatchPrefixResponse(3)), 5, &matched).ok());
  EXPECT_EQ(matched, 3u);
  EXPECT_EQ(DecodeMatchPrefixResponse(Bytes(EncodeMatchPrefixResponse(6)), 5, &matched).code(),
            StatusCode::kProtocolError);
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

TEST(MessagesTest, ListRequestRoundTripAndLimits) {
  std::string meta = EncodeListRequest({.prefix = "model/a", .after = "model/a/7", .limit = 100});
  ListRequest back;
  ASSERT_TRUE(DecodeListRequest(Bytes(meta), &back).ok());
  EXPECT_EQ(back.prefix, "model/a");
  EXPECT_EQ(back.after, "model/a/7");
  EXPECT_EQ(back.limit, 100u);
  for (size_t cut = 0; cut < meta.size(); ++cut) {
    EXPECT_EQ(DecodeListRequest(Bytes(meta.substr(0, cut)), &back).code(), StatusCode::kProtocolError) << cut;
  }
  EXPECT_EQ(DecodeListRequest(Bytes(meta + "x"), &back).code(), StatusCode::kProtocolError);
  // Empty prefix and cursor: the whole store from the first key.
  ASSERT_TRUE(DecodeListRequest(Bytes(EncodeListRequest({.prefix = "", .after = "", .limit = 1})), &back).ok());
  EXPECT_TRUE(back.prefix.empty() && back.after.empty());
  Status zero = DecodeListRequest(Bytes(EncodeListRequest({.prefix = "", .after = "", .limit = 0})), &back);
  EXPECT_EQ(zero.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(zero.message().find("allowed: 1..1024"), std::string::npos) << zero.message();
  EXPECT_EQ(DecodeListRequest(Bytes(EncodeListRequest({.prefix = "", .after = "", .limit = 1025})), &back).code(),
            StatusCode::kInvalidArgument);
  const std::string long_prefix(kMaxKeyBytes + 1, 'p');
  EXPECT_EQ(DecodeListRequest(Bytes(EncodeListRequest({.prefix = long_prefix, .after = "", .limit = 1})), &back).code(),
            StatusCode::kTooLarge);
}

TEST(MessagesTest, ListResponseRoundTripOrderAndCount) {
  std::vector<std::string_view> keys = {"a", "ab", "b"};
  std::string meta = EncodeListResponse(keys, true);
  ListResponse back;
  ASSERT_TRUE(DecodeListResponse(Bytes(meta), 3, &back).ok());
  EXPECT_EQ(back.keys, keys);
  EXPECT_TRUE(back.more);
  ASSERT_TRUE(DecodeListResponse(Bytes(EncodeListResponse({}, false)), 3, &back).ok());
  EXPECT_TRUE(back.keys.empty());
  EXPECT_FALSE(back.more);
  for (size_t cut = 0; cut < meta.size(); ++cut) {
    EXPECT_EQ(DecodeListResponse(Bytes(meta.substr(0, cut)), 3, &back).code(), StatusCode::kProtocolError) << cut;
  }
  EXPECT_EQ(DecodeListResponse(Bytes(meta), 2, &back).code(), StatusCode::kProtocolError) << "more than asked";
  std::vector<std::string_view> unordered = {"b", "a"};
  EXPECT_EQ(DecodeListResponse(Bytes(EncodeListResponse(unordered, false)), 3, &back).code(),
            StatusCode::kProtocolError);
  std::vector<std::string_view> repeated = {"a", "a"};
  EXPECT_EQ(DecodeListResponse(Bytes(EncodeListResponse(repeated, false)), 3, &back).code(),
            StatusCode::kProtocolError);
}

TEST(MessagesTest, StatResponseRoundTrip) {
  uint64_t size = 0;
  const std::string meta = EncodeStatResponse(uint64_t{5} << 30);
  ASSERT_TRUE(DecodeStatResponse(Bytes(meta), &size).ok());
  EXPECT_EQ(size, uint64_t{5} << 30);
  EXPECT_EQ(DecodeStatResponse(Bytes(meta.substr(0, 7)), &size).code(), StatusCode::kProtocolError);
  EXPECT_EQ(DecodeStatResponse(Bytes(meta + "x"), &size).code(), StatusCode::kProtocolError);
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
  std::span<const uint8_t> rest;
  ASSERT_TRUE(DecodeConnectResponse(Bytes(meta), &back, &rest).ok());
  EXPECT_TRUE(rest.empty());
  EXPECT_EQ(back.server_nonce, r.server_nonce);
  EXPECT_EQ(back.max_inflight, 77u);
  EXPECT_FALSE(DecodeConnectResponse(Bytes(meta.substr(1)), &back, &rest).ok());
}

TEST(MessagesTest, RdmaOfferRoundTripAndLimits) {
  RdmaOffer offer;
  offer.mtu = 1024;
  offer.gid.fill(7);
  offer.qps = {{11, 0x123456}, {12, 0xabcdef}};
  std::string meta = EncodeRdmaOffer(offer);
  bool has = false;
  RdmaOffer back;
  ASSERT_TRUE(DecodeRdmaOffer(Bytes(meta), &has, &back).ok());
  EXPECT_TRUE(has);
  EXPECT_EQ(back.mtu, 1024u);
  EXPECT_EQ(back.gid, offer.gid);
  ASSERT_EQ(back.qps.size(), 2u);
  EXPECT_EQ(back.qps[1].psn, 0xabcdefu);
  EXPECT_LE(meta.size() + kNonceSize, kMaxConnectMeta);
  ASSERT_TRUE(DecodeRdmaOffer({}, &has, &back).ok());
  EXPECT_FALSE(has);
  EXPECT_FALSE(DecodeRdmaOffer(Bytes(meta.substr(0, meta.size() - 1)), &has, &back).ok());
  offer.qps.clear();
  EXPECT_FALSE(DecodeRdmaOffer(Bytes(EncodeRdmaOffer(offer)), &has, &back).ok());
}

TEST(MessagesTest, RdmaAnswerRoundTrip) {
  RdmaAnswer a;
  a.result = RdmaAnswerResult::kAccepted;
  a.mtu = 4096;
  a.traffic_class = 104;
  a.service_level = 3;
  a.rkey = 0xdeadbeef;
  a.qps = {{5, 6}};
  RdmaAnswer back;
  ASSERT_TRUE(DecodeRdmaAnswer(Bytes(EncodeRdmaAnswer(a)), &back).ok());
  EXPECT_EQ(back.traffic_class, 104);
  EXPECT_EQ(back.service_level, 3);
  EXPECT_EQ(back.rkey, 0xdeadbeefu);
  ASSERT_EQ(back.qps.size(), 1u);

  RdmaAnswer refused;
  refused.result = RdmaAnswerResult::kRefused;
  refused.message = "MTU mismatch: 1024 vs 4096";
  ASSERT_TRUE(DecodeRdmaAnswer(Bytes(EncodeRdmaAnswer(refused)), &back).ok());
  EXPECT_EQ(back.result, RdmaAnswerResult::kRefused);
  EXPECT_EQ(back.message, refused.message);
}

TEST(MessagesTest, RdmaGrantChecksSegmentsAddUp) {
  RdmaGrant g;
  g.token = 9;
  g.value_len = 30;
  g.checksum = 77;
  g.segments = {{0x1000, 20}, {0x9000, 10}};
  RdmaGrant back;
  ASSERT_TRUE(DecodeRdmaGrant(Bytes(EncodeRdmaGrant(g)), &back).ok());
  EXPECT_EQ(back.segments.size(), 2u);
  EXPECT_EQ(back.segments[1].addr, 0x9000u);
  g.value_len = 31;
  EXPECT_EQ(DecodeRdmaGrant(Bytes(EncodeRdmaGrant(g)), &back).code(), StatusCode::kProtocolError);

  std::string_view key;
  uint64_t len = 0, sum = 0;
  const std::string put = EncodeRdmaPutRequest("k1", 5, 6);  // the decoded key points into it
  ASSERT_TRUE(DecodeRdmaPutRequest(Bytes(put), &key, &len, &sum).ok());
  EXPECT_EQ(key, "k1");
  EXPECT_EQ(len, 5u);
  EXPECT_FALSE(DecodeRdmaPutRequest(Bytes(EncodeRdmaPutRequest("", 5, 6)), &key, &len, &sum).ok());
  uint64_t token = 0;
  ASSERT_TRUE(DecodeToken(Bytes(EncodeToken(42)), &token).ok());
  EXPECT_EQ(token, 42u);
}

}  // namespace
}  // namespace memkv::proto
