// Values larger than the DRAM pool in file mode: a put goes to the drives a
// window at a time and a get comes back the same way, so neither the server
// nor the client holds the value beyond the caller's own buffer. The value
// survives a restart; a put cut off part-way leaves the old value and frees
// what it reserved. (value_memory_test measures both ends' memory at 8 GiB.)
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "base/checksum.h"
#include "proto/messages.h"
#include "tests/harness.h"
#include "tests/raw_connection.h"

namespace memkv::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

// Sum of a metric's samples whose labels contain `label` and not `except`.
double SumOf(uint16_t admin, const std::string& metric, const std::string& except) {
  const std::map<std::string, double> samples = PrometheusSamples(HttpRequestTo(admin, "GET", "/v1/metrics").body);
  double sum = 0;
  for (const auto& [name, value] : samples) {
    if (name.rfind(metric + "{", 0) == 0 && name.find(except) == std::string::npos) sum += value;
  }
  return sum;
}

double DriveUsedBytes(uint16_t admin) { return SumOf(admin, "memkv_capacity_used_bytes", "device=\"dram\""); }

TEST(StreamedValueTest, AValueLargerThanThePoolLivesOnTheDrivesAndSurvivesARestart) {
  TempDir dir;
  const ServerSpec spec = FileModeSpec(dir.path(), 2, "1 GiB", "64 MiB");
  const uint64_t size = 1 * kGiB + 12345;  // over the pool, and over both drives' halves: striped
  std::vector<uint8_t> value(size);
  FillPattern(value, 7);
  const uint64_t checksum = Checksum(value.data(), size);
  {
    ServerProcess server;
    ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();
    auto client = ClientFor({&server}, 30000);
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->Put("big", std::vector<uint8_t>(1000, 1)).ok());
    Status put = client->Put("big", value);
    ASSERT_TRUE(put.ok()) << put.ToString() << server.Stderr();
    std::vector<uint8_t> back(size);
    Result<size_t> got = client->GetInto("big", back);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(*got, size);
    EXPECT_TRUE(back == value);
    // Small values still go through DRAM beside it, on the same connection.
    ASSERT_TRUE(client->Put("small", std::vector<uint8_t>(4096, 2)).ok());
    EXPECT_EQ(client->Get("small")->size(), 4096u);
    EXPECT_EQ(server.Stop(), 0);
  }
  ServerProcess again;
  ASSERT_TRUE(again.Start(spec).ok()) << again.Stderr();
  auto client = ClientFor({&again}, 30000);
  ASSERT_NE(client, nullptr);
  std::vector<uint8_t>().swap(value);
  Result<std::vector<uint8_t>> back = client->Get("big");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), size);
  EXPECT_EQ(Checksum(back->data(), size), checksum);
}

TEST(StreamedValueTest, APutCutOffPartWayLeavesTheOldValueAndFreesItsExtents) {
  TempDir dir;
  ServerProcess server;
  ASSERT_TRUE(server.Start(FileModeSpec(dir.path(), 2, "512 MiB", "64 MiB")).ok()) << server.Stderr();
  const uint16_t admin = server.AdminPort();
  ASSERT_NE(admin, 0);
  auto client = ClientFor({&server}, 30000);
  ASSERT_NE(client, nullptr);
  const std::vector<uint8_t> old_value = Pattern(40 * kMiB, 1);  // over a quarter of the pool: on the drives only
  ASSERT_TRUE(client->Put("k", old_value).ok());
  const double used_before = DriveUsedBytes(admin);

  {
    auto raw = RawConnection::Open(server.port());
    ASSERT_TRUE(raw.ok());
    auto hello = (*raw)->Handshake(kTestKeyHex);
    ASSERT_TRUE(hello.ok() && hello->header.status == StatusCode::kOk);
    std::vector<uint8_t> frame = (*raw)->BuildFrame(proto::Opcode::kPut, "k", Pattern(300 * kMiB, 2), 2);
    frame.resize(frame.size() - 100 * kMiB);  // two thirds of the value, then the client is gone
    ASSERT_TRUE((*raw)->SendBytes(frame).ok());
    EXPECT_TRUE(PollUntil([&] { return DriveUsedBytes(admin) > used_before + 250 * kMiB; }, 30000))
        << "the whole value's extents are reserved, and the pieces written";
    EXPECT_TRUE(*client->Get("k") == old_value) << "readers see the old value meanwhile";
  }
  EXPECT_TRUE(PollUntil([&] { return DriveUsedBytes(admin) == used_before; }, 30000))
      << DriveUsedBytes(admin) << " vs " << used_before;
  EXPECT_TRUE(*client->Get("k") == old_value);
}

TEST(StreamedValueTest, RequestsPipelinedBehindAValueSentInPiecesAreAnsweredAfterItInOrder) {
  TempDir dir;
  ServerProcess server;
  ASSERT_TRUE(server.Start(FileModeSpec(dir.path(), 2, "512 MiB", "64 MiB")).ok()) << server.Stderr();
  auto client = ClientFor({&server}, 30000);
  ASSERT_NE(client, nullptr);
  const std::vector<uint8_t> big = Pattern(100 * kMiB, 3);  // read from the drives in pieces (over 64 MiB)
  const std::vector<uint8_t> small = Pattern(1000, 4);
  ASSERT_TRUE(client->Put("big", big).ok());
  ASSERT_TRUE(client->Put("small", small).ok());

  auto raw = RawConnection::Open(server.port());
  ASSERT_TRUE(raw.ok());
  auto hello = (*raw)->Handshake(kTestKeyHex);
  ASSERT_TRUE(hello.ok() && hello->header.status == StatusCode::kOk);
  std::vector<uint8_t> frames = (*raw)->BuildFrame(proto::Opcode::kGet, "big", {}, 2);
  for (const auto& [opcode, meta, id] : {std::tuple{proto::Opcode::kPing, std::string(), uint64_t{3}},
                                         std::tuple{proto::Opcode::kGet, std::string("small"), uint64_t{4}},
                                         std::tuple{proto::Opcode::kGet, std::string("big"), uint64_t{5}}}) {
    const std::vector<uint8_t> f = (*raw)->BuildFrame(opcode, meta, {}, id);
    frames.insert(frames.end(), f.begin(), f.end());
  }
  ASSERT_TRUE((*raw)->SendBytes(frames).ok());
  for (uint64_t id : {2, 3, 4, 5}) {
    auto r = (*raw)->Read(30000);
    ASSERT_TRUE(r.ok()) << id << ": " << r.status().ToString();
    EXPECT_EQ(r->header.request_id, id);
    EXPECT_EQ(r->header.status, StatusCode::kOk);
    if (id == 2 || id == 5) {
      EXPECT_TRUE(r->payload == big) << id;
      EXPECT_EQ(r->header.payload_checksum, Checksum(big.data(), big.size()));
    }
    if (id == 4) {
      EXPECT_TRUE(r->payload == small);
    }
  }
}

}  // namespace
}  // namespace memkv::testing
