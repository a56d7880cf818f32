// The value codecs on their own (value_codec.h): each round-trips a value
// cut into its segments, through one iovec or several; the plain codec
// stores the bytes as they are; the AES-256-GCM codec's bytes are not the
// value, a changed byte, tag, key name or offset fails its seal, its
// segments cut at extents and every kSealSegmentBytes, and its seal count
// and record bytes agree with its segments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/checksum.h"
#include "drive/value_codec.h"

namespace memkv::drive {
namespace {

std::vector<CodecDrive> TwoDrives() {
  std::vector<CodecDrive> d(2);
  for (uint32_t i = 0; i < 2; ++i) {
    d[i].present = true;
    d[i].encryption_id.bytes.fill(uint8_t(0x40 + i));
    d[i].open_epoch = 7;
  }
  return d;
}

MasterKey Master() {
  MasterKey k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = uint8_t(i * 3 + 1);
  return k;
}

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 131 + (i >> 12));
  return v;
}

// Extents of `units` units on alternating drives.
std::vector<ExtentRef> Extents(std::initializer_list<uint32_t> units) {
  std::vector<ExtentRef> out;
  uint32_t drive = 0;
  for (uint32_t u : units) {
    out.push_back({.drive = drive, .unit = 0, .units = u});
    drive ^= 1;
  }
  return out;
}

struct Encoded {
  std::vector<uint8_t> bytes;  // the value's encoding, segment after segment
  std::vector<SegmentSeal> seals;
  uint64_t digest = 0;
};

Encoded EncodeAll(ValueCodec& c, std::string_view key, std::span<const ExtentRef> extents,
                  const std::vector<uint8_t>& value, std::span<const iovec> src) {
  Encoded out;
  out.bytes.resize(value.size());
  out.seals.resize(c.SealCount(extents, value.size()));
  ChecksumStream sum;
  const std::vector<SealSegment> segs = c.Segments(extents, value.size());
  for (size_t i = 0; i < segs.size(); ++i) {
    c.Encode({key, value.size()}, segs[i], i, segs[i].offset, segs[i].bytes, src, 0, out.bytes.data() + segs[i].offset,
             &sum, out.seals);
  }
  out.digest = sum.Digest();
  return out;
}

// Decodes every segment into `dst`; the first failure.
Status DecodeAll(ValueCodec& c, std::string_view key, std::span<const ExtentRef> extents, const Encoded& e,
                 std::span<const iovec> dst, uint64_t* digest) {
  ChecksumStream sum;
  const std::vector<SealSegment> segs = c.Segments(extents, e.bytes.size());
  Status first;
  for (size_t i = 0; i < segs.size(); ++i) {
    Status s = c.Decode({key, e.bytes.size()}, segs[i], i, segs[i].offset, segs[i].bytes,
                        e.bytes.data() + segs[i].offset, dst, 0, &sum, e.seals);
    if (!s.ok() && first.ok()) first = s;
  }
  *digest = sum.Digest();
  return first;
}

TEST(ValueCodec, TheFactoryPicksByMasterKey) {
  EXPECT_EQ(CreateValueCodec(std::nullopt, TwoDrives())->name(), "plain");
  EXPECT_FALSE(CreateValueCodec(std::nullopt, TwoDrives())->seals());
  EXPECT_EQ(CreateValueCodec(Master(), TwoDrives())->name(), "aes-256-gcm");
  EXPECT_TRUE(CreateValueCodec(Master(), TwoDrives())->seals());
}

TEST(ValueCodec, BothRoundTripThroughSeveralIovecs) {
  const std::vector<uint8_t> value = Pattern((3 << 20) + 12345);
  const std::vector<ExtentRef> extents = Extents({512, 300, 1024});  // 2 MiB, 1.17 MiB, the rest
  // The source and the destination cut at odd places.
  const size_t cut1 = 777, cut2 = (2 << 20) + 5;
  const iovec src[] = {{const_cast<uint8_t*>(value.data()), cut1},
                       {const_cast<uint8_t*>(value.data() + cut1), cut2 - cut1},
                       {const_cast<uint8_t*>(value.data() + cut2), value.size() - cut2}};
  std::unique_ptr<ValueCodec> codecs[] = {CreatePlainCodec(), CreateAesGcmCodec(Master(), TwoDrives())};
  for (const auto& codec : codecs) {
    SCOPED_TRACE(std::string(codec->name()));
    const Encoded e = EncodeAll(*codec, "k", extents, value, src);
    EXPECT_EQ(e.digest, Checksum(value.data(), value.size()));
    std::vector<uint8_t> back(value.size());
    const iovec dst[] = {{back.data(), 4096}, {back.data() + 4096, back.size() - 4096}};
    uint64_t digest = 0;
    ASSERT_TRUE(DecodeAll(*codec, "k", extents, e, dst, &digest).ok());
    EXPECT_EQ(back, value);
    EXPECT_EQ(digest, e.digest);
    EXPECT_EQ(codec->SealCount(extents, value.size()), codec->seals() ? codec->Segments(extents, value.size()).size() : 0);
  }
}

TEST(ValueCodec, PlainStoresTheBytesAsTheyAreOneSegmentPerExtent) {
  auto c = CreatePlainCodec();
  const std::vector<uint8_t> value = Pattern(3 << 20);
  const std::vector<ExtentRef> extents = Extents({512, 256});
  const iovec src{const_cast<uint8_t*>(value.data()), value.size()};
  const Encoded e = EncodeAll(*c, "k", extents, value, {&src, 1});
  EXPECT_EQ(e.bytes, value);
  EXPECT_TRUE(e.seals.empty());
  EXPECT_EQ(c->Segments(extents, value.size()).size(), 2u);
  EXPECT_EQ(c->piece_bytes(), kDriveUnitBytes);
  EXPECT_EQ(c->SealRecordBytes(value.size(), 2), 0u);
}

TEST(ValueCodec, AesSegmentsCutAtExtentsAndEveryMebibyte) {
  auto c = CreateAesGcmCodec(Master(), TwoDrives());
  // 2.5 MiB then 1 MiB + 10 bytes: cuts at 1, 2, 2.5 MiB (the extent), 3.5 MiB.
  const std::vector<ExtentRef> extents = Extents({640, 257});
  const uint64_t value_bytes = (3 << 20) + (1 << 19) + 10;
  const std::vector<SealSegment> segs = c->Segments(extents, value_bytes);
  ASSERT_EQ(segs.size(), 5u);
  EXPECT_EQ(segs[2].offset, 2u << 20);
  EXPECT_EQ(segs[2].bytes, 1u << 19);
  EXPECT_EQ(segs[3].drive, 1u);
  EXPECT_EQ(segs[4].bytes, (1u << 19) + 10);
  EXPECT_EQ(c->SealCount(extents, value_bytes), segs.size());
  EXPECT_GE(c->SealRecordBytes(value_bytes, extents.size()), SealsBytes(segs.size()));
  EXPECT_EQ(c->piece_bytes(), kSealSegmentBytes);
  EXPECT_EQ(c->SealCount(extents, 0), 0u);
}

TEST(ValueCodec, AesBytesAreNotTheValueAndNoncesDoNotRepeat) {
  auto c = CreateAesGcmCodec(Master(), TwoDrives());
  const std::vector<uint8_t> value = Pattern(2 << 20);
  const std::vector<ExtentRef> extents = Extents({512});
  const iovec src{const_cast<uint8_t*>(value.data()), value.size()};
  const Encoded a = EncodeAll(*c, "k", extents, value, {&src, 1});
  const Encoded b = EncodeAll(*c, "k", extents, value, {&src, 1});
  EXPECT_NE(a.bytes, value);
  EXPECT_NE(a.bytes, b.bytes);  // a fresh nonce per segment
  ASSERT_EQ(a.seals.size(), 2u);
  EXPECT_NE(a.seals[0].nonce, a.seals[1].nonce);
  EXPECT_NE(a.seals[0].nonce, b.seals[0].nonce);
}

TEST(ValueCodec, AesTagFailures) {
  auto c = CreateAesGcmCodec(Master(), TwoDrives());
  const std::vector<uint8_t> value = Pattern((1 << 20) + 4096);
  const std::vector<ExtentRef> extents = Extents({257});
  const iovec src{const_cast<uint8_t*>(value.data()), value.size()};
  const Encoded good = EncodeAll(*c, "key", extents, value, {&src, 1});
  std::vector<uint8_t> back(value.size());
  const iovec dst{back.data(), back.size()};
  uint64_t digest = 0;

  Encoded flipped = good;
  flipped.bytes[(1 << 20) + 17] ^= 1;  // in the second segment
  Status s = DecodeAll(*c, "key", extents, flipped, {&dst, 1}, &digest);
  EXPECT_EQ(s.code(), StatusCode::kAuthFailed);
  EXPECT_NE(s.message().find("offset 1048576"), std::string::npos) << s.message();

  Encoded tagged = good;
  tagged.seals[0].tag[3] ^= 0x80;
  EXPECT_EQ(DecodeAll(*c, "key", extents, tagged, {&dst, 1}, &digest).code(), StatusCode::kAuthFailed);

  // The authenticated data binds the key name.
  EXPECT_EQ(DecodeAll(*c, "kez", extents, good, {&dst, 1}, &digest).code(), StatusCode::kAuthFailed);

  // Another master key (or another drive's key) fails too.
  MasterKey other = Master();
  other[0] ^= 1;
  auto c2 = CreateAesGcmCodec(other, TwoDrives());
  EXPECT_EQ(DecodeAll(*c2, "key", extents, good, {&dst, 1}, &digest).code(), StatusCode::kAuthFailed);

  // A tenant's keys are not the administrator's.
  c->SetTenants(std::make_shared<const TenantMap>(std::vector<TenantLimits>{{.name = "t1", .prefix = "ke"}}));
  EXPECT_EQ(DecodeAll(*c, "key", extents, good, {&dst, 1}, &digest).code(), StatusCode::kAuthFailed);
  c->SetTenants(nullptr);
  ASSERT_TRUE(DecodeAll(*c, "key", extents, good, {&dst, 1}, &digest).ok());
  EXPECT_EQ(back, value);
}

}  // namespace
}  // namespace memkv::drive
