// Bad input against a real server: each gets a clear error or a closed
// connection, while other clients keep being served and stored data stays
// intact.
#include <gtest/gtest.h>

#include <cstring>

#include "base/bytes.h"
#include "base/hmac.h"
#include "proto/messages.h"
#include "tests/harness.h"
#include "tests/raw_connection.h"

namespace memkv::testing {
namespace {

constexpr char kWrongKeyHex[] = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

class BadInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess();
    ServerSpec spec;
    spec.extra_args = {"--handshake-timeout-ms", "500", "--write-stall-timeout-ms", "500"};
    Status s = server_->Start(spec);
    ASSERT_TRUE(s.ok()) << s.ToString();
    auto client = ClientFor({server_});
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->Put("sentinel", Pattern(3 << 20, 42)).ok());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  // The server still answers other clients and the stored data is intact.
  static void ExpectHealthy() {
    auto client = ClientFor({server_});
    ASSERT_NE(client, nullptr);
    auto value = client->Get("sentinel");
    ASSERT_TRUE(value.ok()) << value.status().ToString() << "\n" << server_->Stderr();
    EXPECT_EQ(*value, Pattern(3 << 20, 42));
  }

  static std::unique_ptr<RawConnection> Authenticated() {
    auto c = RawConnection::Open(server_->port());
    EXPECT_TRUE(c.ok());
    auto hello = (*c)->Handshake(kTestKeyHex);
    EXPECT_TRUE(hello.ok() && hello->header.status == StatusCode::kOk);
    return std::move(c).value();
  }

  static ServerProcess* server_;
};
ServerProcess* BadInputTest::server_ = nullptr;

TEST_F(BadInputTest, GarbageBytesGetProtocolErrorAndClose) {
  auto c = RawConnection::Open(server_->port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->SendBytes(Pattern(500, 7)).ok());
  auto r = (*c)->Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->header.status, StatusCode::kProtocolError);
  EXPECT_NE(r->message().find("magic"), std::string::npos) << r->message();
  EXPECT_TRUE((*c)->ClosedByPeer());
  ExpectHealthy();
}

TEST_F(BadInputTest, TruncatedFrameThenCloseLeavesServerHealthy) {
  auto c = RawConnection::Open(server_->port());
  ASSERT_TRUE(c.ok());
  std::vector<uint8_t> frame = (*c)->BuildFrame(proto::Opcode::kConnect, std::string(32, 'n'), {}, 1);
  frame.resize(30);
  ASSERT_TRUE((*c)->SendBytes(frame).ok());
  c->reset();
  ExpectHealthy();
}

TEST_F(BadInputTest, HugeLengthPrefixIsRefusedWithoutReadingIt) {
  auto c = Authenticated();
  auto frame = c->BuildRawFrame(0x20, "k", {}, 2, 1ULL << 63);
  ASSERT_TRUE(c->SendBytes(frame).ok());
  auto r = c->Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->header.status, StatusCode::kTooLarge);
  EXPECT_NE(r->message().find("payload_len"), std::string::npos) << r->message();
  EXPECT_TRUE(c->ClosedByPeer());
  ExpectHealthy();
}

TEST_F(BadInputTest, UnknownOpcodeIsAnsweredAndConnectionStaysUsable) {
  auto c = Authenticated();
  ASSERT_TRUE(c->SendBytes(c->BuildRawFrame(0x7f, "", {1, 2, 3}, 5)).ok());
  auto r = c->Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->header.status, StatusCode::kProtocolError);
  EXPECT_EQ(r->header.request_id, 5u);
  EXPECT_NE(r->message().find("0x7f"), std::string::npos) << r->message();
  ASSERT_TRUE(c->SendBytes(c->BuildFrame(proto::Opcode::kPing, "", {}, 6)).ok());
  auto pong = c->Read();
  ASSERT_TRUE(pong.ok()) << pong.status().ToString();
  EXPECT_EQ(pong->header.status, StatusCode::kOk);
  EXPECT_EQ(pong->header.request_id, 6u);
}

TEST_F(BadInputTest, RdmaControlOpsWithoutRdmaAreRefusedAndTheConnectionStaysUsable) {
  // A TCP-only session (no RDMA offer at Connect) asking for RDMA grants.
  auto c = Authenticated();
  uint64_t id = 10;
  for (proto::Opcode op : {proto::Opcode::kRdmaPut, proto::Opcode::kRdmaGet, proto::Opcode::kRdmaCommit,
                           proto::Opcode::kRdmaRelease}) {
    const std::string meta = op == proto::Opcode::kRdmaPut   ? proto::EncodeRdmaPutRequest("sentinel", 10, 0)
                             : op == proto::Opcode::kRdmaGet ? std::string("sentinel")
                                                             : proto::EncodeToken(1);
    ASSERT_TRUE(c->SendBytes(c->BuildFrame(op, meta, {}, id)).ok());
    auto r = c->Read();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->header.status, StatusCode::kFailedPrecondition) << proto::OpcodeName(static_cast<uint8_t>(op));
    EXPECT_NE(r->message().find("needs RDMA"), std::string::npos) << r->message();
    EXPECT_EQ(r->header.request_id, id++);
  }
  ASSERT_TRUE(c->SendBytes(c->BuildFrame(proto::Opcode::kPing, "", {}, id)).ok());
  auto pong = c->Read();
  ASSERT_TRUE(pong.ok()) << pong.status().ToString();
  EXPECT_EQ(pong->header.status, StatusCode::kOk);
  ExpectHealthy();
}

TEST_F(BadInputTest, MalformedRdmaOfferAtConnectIsAProtocolError) {
  // A Connect meta longer than the nonce but not a valid offer: refused as
  // malformed, and nobody else is affected.
  auto c = RawConnection::Open(server_->port());
  ASSERT_TRUE(c.ok());
  std::vector<uint8_t> meta(proto::kNonceSize + 5, 0x42);
  auto mac = HmacSha256::Create(*HexDecode(kTestKeyHex));
  ASSERT_TRUE(mac.ok());
  std::vector<uint8_t> frame(proto::kHeaderSize + meta.size());
  proto::FrameHeader h;
  h.opcode = static_cast<uint8_t>(proto::Opcode::kConnect);
  h.meta_len = static_cast<uint32_t>(meta.size());
  proto::EncodeFields(h, frame.data());
  std::memcpy(frame.data() + proto::kHeaderSize, meta.data(), meta.size());
  Tag tag = proto::ConnectTag(**mac, frame.data(), meta, {});
  std::memcpy(frame.data() + proto::kFieldsSize, tag.data(), tag.size());
  ASSERT_TRUE((*c)->SendBytes(frame).ok());
  auto r = (*c)->Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->header.status, StatusCode::kProtocolError) << r->message();
  EXPECT_NE(r->message().find("RDMA offer"), std::string::npos) << r->message();
  EXPECT_TRUE((*c)->ClosedByPeer());
  ExpectHealthy();
}

TEST_F(BadInputTest, NewerVersionIsUnsupported) {
  auto c = RawConnection::Open(server_->port());
  ASSERT_TRUE(c.ok());
  auto r = (*c)->Handshake(kTestKeyHex, proto::kProtocolVersion + 1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->header.status, StatusCode::kUnsupportedVersion);
  EXPECT_EQ(r->header.version, proto::kProtocolVersion);
  EXPECT_NE(r->message().find("newer"), std::string::npos) << r->message();
  EXPECT_TRUE((*c)->ClosedByPeer());
  ExpectHealthy();
}

TEST_F(BadInputTest, WrongKeyIsRejected) {
  auto c = RawConnection::Open(server_->port());
  ASSERT_TRUE(c.ok());
  auto r = (*c)->Handshake(kWrongKeyHex);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->header.status, StatusCode::kAuthFailed);
  EXPECT_TRUE((*c)->ClosedByPeer());
  // The library reports it the same way.
  ClientOptions o = OptionsFor({server_});
  o.auth_key_hex = kWrongKeyHex;
  auto client = Client::Create(o);
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->Get("sentinel").status().code(), StatusCode::kAuthFailed);
  ExpectHealthy();
}

TEST_F(BadInputTest, FrameBeforeConnectIsRejected) {
  auto c = RawConnection::Open(server_->port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->SendBytes((*c)->BuildFrame(proto::Opcode::kGet, "sentinel", {}, 3)).ok());
  auto r = (*c)->Read();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->header.status, StatusCode::kAuthFailed);
  EXPECT_TRUE((*c)->ClosedByPeer());
}

TEST_F(BadInputTest, TamperedKeyFailsAuthentication) {
  auto c = Authenticated();
  auto frame = c->BuildFrame(proto::Opcode::kPut, "tampered-key", Pattern(1000, 1), 9);
  frame[proto::kHeaderSize] ^= 0x01;  // first byte of the key
  ASSERT_TRUE(c->SendBytes(frame).ok());
  auto r = c->Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->header.status, StatusCode::kAuthFailed);
  EXPECT_TRUE(c->ClosedByPeer());
  auto client = ClientFor({server_});
  EXPECT_EQ(client->Get("tampered-key").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(client->Get("uampered-key").status().code(), StatusCode::kNotFound);
  ExpectHealthy();
}

TEST_F(BadInputTest, TamperedPayloadIsNeverStored) {
  auto c = Authenticated();
  auto frame = c->BuildFrame(proto::Opcode::kPut, "tampered-value", Pattern(100000, 2), 10);
  frame.back() ^= 0x80;
  ASSERT_TRUE(c->SendBytes(frame).ok());
  auto r = c->Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->header.status, StatusCode::kCorruption);
  EXPECT_TRUE(c->ClosedByPeer());
  auto client = ClientFor({server_});
  EXPECT_EQ(client->Get("tampered-value").status().code(), StatusCode::kNotFound);
  ExpectHealthy();
}

TEST_F(BadInputTest, ReplayedFrameIsRejectedOnAnotherConnectionAndTheSame) {
  auto a = Authenticated();
  auto frame = a->BuildFrame(proto::Opcode::kDelete, "sentinel", {}, 11);
  // Replay on a new connection: its session keys differ.
  auto b = Authenticated();
  ASSERT_TRUE(b->SendBytes(frame).ok());
  auto rb = b->Read();
  ASSERT_TRUE(rb.ok());
  EXPECT_EQ(rb->header.status, StatusCode::kAuthFailed);
  EXPECT_TRUE(b->ClosedByPeer());
  // Deliver a frame once on its own connection, then replay it there.
  auto c = Authenticated();
  auto ping = c->BuildFrame(proto::Opcode::kPing, "", {}, 12);
  ASSERT_TRUE(c->SendBytes(ping).ok());
  auto first = c->Read();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->header.status, StatusCode::kOk);
  ASSERT_TRUE(c->SendBytes(ping).ok());
  auto again = c->Read();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->header.status, StatusCode::kAuthFailed);
  EXPECT_TRUE(c->ClosedByPeer());
  ExpectHealthy();  // the captured Delete of "sentinel" never ran
}

TEST_F(BadInputTest, OversizedKeyAndValueAreRefusedClearly) {
  auto c = Authenticated();
  std::string long_key(proto::kMaxKeyBytes + 1, 'k');
  ASSERT_TRUE(c->SendBytes(c->BuildFrame(proto::Opcode::kGet, long_key, {}, 13)).ok());
  auto r = c->Read();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->header.status, StatusCode::kTooLarge);
  EXPECT_NE(r->message().find("1024"), std::string::npos) << r->message();
  // A value over the pool (256 MiB here) is read, dropped and refused; the
  // connection stays in sync.
  std::vector<uint8_t> big(proto::kMaxValueBytes + 1, 0x5a);
  ASSERT_TRUE(c->SendBytes(c->BuildFrame(proto::Opcode::kPut, "big", big, 14)).ok());
  auto rv = c->Read(20000);
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  EXPECT_EQ(rv->header.status, StatusCode::kTooLarge);
  EXPECT_NE(rv->message().find("larger than the whole memory pool of 256 MiB"), std::string::npos) << rv->message();
  ASSERT_TRUE(c->SendBytes(c->BuildFrame(proto::Opcode::kPing, "", {}, 15)).ok());
  EXPECT_TRUE(c->Read().ok());
  // The library refuses the key before sending anything; the value is within
  // the server's announced limit, so the server refuses it (its pool).
  auto client = ClientFor({server_}, 20000);
  EXPECT_EQ(client->Get(long_key).status().code(), StatusCode::kTooLarge);
  EXPECT_EQ(client->Put("big", big).code(), StatusCode::kTooLarge);
  ExpectHealthy();
}

TEST_F(BadInputTest, SilentClientIsClosedAfterHandshakeTimeout) {
  auto c = RawConnection::Open(server_->port());
  ASSERT_TRUE(c.ok());
  ExpectHealthy();  // served while the silent one waits
  EXPECT_TRUE((*c)->ClosedByPeer(10000));
}

TEST_F(BadInputTest, DisconnectMidFrameStoresNothing) {
  auto c = Authenticated();
  auto frame = c->BuildFrame(proto::Opcode::kPut, "half-sent", Pattern(1 << 20, 3), 16);
  frame.resize(frame.size() / 2);
  ASSERT_TRUE(c->SendBytes(frame).ok());
  c.reset();
  auto client = ClientFor({server_});
  EXPECT_EQ(client->Get("half-sent").status().code(), StatusCode::kNotFound);
  ExpectHealthy();
}

TEST_F(BadInputTest, ClientThatStopsReadingIsClosedAndReleasesItsPins) {
  auto client = ClientFor({server_});
  ASSERT_TRUE(client->Put("pinned-big", Pattern(64 << 20, 8)).ok());
  auto c = Authenticated();
  // Ask for the value over and over and never read: the answers stay queued,
  // holding the value pinned, until the server gives up on this client.
  for (uint64_t id = 100; id < 110; ++id) {
    ASSERT_TRUE(c->SendBytes(c->BuildFrame(proto::Opcode::kGet, "pinned-big", {}, id)).ok());
  }
  EXPECT_TRUE(PollUntil([&] { return server_->Stderr().find("has not read its responses") != std::string::npos; },
                        10000))
      << server_->Stderr();
  // With the pins gone the pool can be filled again: 256 MiB of new values
  // evict everything unpinned, including "pinned-big".
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(client->Put("filler-" + std::to_string(i), Pattern(32 << 20, 9)).ok()) << i;
  }
  EXPECT_EQ(client->Get("pinned-big").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(client->Put("sentinel", Pattern(3 << 20, 42)).ok());
  ExpectHealthy();
}

TEST_F(BadInputTest, ThousandIdleConnectionsDoNotStarveOthers) {
  ASSERT_TRUE(RaiseOpenFilesLimit(1200)) << "open-files limit too low for this test";
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 1000; ++i) {
    auto c = RawConnection::Open(server_->port());
    ASSERT_TRUE(c.ok()) << i << ": " << c.status().ToString();
    idle.push_back(std::move(c).value());
  }
  ExpectHealthy();
  auto client = ClientFor({server_});
  ASSERT_TRUE(client->Put("during-idle", Pattern(4096, 5)).ok());
  EXPECT_EQ(*client->Get("during-idle"), Pattern(4096, 5));
}

}  // namespace
}  // namespace memkv::testing
