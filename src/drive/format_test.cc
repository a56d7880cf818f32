#include "drive/format.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "base/bytes.h"
#include "base/checksum.h"

namespace memkv::drive {
namespace {

using Block = std::array<uint8_t, kDriveHeaderBytes>;

Superblock SampleSuperblock() {
  Superblock sb;
  sb.store_uuid = Uuid::Random();
  sb.drive_uuid = Uuid::Random();
  sb.drive_index = 1;
  sb.drive_count = 3;
  sb.logical_block_bytes = 512;
  sb.extent_bytes = 1 << 20;
  sb.unit_bytes = kDriveUnitBytes;
  sb.created_unix_ns = 1700000000123456789ull;
  sb.device_bytes = 64ull << 20;
  sb.journal_offset = kDriveHeaderBytes;
  sb.journal_area_bytes = 1 << 20;
  sb.data_offset = 3 << 20;
  sb.unit_count = (sb.device_bytes - sb.data_offset) / sb.unit_bytes;
  return sb;
}

TEST(Uuid, RandomIsVersion4AndPrintsCanonically) {
  Uuid a = Uuid::Random();
  Uuid b = Uuid::Random();
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a.IsZero());
  EXPECT_TRUE(Uuid().IsZero());
  std::string s = a.ToString();
  ASSERT_EQ(s.size(), 36u);
  EXPECT_EQ(s[8], '-');
  EXPECT_EQ(s[14], '4');
}

TEST(Superblock, RoundTrips) {
  Superblock sb = SampleSuperblock();
  Block block;
  EncodeSuperblock(sb, block);
  auto back = DecodeSuperblock(block, "/dev/x");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->store_uuid, sb.store_uuid);
  EXPECT_EQ(back->drive_uuid, sb.drive_uuid);
  EXPECT_EQ(back->drive_index, 1u);
  EXPECT_EQ(back->drive_count, 3u);
  EXPECT_EQ(back->logical_block_bytes, 512u);
  EXPECT_EQ(back->extent_bytes, sb.extent_bytes);
  EXPECT_EQ(back->created_unix_ns, sb.created_unix_ns);
  EXPECT_EQ(back->unit_count, sb.unit_count);
  EXPECT_EQ(back->unit_bytes, kDriveUnitBytes);
  EXPECT_EQ(back->unit_offset(2), sb.data_offset + 2 * kDriveUnitBytes);
  EXPECT_EQ(back->journal_area_offset(1), kDriveHeaderBytes + sb.journal_area_bytes);
}

TEST(Superblock, UnformattedIsNotFound) {
  Block block{};
  auto r = DecodeSuperblock(block, "/dev/x");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/dev/x"), std::string::npos);
}

TEST(Superblock, NewerVersionIsRefusedNamingBothVersions) {
  Block block;
  EncodeSuperblock(SampleSuperblock(), block);
  StoreLe32(block.data() + 8, kDriveFormatVersion + 1);  // a future binary's drive
  auto r = DecodeSuperblock(block, "/dev/nvme0n1");
  ASSERT_EQ(r.status().code(), StatusCode::kUnsupportedVersion);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("version " + std::to_string(kDriveFormatVersion + 1)), std::string::npos) << m;
  EXPECT_NE(m.find("format version " + std::to_string(kDriveFormatVersion)), std::string::npos) << m;
  EXPECT_NE(m.find("/dev/nvme0n1"), std::string::npos) << m;
}

// A drive of the first format (fixed slots, a header in front of every
// extent) is refused with both versions and the way out, before its checksum
// or geometry is looked at (version 1 put a slot size at byte 72).
TEST(Superblock, AVersionOneDriveIsRefusedNamingBothVersionsAndWhatToDo) {
  Superblock sb = SampleSuperblock();
  sb.format_version = 1;
  Block block;
  EncodeSuperblock(sb, block);
  StoreLe64(block.data() + 72, sb.extent_bytes + kDriveHeaderBytes);  // version 1's slot size
  auto r = DecodeSuperblock(block, "/dev/nvme0n1");
  ASSERT_EQ(r.status().code(), StatusCode::kUnsupportedVersion) << r.status().ToString();
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("/dev/nvme0n1: on-drive format version 1 is older"), std::string::npos) << m;
  EXPECT_NE(m.find("format version " + std::to_string(kDriveFormatVersion)), std::string::npos) << m;
  EXPECT_NE(m.find("memkv setup --force"), std::string::npos) << m;
}

TEST(Superblock, AUnitSizeOtherThan4KiBIsCorruption) {
  Superblock sb = SampleSuperblock();
  sb.unit_bytes = 8192;
  Block block;
  EncodeSuperblock(sb, block);
  EXPECT_EQ(DecodeSuperblock(block, "d").status().code(), StatusCode::kCorruption);
}

TEST(Superblock, AnyFlippedBitIsCaught) {
  Block good;
  EncodeSuperblock(SampleSuperblock(), good);
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    Block bad = good;
    size_t bit = rng() % (kDriveHeaderBytes * 8);
    bad[bit / 8] ^= uint8_t(1u << (bit % 8));
    auto r = DecodeSuperblock(bad, "d");
    EXPECT_FALSE(r.ok()) << "bit " << bit;
  }
}

TEST(Superblock, ImpossibleGeometryIsCorruption) {
  Superblock sb = SampleSuperblock();
  sb.unit_count += 1000;  // past the end of the device
  Block block;
  EncodeSuperblock(sb, block);
  EXPECT_EQ(DecodeSuperblock(block, "d").status().code(), StatusCode::kCorruption);
}

TEST(JournalAreaHeader, RoundTripsAndRejectsDamage) {
  JournalAreaHeader h;
  h.epoch = 9;
  h.nonce = 0x1234567890abcdefull;
  h.store_uuid = Uuid::Random();
  h.drive_uuid = Uuid::Random();
  h.base_sequence = 77;
  h.base_generation = 88;
  Block block;
  EncodeJournalAreaHeader(h, block);
  auto back = DecodeJournalAreaHeader(block);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->epoch, 9u);
  EXPECT_EQ(back->nonce, h.nonce);
  EXPECT_EQ(back->base_sequence, 77u);
  EXPECT_EQ(back->base_generation, 88u);
  EXPECT_EQ(back->drive_uuid, h.drive_uuid);
  block[100] ^= 1;
  EXPECT_EQ(DecodeJournalAreaHeader(block).status().code(), StatusCode::kCorruption);
  Block zero{};
  EXPECT_FALSE(DecodeJournalAreaHeader(zero).ok());
}

JournalRecord PutRecord() {
  JournalRecord r;
  r.type = RecordType::kPut;
  r.sequence = 42;
  r.generation = 7;
  r.value_bytes = 5 << 20;
  r.value_checksum = 0xfeedface;
  r.key = "prefix/block/17";
  r.extents = {{.drive = 0, .unit = 5, .units = 256}, {.drive = 1, .unit = 0xABCDEF012345ull, .units = 256},
               {.drive = 2, .unit = 9, .units = 256}};
  return r;
}

TEST(JournalRecord, EveryTypeRoundTrips) {
  JournalRecord del;
  del.type = RecordType::kDelete;
  del.sequence = 43;
  del.key = std::string("\x00\x01binary", 8);
  JournalRecord off;
  off.type = RecordType::kDriveOffline;
  off.sequence = 44;
  off.drive_uuid = Uuid::Random();
  off.drive_index = 3;

  std::vector<uint8_t> bytes;
  uint64_t link = 0x5eed;
  std::vector<uint64_t> links = {link};
  for (const JournalRecord& r : {PutRecord(), del, off}) {
    EXPECT_EQ(EncodedRecordBytes(r) % 8, 0u);
    link = EncodeRecord(r, link, &bytes);
    links.push_back(link);
  }
  size_t off_at = 0;
  JournalRecord got;
  size_t n = 0;
  uint64_t sum = 0;
  ASSERT_TRUE(DecodeRecord(std::span(bytes).subspan(off_at), links[0], &got, &n, &sum));
  EXPECT_EQ(sum, links[1]);
  EXPECT_EQ(got.type, RecordType::kPut);
  EXPECT_EQ(got.key, "prefix/block/17");
  EXPECT_EQ(got.value_bytes, uint64_t(5 << 20));
  EXPECT_EQ(got.extents, PutRecord().extents);
  off_at += n;
  ASSERT_TRUE(DecodeRecord(std::span(bytes).subspan(off_at), links[1], &got, &n, &sum));
  EXPECT_EQ(got.type, RecordType::kDelete);
  EXPECT_EQ(got.key, del.key);
  EXPECT_EQ(got.sequence, 43u);
  off_at += n;
  ASSERT_TRUE(DecodeRecord(std::span(bytes).subspan(off_at), links[2], &got, &n, &sum));
  EXPECT_EQ(got.type, RecordType::kDriveOffline);
  EXPECT_EQ(got.drive_uuid, off.drive_uuid);
  EXPECT_EQ(got.drive_index, 3u);
  off_at += n;
  EXPECT_EQ(off_at, bytes.size());
}

TEST(JournalRecord, WrongLinkTruncationAndBitFlipsAreRejected) {
  std::vector<uint8_t> bytes;
  EncodeRecord(PutRecord(), 1, &bytes);
  JournalRecord got;
  size_t n = 0;
  uint64_t sum = 0;
  EXPECT_TRUE(DecodeRecord(bytes, 1, &got, &n, &sum));
  EXPECT_FALSE(DecodeRecord(bytes, 2, &got, &n, &sum)) << "a record of another chain";
  for (size_t len = 0; len < bytes.size(); ++len) {
    EXPECT_FALSE(DecodeRecord(std::span(bytes).first(len), 1, &got, &n, &sum)) << "truncated to " << len;
  }
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    std::vector<uint8_t> bad = bytes;
    bad[bit / 8] ^= uint8_t(1u << (bit % 8));
    EXPECT_FALSE(DecodeRecord(bad, 1, &got, &n, &sum)) << "bit " << bit;
  }
}

TEST(JournalRecord, RandomBytesNeverDecode) {
  std::mt19937_64 rng(3);
  JournalRecord got;
  size_t n = 0;
  uint64_t sum = 0;
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> junk(8 + rng() % 300);
    for (auto& b : junk) b = uint8_t(rng());
    if (i % 2 == 0) std::memcpy(junk.data(), "MKJR", 4);
    EXPECT_FALSE(DecodeRecord(junk, 0, &got, &n, &sum));
  }
}

TEST(JournalRecord, ExtentsOfNoUnitsOrWithReservedBitsAreRejected) {
  for (int damage = 0; damage < 3; ++damage) {
    JournalRecord r = PutRecord();
    std::vector<uint8_t> bytes;
    EncodeRecord(r, 1, &bytes);
    // The second extent's 16 bytes: drive and unit, units, reserved.
    uint8_t* ref = bytes.data() + kRecordHeadBytes + 16 + 16;
    if (damage == 0) StoreLe32(ref + 8, 0);                  // no units
    if (damage == 1) StoreLe32(ref + 8, (1u << 18) + 1);     // more than 1 GiB
    if (damage == 2) StoreLe32(ref + 12, 1);                 // reserved
    StoreLe64(bytes.data() + bytes.size() - 8, Checksum(bytes.data(), bytes.size() - 8));
    JournalRecord got;
    size_t n = 0;
    uint64_t sum = 0;
    EXPECT_FALSE(DecodeRecord(bytes, 1, &got, &n, &sum)) << "damage " << damage;
  }
}

TEST(ExtentsCoverValue, TheUnitsMustAddUpAndEachExtentFitABlock) {
  constexpr uint64_t kBlock = 64 << 10;  // 16 units
  auto refs = [](std::initializer_list<uint32_t> units) {
    std::vector<ExtentRef> out;
    for (uint32_t u : units) out.push_back({.drive = 0, .unit = 0, .units = u});
    return out;
  };
  EXPECT_TRUE(ExtentsCoverValue({}, 0, kBlock)) << "an empty value has no extents";
  EXPECT_FALSE(ExtentsCoverValue(refs({1}), 0, kBlock));
  EXPECT_TRUE(ExtentsCoverValue(refs({1}), 1, kBlock));
  EXPECT_TRUE(ExtentsCoverValue(refs({1}), 4096, kBlock));
  EXPECT_FALSE(ExtentsCoverValue(refs({1}), 4097, kBlock));
  EXPECT_TRUE(ExtentsCoverValue(refs({2}), 4097, kBlock));
  EXPECT_TRUE(ExtentsCoverValue(refs({16, 16, 1}), 2 * kBlock + 1, kBlock));
  EXPECT_TRUE(ExtentsCoverValue(refs({3, 16, 13, 1}), 2 * kBlock + 1, kBlock)) << "a value cut into pieces";
  EXPECT_FALSE(ExtentsCoverValue(refs({17, 16}), 2 * kBlock + 1, kBlock)) << "an extent longer than a block";
  EXPECT_FALSE(ExtentsCoverValue(refs({16, 0, 17}), 2 * kBlock + 1, kBlock)) << "an empty extent";
  EXPECT_FALSE(ExtentsCoverValue(refs({16, 16, 2}), 2 * kBlock + 1, kBlock)) << "a unit too many";
}

}  // namespace
}  // namespace memkv::drive
