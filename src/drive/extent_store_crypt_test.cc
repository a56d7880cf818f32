// Encryption at rest: values sealed with AES-256-GCM under a key per tenant
// and drive, over real drive files. A value read back is the value written,
// across restarts; the bytes on the drive are not the value; a changed byte
// on the drive, or a value read under another tenant's key, is a counted
// miss; a wrong master key and a plain/encrypted mismatch are refused at
// open; and no nonce is ever drawn twice on a drive.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/bytes.h"
#include "base/checksum.h"
#include "base/tenant_map.h"
#include "drive/drive_crypto.h"
#include "drive/extent_store.h"
#include "drive/store_fixture.h"

namespace memkv::drive {
namespace {

constexpr uint64_t kBlock = 64 << 10;

MasterKey KeyOf(uint8_t seed) {
  MasterKey k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = uint8_t(seed * 31 + i);
  return k;
}

// An encrypted store of `drives` files (blocks of 64 KiB, 16 MiB each).
struct CryptFixture : StoreFixture {
  explicit CryptFixture(int drives = 1, uint64_t block = kBlock, uint64_t file_bytes = 16 << 20)
      : StoreFixture(drives, block, file_bytes) {
    format.master_key = KeyOf(1);
    master_key = KeyOf(1);
  }
};

Superblock SuperblockOf(const std::string& path) {
  std::vector<uint8_t> block = ReadRaw(path, 0, kDriveHeaderBytes);
  Result<Superblock> sb = DecodeSuperblock(block, path);
  EXPECT_TRUE(sb.ok()) << sb.status().ToString();
  return sb.ok() ? *sb : Superblock{};
}

// The offset of the first non-zero byte of the data area (a fresh drive
// file's data area is all zero), or 0 when there is none.
uint64_t FirstWrittenDataByte(const std::string& path) {
  const Superblock sb = SuperblockOf(path);
  std::vector<uint8_t> data = ReadRaw(path, sb.data_offset, size_t(sb.unit_count * kDriveUnitBytes));
  auto it = std::find_if(data.begin(), data.end(), [](uint8_t b) { return b != 0; });
  return it == data.end() ? 0 : sb.data_offset + uint64_t(it - data.begin());
}

bool Contains(const std::vector<uint8_t>& hay, const std::vector<uint8_t>& needle) {
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

std::shared_ptr<const TenantMap> Tenants(std::vector<std::pair<std::string, std::string>> name_prefix) {
  std::vector<TenantLimits> t;
  for (auto& [name, prefix] : name_prefix) t.push_back(TenantLimits{.name = name, .prefix = prefix});
  return std::make_shared<const TenantMap>(std::move(t));
}

TEST(ExtentStoreCrypt, ValuesRoundTripAndReadBackAfterRestart) {
  CryptFixture t(2);
  t.FormatAndOpen();
  EXPECT_TRUE(t.store->Stats().encrypted);
  // Empty, tiny, a unit, past a unit, several extents on both drives, and
  // several seal segments (1 MiB each) over extents of 64 KiB.
  const std::vector<size_t> sizes = {0, 1, 4096, 5000, 300 << 10, (2 << 20) + 777};
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(t.store->Put("k" + std::to_string(i), Pattern(sizes[i], i)).ok());
  }
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      auto got = t.Get("k" + std::to_string(i));
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, Pattern(sizes[i], i)) << sizes[i];
    }
    ASSERT_TRUE(t.Open().ok());  // restart
  }
  ExtentStoreStats st = t.store->Stats();
  EXPECT_EQ(st.decrypt_failures, 0u);
  EXPECT_EQ(st.checksum_failures, 0u);
  EXPECT_EQ(t.store->Seals("k5").size(), 33u) << "2 MiB + 777 bytes in extents of 64 KiB: a segment each";
  EXPECT_TRUE(t.store->Seals("k0").empty()) << "an empty value has no bytes to seal";
}

TEST(ExtentStoreCrypt, SegmentsCutAtExtentsAndEveryMebibyte) {
  // Extents of 768 KiB: segments [0, 768K) [768K, 1M) [1M, 1.5M) [1.5M, 2M) [2M, 2M+10).
  const uint32_t u = 768 / 4;
  std::vector<ExtentRef> extents = {{0, 0, u}, {1, 0, u}, {0, 1000, u}};
  std::vector<SealSegment> s = SealSegments(extents, (2 << 20) + 10);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[1].offset, 768u << 10);
  EXPECT_EQ(s[1].bytes, 256u << 10);
  EXPECT_EQ(s[1].drive, 1u);
  EXPECT_EQ(s[2].offset, 1u << 20);
  EXPECT_EQ(s[3].offset, 1536u << 10);
  EXPECT_EQ(s[3].drive, 0u);
  EXPECT_EQ(s[4].bytes, 10u);
  EXPECT_TRUE(SealSegments(extents, 0).empty());
}

TEST(ExtentStoreCrypt, TheDriveHoldsNoPlaintext) {
  CryptFixture t;
  t.FormatAndOpen();
  const std::vector<uint8_t> value = Pattern(256 << 10, 42);
  ASSERT_TRUE(t.store->Put("secret", value).ok());
  t.store.reset();
  const std::vector<uint8_t> file = ReadRaw(t.paths[0], 0, 16 << 20);
  EXPECT_FALSE(Contains(file, std::vector<uint8_t>(value.begin() + 4096, value.begin() + 4096 + 64)));
  EXPECT_NE(FirstWrittenDataByte(t.paths[0]), 0u) << "the value's ciphertext is on the drive";
}

TEST(ExtentStoreCrypt, EachTenantHasItsOwnKey) {
  CryptFixture t;
  t.FormatAndOpen();
  const Superblock sb = SuperblockOf(t.paths[0]);
  const DataKey admin = DeriveDataKey(KeyOf(1), sb.encryption_id, "");
  const DataKey a = DeriveDataKey(KeyOf(1), sb.encryption_id, "a");
  const DataKey b = DeriveDataKey(KeyOf(1), sb.encryption_id, "b");
  EXPECT_NE(a, b);
  EXPECT_NE(a, admin);
  EXPECT_EQ(a, DeriveDataKey(KeyOf(1), sb.encryption_id, "a")) << "derivation is deterministic";
  EXPECT_NE(a, DeriveDataKey(KeyOf(1), Uuid::Random(), "a")) << "the drive's encryption id is the salt";

  t.store->SetTenants(Tenants({{"a", "a/"}, {"b", "b/"}}));
  const std::vector<uint8_t> value = Pattern(8192, 9);
  ASSERT_TRUE(t.store->Put("a/x", value).ok());
  ASSERT_TRUE(t.store->Put("b/x", value).ok());
  EXPECT_EQ(*t.Get("a/x"), value);
  EXPECT_EQ(*t.Get("b/x"), value);
  // The same bytes, two tenants: two different ciphertexts on the drive.
  t.store.reset();
  const Superblock sb2 = SuperblockOf(t.paths[0]);
  const std::vector<uint8_t> data = ReadRaw(t.paths[0], sb2.data_offset, 4 * 8192);
  std::vector<std::vector<uint8_t>> values;
  for (uint64_t off = 0; off < data.size(); off += 8192) {
    std::vector<uint8_t> v(data.begin() + off, data.begin() + off + 8192);
    if (std::any_of(v.begin(), v.end(), [](uint8_t x) { return x != 0; })) values.push_back(v);
  }
  ASSERT_EQ(values.size(), 2u);
  EXPECT_NE(values[0], values[1]);
  EXPECT_NE(values[0], value);

  // Prefix "a/" now belongs to a tenant of another name: its values were
  // sealed under "a" and fail their tags (a counted miss, dropped) until "a" is back.
  ASSERT_TRUE(t.Open().ok());
  t.store->SetTenants(Tenants({{"renamed", "a/"}, {"b", "b/"}}));
  auto moved = t.Get("a/x");
  EXPECT_EQ(moved.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t.store->Stats().decrypt_failures, 1u);
  EXPECT_FALSE(t.store->Exists("a/x")) << "dropped";
  EXPECT_EQ(*t.Get("b/x"), value);
  ASSERT_TRUE(t.Open().ok());  // the record is still in the journal
  t.store->SetTenants(Tenants({{"a", "a/"}, {"b", "b/"}}));
  EXPECT_EQ(*t.Get("a/x"), value) << "readable again under its own tenant";
}

TEST(ExtentStoreCrypt, AFlippedByteOnTheDriveIsACountedMiss) {
  CryptFixture t;
  t.FormatAndOpen();
  const std::vector<uint8_t> value = Pattern(20000, 3);
  ASSERT_TRUE(t.store->Put("v", value).ok());
  t.store.reset();
  const uint64_t at = FirstWrittenDataByte(t.paths[0]) + 1000;
  std::vector<uint8_t> byte = ReadRaw(t.paths[0], at, 1);
  byte[0] ^= 0x01;
  WriteRaw(t.paths[0], at, byte);
  ASSERT_TRUE(t.Open().ok());
  auto got = t.Get("v");
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_NE(got.status().message().find("authentication tag"), std::string::npos) << got.status().message();
  ExtentStoreStats st = t.store->Stats();
  EXPECT_EQ(st.decrypt_failures, 1u);
  EXPECT_EQ(st.checksum_failures, 0u) << "the tag fails first; the plaintext checksum is never reached";
  EXPECT_EQ(st.misses, 1u);
  EXPECT_FALSE(t.store->Exists("v"));
  EXPECT_EQ(t.Get("v").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t.store->Stats().decrypt_failures, 1u) << "dropped: a second get is a plain miss";
}

TEST(ExtentStoreCrypt, AWrongMasterKeyIsRefusedAtOpen) {
  CryptFixture t;
  t.FormatAndOpen();
  ASSERT_TRUE(t.store->Put("v", Pattern(100, 1)).ok());
  t.master_key = KeyOf(2);
  Status s = t.Open();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find(t.paths[0]), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("another master key"), std::string::npos) << s.message();
  t.master_key = KeyOf(1);
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(*t.Get("v"), Pattern(100, 1));
}

TEST(ExtentStoreCrypt, PlainAndEncryptedDrivesAreRefusedTheOtherWay) {
  StoreFixture plain(1);
  ASSERT_TRUE(plain.Format().ok());
  plain.master_key = KeyOf(1);
  Status s = plain.Open();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  for (const char* want : {"formatted without encryption", "storage.encryption is aes-256-gcm", "storage.encryption: off"}) {
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  }
  EXPECT_NE(s.message().find(plain.paths[0]), std::string::npos) << s.message();

  CryptFixture enc;
  ASSERT_TRUE(enc.Format().ok());
  enc.master_key.reset();
  s = enc.Open();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  for (const char* want : {"formatted with encryption (aes-256-gcm)", "storage.encryption is off"}) {
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  }
  EXPECT_NE(s.message().find(enc.paths[0]), std::string::npos) << s.message();
}

TEST(ExtentStoreCrypt, NoNonceRepeatsOnADriveAcrossReopens) {
  // One drive: every segment ever sealed there must have its own nonce.
  CryptFixture t(1, kBlock, 32 << 20);
  t.FormatAndOpen();
  std::set<std::array<uint8_t, 12>> seen;
  size_t drawn = 0;
  auto record = [&](const std::string& key) {
    for (const SegmentSeal& seal : t.store->Seals(key)) {
      seen.insert(seal.nonce);
      drawn++;
    }
  };
  EXPECT_EQ(SuperblockOf(t.paths[0]).open_epoch, 1u) << "made durable at the first open, before any write";
  for (int open = 0; open < 5; ++open) {
    for (int i = 0; i < 40; ++i) {
      const std::string key = "k" + std::to_string(i % 25);  // overwrites too
      // Several segments every fifth value.
      const size_t size = i % 5 == 0 ? (1 << 20) + 4096 * size_t(i) : 100 + size_t(i);
      ASSERT_TRUE(t.store->Put(key, Pattern(size, uint64_t(i))).ok());
      const std::vector<SegmentSeal> seals = t.store->Seals(key);
      ASSERT_FALSE(seals.empty()) << key;
      for (const SegmentSeal& seal : seals) {
        EXPECT_EQ(LoadLe32(seal.nonce.data()), uint32_t(open + 1)) << "the nonce's epoch is this open's";
      }
      record(key);
    }
    if (open == 1) {
      ASSERT_TRUE(t.store->Checkpoint().ok());
    }
    ASSERT_TRUE(t.Open().ok());
    EXPECT_EQ(SuperblockOf(t.paths[0]).open_epoch, uint32_t(open + 2));
  }
  EXPECT_EQ(seen.size(), drawn) << "a nonce was drawn twice on the drive";
  EXPECT_GE(drawn, 5u * 40u);
  for (int i = 0; i < 25; ++i) EXPECT_TRUE(t.Get("k" + std::to_string(i)).ok()) << i;
}

TEST(ExtentStoreCrypt, StreamedValuesMoveInWholeSegments) {
  CryptFixture t(2, 256 << 10, 32 << 20);
  t.FormatAndOpen();
  const std::vector<uint8_t> value = Pattern((3 << 20) + (512 << 10) + 5, 11);
  const uint64_t checksum = Checksum(value.data(), value.size());
  auto w = t.store->BeginPut("big", value.size());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const iovec odd{const_cast<uint8_t*>(value.data()), 4096};
  Status refused = (*w)->Write(std::span<const iovec>(&odd, 1));
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("1048576"), std::string::npos) << refused.message();
  for (uint64_t off = 0; off < value.size(); off += kSealSegmentBytes) {
    const iovec one{const_cast<uint8_t*>(value.data() + off), std::min<uint64_t>(kSealSegmentBytes, value.size() - off)};
    ASSERT_TRUE((*w)->Write(std::span<const iovec>(&one, 1)).ok());
  }
  ASSERT_TRUE((*w)->Finish(checksum).ok());
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(*t.Get("big"), value);
  for (uint64_t piece : {kSealSegmentBytes, 2 * kSealSegmentBytes}) {
    auto r = t.store->BeginGet("big");
    ASSERT_TRUE(r.ok());
    std::vector<uint8_t> out(value.size());
    for (uint64_t off = 0; off < out.size(); off += piece) {
      const iovec one{out.data() + off, std::min<uint64_t>(piece, out.size() - off)};
      Status s = (*r)->Read(std::span<const iovec>(&one, 1));
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
    EXPECT_EQ(out, value);
  }
  auto r = t.store->BeginGet("big");
  ASSERT_TRUE(r.ok());
  std::vector<uint8_t> out(8192);
  const iovec part{out.data(), out.size()};
  EXPECT_EQ((*r)->Read(std::span<const iovec>(&part, 1)).code(), StatusCode::kInvalidArgument);
}

TEST(ExtentStoreCrypt, MasterKeyFiles) {
  TempDir dir;
  const std::string raw = dir.File("raw.key");
  const MasterKey k = KeyOf(5);
  WriteRaw(raw, 0, std::vector<uint8_t>(k.begin(), k.end()));
  Result<MasterKey> got = ReadMasterKeyFile(raw);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, k);
  std::string hex;
  static const char* kDigits = "0123456789abcdef";
  for (uint8_t b : k) {
    hex += kDigits[b >> 4];
    hex += kDigits[b & 15];
  }
  const std::string hex_path = dir.File("hex.key");
  hex += "\n";
  WriteRaw(hex_path, 0, std::vector<uint8_t>(hex.begin(), hex.end()));
  got = ReadMasterKeyFile(hex_path);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, k);
  const std::string short_path = dir.File("short.key");
  WriteRaw(short_path, 0, std::vector<uint8_t>(16, 1));
  got = ReadMasterKeyFile(short_path);
  EXPECT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find(short_path), std::string::npos);
  EXPECT_NE(got.status().message().find("32 raw bytes, or 64 hex"), std::string::npos) << got.status().message();
  got = ReadMasterKeyFile(dir.File("missing.key"));
  EXPECT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("missing.key"), std::string::npos);
}

}  // namespace
}  // namespace memkv::drive
