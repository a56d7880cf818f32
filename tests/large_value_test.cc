// Values past the old 256 MiB limit over TCP, and the value limit itself:
// memory.max_value_size, announced at Connect and applied by the client
// before it sends anything; in memory mode, the pool's size.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "proto/messages.h"
#include "tests/harness.h"
#include "tests/raw_connection.h"

namespace memkv::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Address space that reads as zeros and costs no memory until written: the
// source of puts that must be refused (or discarded) without being filled.
class ZeroRegion {
 public:
  explicit ZeroRegion(uint64_t size) : size_(size) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  }
  ~ZeroRegion() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  ZeroRegion(const ZeroRegion&) = delete;
  ZeroRegion& operator=(const ZeroRegion&) = delete;
  bool ok() const { return data_ != nullptr; }
  std::span<const uint8_t> span() const { return {data_, size_}; }

 private:
  uint64_t size_;
  uint8_t* data_ = nullptr;
};

class LargeValueTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess;
    ServerSpec spec;
    spec.memory_max_size = "4 GiB";
    spec.memory_block_size = "2 MiB";
    spec.memory_yaml = "  prefault: false\n";
    Status started = server_->Start(spec);
    ASSERT_TRUE(started.ok()) << started.ToString() << server_->Stderr();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static ServerProcess* server_;
};
ServerProcess* LargeValueTest::server_ = nullptr;

TEST_F(LargeValueTest, OneAndAHalfGiBRoundTripsByteExact) {
  auto client = ClientFor({server_}, 120000);
  ASSERT_NE(client, nullptr);
  const uint64_t size = 3 * kGiB / 2;
  std::vector<uint8_t> value(size);
  FillPattern(value, 42);
  const uint64_t sent_checksum = Checksum(value.data(), value.size());
  Status put = client->Put("large/1.5g", value);
  ASSERT_TRUE(put.ok()) << put.ToString();
  std::vector<uint8_t>().swap(value);  // only the checksum of what was sent remains

  Result<uint64_t> stored = client->ValueSize("large/1.5g");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(*stored, size);

  std::vector<uint8_t> back(size + kMiB);
  Result<size_t> got = client->GetInto("large/1.5g", back);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(*got, size);
  // Against the regenerated pattern, and against the checksum of what was sent.
  std::vector<uint8_t> again(size);
  FillPattern(again, 42);
  EXPECT_EQ(std::memcmp(back.data(), again.data(), size), 0);
  EXPECT_EQ(Checksum(back.data(), size), sent_checksum);
  ASSERT_TRUE(client->Delete("large/1.5g").ok());
}

TEST_F(LargeValueTest, ValueLargerThanThePoolIsRefusedNamingThePool) {
  auto client = ClientFor({server_}, 120000);
  ASSERT_NE(client, nullptr);
  ZeroRegion region(4 * kGiB + 2 * kMiB);
  ASSERT_TRUE(region.ok());
  Status put = client->Put("large/over-pool", region.span());
  EXPECT_EQ(put.code(), StatusCode::kTooLarge) << put.ToString();
  EXPECT_TRUE(Contains(put.message(), "4 GiB") && Contains(put.message(), "memory pool")) << put.ToString();
  // The connection stays usable: the server read and dropped the body.
  ASSERT_TRUE(client->Put("large/small", std::vector<uint8_t>(4096, 1)).ok());
  EXPECT_EQ(client->Get("large/over-pool").status().code(), StatusCode::kNotFound);
}

TEST_F(LargeValueTest, ValueOverTheServersLimitIsRefusedBeforeSending) {
  auto client = ClientFor({server_}, 10000);
  ASSERT_NE(client, nullptr);
  const uint64_t size = 16 * kGiB + 1;  // the default memory.max_value_size is 16 GiB
  ZeroRegion region(size);
  ASSERT_TRUE(region.ok());
  Status put = client->Put("large/over-limit", region.span());
  EXPECT_EQ(put.code(), StatusCode::kTooLarge) << put.ToString();
  EXPECT_TRUE(Contains(put.message(), std::to_string(size)) &&
              Contains(put.message(), std::to_string(16 * kGiB)) && Contains(put.message(), "memory.max_value_size"))
      << put.ToString();

  ZeroRegion over_protocol(proto::kMaxValueBytesCeiling + 1);
  ASSERT_TRUE(over_protocol.ok());
  put = client->Put("large/over-protocol", over_protocol.span());
  EXPECT_EQ(put.code(), StatusCode::kTooLarge) << put.ToString();
  EXPECT_TRUE(Contains(put.message(), std::to_string(proto::kMaxValueBytesCeiling))) << put.ToString();
  ASSERT_TRUE(client->Put("large/after", std::vector<uint8_t>(16, 2)).ok());
}

TEST(ConfiguredValueLimitTest, ServerAnnouncesAndEnforcesMaxValueSize) {
  ServerProcess server;
  ServerSpec spec;
  spec.memory_yaml = "  max_value_size: 8 MiB\n";
  ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();

  // The client refuses from the figure the server announced.
  auto client = ClientFor({&server});
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Put("at-limit", std::vector<uint8_t>(8 * kMiB, 3)).ok());
  Status put = client->Put("over", std::vector<uint8_t>(9 * kMiB, 4));
  EXPECT_EQ(put.code(), StatusCode::kTooLarge) << put.ToString();
  EXPECT_TRUE(Contains(put.message(), std::to_string(9 * kMiB)) && Contains(put.message(), std::to_string(8 * kMiB)) &&
              Contains(put.message(), "announced at Connect"))
      << put.ToString();

  // The Connect answer carries it, and the server holds a client that does
  // not look to it.
  auto raw = RawConnection::Open(server.port());
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  Result<RawResponse> hello = (*raw)->Handshake(kTestKeyHex);
  ASSERT_TRUE(hello.ok()) << hello.status().ToString();
  proto::ConnectResponse limits;
  std::span<const uint8_t> rest;
  ASSERT_TRUE(proto::DecodeConnectResponse(hello->meta, &limits, &rest).ok());
  EXPECT_EQ(limits.max_value_bytes, 8 * kMiB);
  ASSERT_TRUE((*raw)->SendBytes((*raw)->BuildFrame(proto::Opcode::kPut, "raw-over", std::vector<uint8_t>(9 * kMiB, 5), 1)).ok());
  Result<RawResponse> answer = (*raw)->Read();
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ(answer->header.status, StatusCode::kTooLarge);
  EXPECT_TRUE(Contains(answer->message(), std::to_string(8 * kMiB)) &&
              Contains(answer->message(), "memory.max_value_size"))
      << answer->message();
  EXPECT_EQ(client->Get("raw-over").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace memkv::testing
