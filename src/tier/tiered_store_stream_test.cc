// TieredStore with drives: values over a quarter of the pool go to the
// drives in pieces and never through DRAM; values on the drives too large
// for a buffer come back in pieces; a put given up leaves the old value.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "drive/test_util.h"
#include "tier/tier_test_util.h"

namespace memkv::tier {
namespace {

using drive::Pattern;

constexpr uint64_t kPoolBytes = 4 << 20;           // streams puts over 1 MiB
constexpr uint64_t kDriveFileBytes = 48 << 20;     // two of them
constexpr uint64_t kBigBytes = TieredStore::kStreamGetBytes + (3 << 20) + 100;  // read in pieces too

Result<std::shared_ptr<ValueStream>> BeginNow(TieredStore& store, TestLoop& loop, const std::string& key,
                                              uint64_t size) {
  std::optional<Result<std::shared_ptr<ValueStream>>> result;
  store.BeginStreamPut(key, size, loop.reply(), [&](Result<std::shared_ptr<ValueStream>> s) { result.emplace(std::move(s)); });
  if (!loop.RunUntil([&] { return result.has_value(); })) return DeadlineExceeded("begin " + key);
  return std::move(*result);
}

Status MoveNow(TieredStore& store, TestLoop& loop, const std::shared_ptr<ValueStream>& stream) {
  std::optional<Status> result;
  store.MoveStreamPiece(stream, loop.reply(), [&](Status s) { result = std::move(s); });
  if (!loop.RunUntil([&] { return result.has_value(); })) return DeadlineExceeded("move");
  return *result;
}

// Writes `bytes[0, upto)` a window at a time.
Status WritePieces(TieredStore& store, TestLoop& loop, const std::shared_ptr<ValueStream>& stream,
                   const std::vector<uint8_t>& bytes, uint64_t upto) {
  while (stream->moved() < upto) {
    std::memcpy(stream->window(), bytes.data() + stream->moved(), stream->next_piece());
    MEMKV_RETURN_IF_ERROR(MoveNow(store, loop, stream));
  }
  return Status::Ok();
}

Status StreamPutNow(TieredStore& store, TestLoop& loop, const std::string& key, const std::vector<uint8_t>& bytes,
                    uint64_t checksum) {
  MEMKV_ASSIGN_OR_RETURN(std::shared_ptr<ValueStream> stream, BeginNow(store, loop, key, bytes.size()));
  MEMKV_RETURN_IF_ERROR(WritePieces(store, loop, stream, bytes, bytes.size()));
  std::optional<Status> result;
  store.FinishStreamPut(stream, checksum, loop.reply(), [&](Status s) { result = std::move(s); });
  if (!loop.RunUntil([&] { return result.has_value(); })) return DeadlineExceeded("finish " + key);
  return *result;
}

// The value of a streamed get, read a window at a time.
Result<std::vector<uint8_t>> ReadPieces(TieredStore& store, TestLoop& loop, const StoredValue& v) {
  EXPECT_TRUE(v.streamed());
  EXPECT_TRUE(v.iov().empty());
  const std::shared_ptr<ValueStream>& stream = v.stream();
  std::vector<uint8_t> out;
  while (stream->left() > 0) {
    const uint64_t n = stream->next_piece();
    MEMKV_RETURN_IF_ERROR(MoveNow(store, loop, stream));
    out.insert(out.end(), stream->window(), stream->window() + n);
  }
  return out;
}

TEST(TieredStoreStreamTest, OnlyValuesOverAQuarterOfThePoolStreamAndOnlyWithDrives) {
  TierHarness with(kPoolBytes, /*with_drives=*/true);
  EXPECT_FALSE(with.store().StreamsPut(kPoolBytes / 4));
  EXPECT_TRUE(with.store().StreamsPut(kPoolBytes / 4 + 1));
  TierHarness without(kPoolBytes, /*with_drives=*/false);
  EXPECT_FALSE(without.store().StreamsPut(uint64_t{1} << 40)) << "memory mode: the pool is all there is";
}

TEST(TieredStoreStreamTest, AStreamedPutLandsOnTheDrivesOnlyAndComesBackInPieces) {
  TierHarness h(kPoolBytes, /*with_drives=*/true, {}, kDriveFileBytes);
  TieredStore& store = h.store();
  ASSERT_TRUE(PutNow(store, h.loop(), "k", Pattern(1000, 1)).ok());
  ASSERT_TRUE(store.memory().Exists("k"));
  const std::vector<uint8_t> big = Pattern(kBigBytes, 2);
  const uint64_t checksum = Checksum(big.data(), big.size());
  Status put = StreamPutNow(store, h.loop(), "k", big, checksum);
  ASSERT_TRUE(put.ok()) << put.ToString();
  EXPECT_FALSE(store.memory().Exists("k")) << "the older DRAM copy is dropped";
  EXPECT_EQ(store.ValueSize("k"), big.size());

  Result<StoredValue> got = GetNow(store, h.loop(), "k");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->streamed()) << "too large for a buffer of its own";
  EXPECT_EQ(got->size(), big.size());
  EXPECT_EQ(got->checksum(), checksum);
  Result<std::vector<uint8_t>> bytes = ReadPieces(store, h.loop(), *got);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_TRUE(*bytes == big);
  EXPECT_FALSE(store.memory().Exists("k")) << "not promoted: a quarter of the pool is the most DRAM takes";

  Result<StoredValue> pin = GetNow(store, h.loop(), "k", ReadNeed::kDramPin);
  EXPECT_EQ(pin.status().code(), StatusCode::kResourceExhausted) << "an RDMA READ needs it in DRAM";
}

TEST(TieredStoreStreamTest, AValueBetweenAQuarterOfThePoolAndTheStreamedReadSizeIsReadWhole) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  const std::vector<uint8_t> mid = Pattern(3 << 20, 3);
  ASSERT_TRUE(StreamPutNow(store, h.loop(), "m", mid, Checksum(mid.data(), mid.size())).ok());
  Result<StoredValue> got = GetNow(store, h.loop(), "m");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->streamed());
  EXPECT_TRUE(BytesOf(*got) == mid);
}

TEST(TieredStoreStreamTest, APutGivenUpMidWayLeavesTheOldValueAndFreesItsExtents) {
  TierHarness h(kPoolBytes, /*with_drives=*/true, {}, kDriveFileBytes);
  TieredStore& store = h.store();
  const std::vector<uint8_t> old_value = Pattern(2 << 20, 4);
  ASSERT_TRUE(StreamPutNow(store, h.loop(), "k", old_value, Checksum(old_value.data(), old_value.size())).ok());
  const uint64_t free_before = store.DrivesStats()->free_bytes();
  {
    const std::vector<uint8_t> big = Pattern(kBigBytes, 5);
    Result<std::shared_ptr<ValueStream>> stream = BeginNow(store, h.loop(), "k", big.size());
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    ASSERT_TRUE(WritePieces(store, h.loop(), *stream, big, ValueStream::kWindowBytes).ok());
    EXPECT_TRUE(BytesOf(*GetNow(store, h.loop(), "k")) == old_value) << "readers see the old value mid-put";
  }  // the sender went away
  EXPECT_TRUE(BytesOf(*GetNow(store, h.loop(), "k")) == old_value);
  EXPECT_EQ(store.DrivesStats()->free_bytes(), free_before);
}

TEST(TieredStoreStreamTest, BytesThatDoNotMatchTheirChecksumAreNotStored) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  const std::vector<uint8_t> value = Pattern(2 << 20, 6);
  Status s = StreamPutNow(store, h.loop(), "k", value, Checksum(value.data(), value.size()) + 1);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_FALSE(store.Exists("k"));
  EXPECT_EQ(store.Counters().write_failures, 1u);
}

TEST(TieredStoreStreamTest, NoRoomOnTheDrivesIsResourceExhaustedAfterEvictingWhatCanBe) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);  // two 8 MiB drive files
  TieredStore& store = h.store();
  Result<std::shared_ptr<ValueStream>> stream = BeginNow(store, h.loop(), "k", 64 << 20);
  EXPECT_EQ(stream.status().code(), StatusCode::kResourceExhausted) << stream.status().ToString();
}

}  // namespace
}  // namespace memkv::tier
