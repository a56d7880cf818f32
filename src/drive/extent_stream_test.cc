// ExtentWriter and ExtentReader: a value streamed to and from the drives in
// pieces is the same value as one Put whole, and a streamed put that is not
// finished leaves the previous value and frees what it reserved.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <vector>

#include "base/checksum.h"
#include "drive/extent_store.h"
#include "drive/store_fixture.h"

namespace memkv::drive {
namespace {

constexpr uint64_t kBlock = 64 << 10;

Status WriteIn(ExtentWriter& w, std::span<const uint8_t> value, uint64_t piece) {
  for (uint64_t off = 0; off < value.size(); off += piece) {
    const uint64_t n = std::min<uint64_t>(piece, value.size() - off);
    const iovec one{const_cast<uint8_t*>(value.data() + off), n};
    MEMKV_RETURN_IF_ERROR(w.Write(std::span<const iovec>(&one, 1)));
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> ReadIn(ExtentReader& r, uint64_t piece) {
  std::vector<uint8_t> out(r.size());
  for (uint64_t off = 0; off < out.size() || (out.empty() && off == 0); off += piece) {
    const uint64_t n = std::min<uint64_t>(piece, out.size() - off);
    const iovec one{out.data() + off, n};
    MEMKV_RETURN_IF_ERROR(r.Read(std::span<const iovec>(&one, 1)));
    if (out.empty()) break;
  }
  return out;
}

TEST(ExtentStream, PiecesOfAnySizeWriteAndReadTheSameValueAsAWholePut) {
  StoreFixture t(3);
  t.FormatAndOpen();
  // 5.5 blocks: extents over three drives, the last one partial; pieces
  // smaller than, equal to and larger than an extent.
  const std::vector<uint8_t> value = Pattern(5 * kBlock + kBlock / 2 + 123, 7);
  const uint64_t checksum = Checksum(value.data(), value.size());
  for (uint64_t piece : {uint64_t{4096}, kBlock, 3 * kBlock + 8192, uint64_t{1} << 30}) {
    SCOPED_TRACE(piece);
    auto w = t.store->BeginPut("big", value.size());
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE(WriteIn(**w, value, piece).ok());
    ASSERT_TRUE((*w)->Finish(checksum).ok());
    EXPECT_EQ(*t.Get("big"), value) << "read whole";
    for (uint64_t read_piece : {uint64_t{8192}, 2 * kBlock, uint64_t{1} << 30}) {
      auto r = t.store->BeginGet("big");
      ASSERT_TRUE(r.ok());
      EXPECT_EQ((*r)->size(), value.size());
      EXPECT_EQ((*r)->checksum(), checksum);
      auto got = ReadIn(**r, read_piece);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, value);
    }
  }
  EXPECT_EQ(t.store->Stats().keys, 1u) << "each streamed put replaced the last";
}

TEST(ExtentStream, AnEmptyValueStreams) {
  StoreFixture t(1);
  t.FormatAndOpen();
  auto w = t.store->BeginPut("empty", 0);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Finish(Checksum(nullptr, 0)).ok());
  auto r = t.store->BeginGet("empty");
  ASSERT_TRUE(r.ok());
  auto got = ReadIn(**r, 4096);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->empty());
}

TEST(ExtentStream, AnUnfinishedPutLeavesTheOldValueAndFreesItsExtents) {
  StoreFixture t(2);
  t.FormatAndOpen();
  const auto old_value = Pattern(10000, 1);
  ASSERT_TRUE(t.store->Put("k", old_value).ok());
  const uint64_t free_before = t.store->Stats().free_bytes();
  const auto value = Pattern(4 * kBlock, 2);
  {
    auto w = t.store->BeginPut("k", value.size());
    ASSERT_TRUE(w.ok());
    EXPECT_LT(t.store->Stats().free_bytes(), free_before) << "the extents are reserved at once";
    ASSERT_TRUE(WriteIn(**w, std::span(value).first(2 * kBlock), kBlock).ok());
    EXPECT_EQ(*t.Get("k"), old_value) << "readers see the old value mid-put";
  }  // dropped unfinished: the sender went away
  EXPECT_EQ(*t.Get("k"), old_value);
  EXPECT_EQ(t.store->Stats().free_bytes(), free_before);
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(*t.Get("k"), old_value) << "nothing of the unfinished put was journaled";
}

TEST(ExtentStream, BytesThatDoNotMatchTheChecksumAreNotStored) {
  StoreFixture t(1);
  t.FormatAndOpen();
  const auto value = Pattern(3 * kBlock, 3);
  auto w = t.store->BeginPut("k", value.size());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(WriteIn(**w, value, kBlock).ok());
  Status s = (*w)->Finish(Checksum(value.data(), value.size()) ^ 1);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_FALSE(t.store->Exists("k"));
}

TEST(ExtentStream, PiecesMustBeWholeUnitsAndStayInsideTheValue) {
  StoreFixture t(1);
  t.FormatAndOpen();
  const auto value = Pattern(3 * 4096, 4);
  auto w = t.store->BeginPut("k", value.size());
  ASSERT_TRUE(w.ok());
  const iovec odd{const_cast<uint8_t*>(value.data()), 1000};
  Status s = (*w)->Write(std::span<const iovec>(&odd, 1));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("multiples of 4096"), std::string::npos) << s.message();
  std::vector<uint8_t> more(4 * 4096);
  const iovec past{more.data(), more.size()};
  s = (*w)->Write(std::span<const iovec>(&past, 1));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("runs past"), std::string::npos) << s.message();
  EXPECT_EQ((*w)->Finish(0).code(), StatusCode::kFailedPrecondition) << "nothing written yet";
}

TEST(ExtentStream, ACorruptExtentFailsTheLastPieceAndDropsTheValue) {
  StoreFixture t(1);
  t.FormatAndOpen();
  const auto value = Pattern(2 * kBlock, 5);
  ASSERT_TRUE(t.store->Put("k", value).ok());
  auto sb = DecodeSuperblock(ReadRaw(t.paths[0], 0, kDriveHeaderBytes), t.paths[0]);
  ASSERT_TRUE(sb.ok());
  auto byte = ReadRaw(t.paths[0], sb->unit_offset(0) + 5, 1);
  byte[0] ^= 0x10;  // bit rot in the first extent
  WriteRaw(t.paths[0], sb->unit_offset(0) + 5, byte);
  auto r = t.store->BeginGet("k");
  ASSERT_TRUE(r.ok());
  std::vector<uint8_t> out(value.size());
  const iovec first{out.data(), kBlock};
  EXPECT_TRUE((*r)->Read(std::span<const iovec>(&first, 1)).ok()) << "a piece alone is not checked";
  const iovec last{out.data() + kBlock, kBlock};
  Status s = (*r)->Read(std::span<const iovec>(&last, 1));
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_FALSE(t.store->Exists("k")) << "a corrupt value is dropped";
  EXPECT_EQ(t.store->Stats().checksum_failures, 1u);
}

TEST(ExtentStream, AValueBeingReadIsNotEvictedAndItsExtentsAreNotReused) {
  StoreFixture t(1);
  t.FormatAndOpen();
  const auto value = Pattern(2 * kBlock, 6);
  ASSERT_TRUE(t.store->Put("k", value).ok());
  auto r = t.store->BeginGet("k");
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(t.store->Delete("k").ok());
  ASSERT_TRUE(t.store->Put("other", Pattern(2 * kBlock, 9)).ok());  // must not take k's units
  auto got = ReadIn(**r, kBlock);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, value);
}

}  // namespace
}  // namespace memkv::drive
