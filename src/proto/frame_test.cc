#include "proto/frame.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cstring>
#include <vector>

namespace memkv::proto {
namespace {

FrameHeader SampleHeader() {
  FrameHeader h;
  h.opcode = static_cast<uint8_t>(Opcode::kPut);
  h.request_id = 0x1122334455667788ULL;
  h.meta_len = 5;
  h.payload_len = 2 * 1024 * 1024 + 1;
  h.payload_checksum = 0xabcdef;
  return h;
}

TEST(FrameTest, FieldsRoundTrip) {
  uint8_t buf[kFieldsSize];
  EncodeFields(SampleHeader(), buf);
  EXPECT_EQ(std::memcmp(buf, "MKVF", 4), 0);
  FrameHeader back;
  ASSERT_TRUE(DecodeFields(buf, &back).ok());
  EXPECT_EQ(back.opcode, 0x20);
  EXPECT_EQ(back.request_id, 0x1122334455667788ULL);
  EXPECT_EQ(back.payload_len, 2u * 1024 * 1024 + 1);
  EXPECT_EQ(back.payload_checksum, 0xabcdefu);
  EXPECT_FALSE(back.is_response());
}

TEST(FrameTest, OpcodesAreFixed) {
  EXPECT_EQ(static_cast<int>(Opcode::kConnect), 0x06);
  EXPECT_EQ(static_cast<int>(Opcode::kPut), 0x20);
  EXPECT_EQ(static_cast<int>(Opcode::kGet), 0x21);
  EXPECT_EQ(static_cast<int>(Opcode::kDelete), 0x22);
  EXPECT_EQ(OpcodeName(0x20), "TcpPut");
  EXPECT_EQ(OpcodeName(0x7f), "0x7f");
  EXPECT_FALSE(IsKnownOpcode(0x7f));
}

TEST(FrameTest, RejectsBadMagic) {
  uint8_t buf[kFieldsSize];
  EncodeFields(SampleHeader(), buf);
  buf[0] = 'X';
  FrameHeader back;
  EXPECT_EQ(DecodeFields(buf, &back).code(), StatusCode::kProtocolError);
}

TEST(FrameTest, NewerVersionIsUnsupportedButIdKept) {
  FrameHeader h = SampleHeader();
  h.version = kProtocolVersion + 1;
  uint8_t buf[kFieldsSize];
  EncodeFields(h, buf);
  FrameHeader back;
  Status s = DecodeFields(buf, &back);
  EXPECT_EQ(s.code(), StatusCode::kUnsupportedVersion);
  EXPECT_EQ(back.request_id, h.request_id);
  h.version = 0;
  EncodeFields(h, buf);
  EXPECT_EQ(DecodeFields(buf, &back).code(), StatusCode::kProtocolError);
}

TEST(FrameTest, HugeLengthPrefixIsTooLarge) {
  FrameHeader h = SampleHeader();
  h.payload_len = 1ULL << 63;
  uint8_t buf[kFieldsSize];
  EncodeFields(h, buf);
  FrameHeader back;
  EXPECT_EQ(DecodeFields(buf, &back).code(), StatusCode::kTooLarge);
  h = SampleHeader();
  h.meta_len = kMaxMetaBytes + 1;
  EncodeFields(h, buf);
  EXPECT_EQ(DecodeFields(buf, &back).code(), StatusCode::kTooLarge);
}

TEST(FrameTest, UnknownFlagsAndReservedRejected) {
  FrameHeader h = SampleHeader();
  h.flags = 0x8000;
  uint8_t buf[kFieldsSize];
  EncodeFields(h, buf);
  FrameHeader back;
  EXPECT_EQ(DecodeFields(buf, &back).code(), StatusCode::kProtocolError);
  EncodeFields(SampleHeader(), buf);
  buf[18] = 1;
  EXPECT_EQ(DecodeFields(buf, &back).code(), StatusCode::kProtocolError);
}

struct Pair {
  std::unique_ptr<FrameAuth> client;
  std::unique_ptr<FrameAuth> server;
};

Pair MakePair(uint8_t key_byte, uint8_t nonce_byte) {
  std::vector<uint8_t> master(32, key_byte);
  std::array<uint8_t, kNonceSize> cn{}, sn{};
  cn.fill(nonce_byte);
  sn.fill(static_cast<uint8_t>(nonce_byte + 1));
  auto keys = DeriveSessionKeys(master, cn, sn);
  EXPECT_TRUE(keys.ok());
  Pair p;
  p.client = std::move(FrameAuth::Create(keys->client_to_server, keys->server_to_client).value());
  p.server = std::move(FrameAuth::Create(keys->server_to_client, keys->client_to_server).value());
  return p;
}

TEST(FrameAuthTest, VerifiesInOrder) {
  Pair p = MakePair(7, 1);
  uint8_t fields[kFieldsSize];
  EncodeFields(SampleHeader(), fields);
  const std::vector<uint8_t> meta = {'k', 'e', 'y', '0', '1'};
  Tag t0 = p.client->SignNext(fields, meta);
  Tag t1 = p.client->SignNext(fields, meta);
  EXPECT_NE(t0, t1);  // same bytes, different sequence numbers
  EXPECT_TRUE(p.server->VerifyNext(fields, meta, t0));
  EXPECT_TRUE(p.server->VerifyNext(fields, meta, t1));
}

TEST(FrameAuthTest, ReplayOnSameConnectionFails) {
  Pair p = MakePair(7, 1);
  uint8_t fields[kFieldsSize];
  EncodeFields(SampleHeader(), fields);
  Tag t0 = p.client->SignNext(fields, {});
  EXPECT_TRUE(p.server->VerifyNext(fields, {}, t0));
  EXPECT_FALSE(p.server->VerifyNext(fields, {}, t0));
}

TEST(FrameAuthTest, OtherConnectionOrKeyOrTamperFails) {
  Pair a = MakePair(7, 1);
  Pair b = MakePair(7, 9);   // same key, other nonces
  Pair c = MakePair(8, 1);   // other key
  uint8_t fields[kFieldsSize];
  EncodeFields(SampleHeader(), fields);
  Tag t = a.client->SignNext(fields, {});
  EXPECT_FALSE(b.server->VerifyNext(fields, {}, t));
  EXPECT_FALSE(c.server->VerifyNext(fields, {}, t));
  fields[10] ^= 1;
  EXPECT_FALSE(a.server->VerifyNext(fields, {}, t));
}

TEST(FrameAuthTest, DirectionsDiffer) {
  Pair p = MakePair(7, 1);
  uint8_t fields[kFieldsSize];
  EncodeFields(SampleHeader(), fields);
  Tag from_server = p.server->SignNext(fields, {});
  // A server frame reflected back at the server does not verify.
  EXPECT_FALSE(p.server->VerifyNext(fields, {}, from_server));
}

TEST(ConnectTagTest, BoundToClientNonce) {
  std::vector<uint8_t> master(32, 3);
  auto mac = HmacSha256::Create(master);
  ASSERT_TRUE(mac.ok());
  uint8_t fields[kFieldsSize];
  EncodeFields(SampleHeader(), fields);
  std::vector<uint8_t> n1(32, 1), n2(32, 2);
  EXPECT_NE(ConnectTag(**mac, fields, {}, n1), ConnectTag(**mac, fields, {}, n2));
}

TEST(KeyHintTest, IsTheLeadingBytesOfTheKeysIdTagAndDiffersByKey) {
  std::vector<uint8_t> k1(32, 3), k2(32, 4);
  Result<KeyHint> h1 = KeyHintOf(k1);
  Result<KeyHint> h2 = KeyHintOf(k2);
  ASSERT_TRUE(h1.ok() && h2.ok());
  EXPECT_NE(*h1, *h2);
  EXPECT_EQ(*KeyHintOf(k1), *h1);
  auto mac = HmacSha256::Create(k1);
  ASSERT_TRUE(mac.ok());
  const std::string label = "memkv v1 key id";
  const Tag tag = (*mac)->Compute(label.data(), label.size());
  EXPECT_TRUE(std::equal(h1->begin(), h1->end(), tag.begin()));
}

}  // namespace
}  // namespace memkv::proto
