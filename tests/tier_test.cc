// The drive tier through a real `memkv start` in storage.mode file: values
// survive restarts, a DRAM pool far smaller than the data stays correct
// (evicted values come back from the drives), full drives evict their coldest
// values instead of failing, a lost drive file leaves the store serving
// degraded, and batches mix DRAM and drive hits.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/harness.h"

namespace memkv::testing {
namespace {

constexpr size_t kMiB = 1 << 20;

std::string Key(int i) { return "tier/" + std::to_string(i); }
// Sizes from empty to 2.5 extents, so values stripe over drives.
size_t SizeOf(int i) {
  static const size_t kSizes[] = {0, 1, 4096, 65536, kMiB - 1, kMiB, kMiB + 17, 2 * kMiB + kMiB / 2};
  return kSizes[i % 8];
}
std::vector<uint8_t> Value(int i) { return Pattern(SizeOf(i), 500 + uint64_t(i)); }

void ExpectValue(Client& client, const std::string& key, const std::vector<uint8_t>& want, const ServerProcess& s) {
  Result<std::vector<uint8_t>> got = client.Get(key);
  ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString() << "\n" << s.Stderr();
  EXPECT_TRUE(*got == want) << key << ": bytes differ (" << got->size() << " vs " << want.size() << " bytes)";
}

TEST(TierTest, ValuesSurviveARestartAndAreReadFromTheDrivesAfterDramEviction) {
  TempDir dir;
  ServerSpec spec = FileModeSpec(dir.path(), 2, "256 MiB", "16 MiB");
  constexpr int kValues = 40;  // ~36 MiB through a 16 MiB pool
  {
    ServerProcess server;
    ASSERT_TRUE(server.Start(spec).ok());
    auto client = ClientFor({&server}, 20000);
    for (int i = 0; i < kValues; ++i) ASSERT_TRUE(client->Put(Key(i), Value(i)).ok()) << i << server.Stderr();
    // The pool holds a fraction of them: the early ones come from the drives.
    for (int i = 0; i < kValues; ++i) ExpectValue(*client, Key(i), Value(i), server);
    ASSERT_TRUE(client->Delete(Key(3)).ok());
    EXPECT_EQ(client->Delete(Key(3)).code(), StatusCode::kNotFound);
    EXPECT_EQ(server.Stop(), 0) << server.Stderr();
  }
  ServerProcess server;
  ASSERT_TRUE(server.Start(spec).ok());
  EXPECT_NE(server.Stderr().find(std::to_string(kValues - 1) + " value(s) re-adopted"), std::string::npos)
      << server.Stderr();
  auto client = ClientFor({&server}, 20000);
  for (int i = 0; i < kValues; ++i) {
    if (i == 3) {
      EXPECT_EQ(client->Get(Key(i)).status().code(), StatusCode::kNotFound);
      continue;
    }
    ExpectValue(*client, Key(i), Value(i), server);
  }
  Result<bool> exists = client->Exists(Key(kValues - 1));
  ASSERT_TRUE(exists.ok());
  EXPECT_TRUE(*exists);
}

TEST(TierTest, EncryptedDrivesServeValuesAcrossARestartAndRefuseAPlainConfig) {
  TempDir dir;
  const std::string key_file = dir.path() + "/drive.key";
  {
    std::FILE* f = std::fopen(key_file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", f);
    std::fclose(f);
    ASSERT_EQ(::chmod(key_file.c_str(), 0600), 0);  // a key readable by others is refused
  }
  const ServerSpec spec = FileModeSpec(dir.path(), 2, "256 MiB", "16 MiB",
                                       "  encryption: aes-256-gcm\n  encryption_key_file: " + key_file + "\n");
  constexpr int kValues = 40;  // ~36 MiB through a 16 MiB pool: most are read from the drives
  const std::vector<uint8_t> kBig = Pattern(20 * kMiB + 3, 77);
  {
    ServerProcess server;
    ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();
    auto client = ClientFor({&server}, 20000);
    for (int i = 0; i < kValues; ++i) ASSERT_TRUE(client->Put(Key(i), Value(i)).ok()) << i << server.Stderr();
    // Larger than the pool: streamed to and from the drives a window at a time.
    ASSERT_TRUE(client->Put("tier/big", kBig).ok()) << server.Stderr();
    for (int i = 0; i < kValues; ++i) ExpectValue(*client, Key(i), Value(i), server);
    ExpectValue(*client, "tier/big", kBig, server);
    EXPECT_EQ(server.Stop(), 0) << server.Stderr();
  }
  {
    ServerProcess server;
    ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();
    auto client = ClientFor({&server}, 20000);
    for (int i = 0; i < kValues; ++i) ExpectValue(*client, Key(i), Value(i), server);
    ExpectValue(*client, "tier/big", kBig, server);
    EXPECT_EQ(server.Stop(), 0) << server.Stderr();
  }
  // The same drive files under a config without encryption: refused, naming both.
  ServerProcess plain;
  EXPECT_FALSE(plain.Start(FileModeSpec(dir.path(), 2, "256 MiB", "16 MiB")).ok());
  EXPECT_NE(plain.Stderr().find("formatted with encryption (aes-256-gcm) but storage.encryption is off"),
            std::string::npos)
      << plain.Stderr();
}

TEST(TierTest, BatchGetMixesDramAndDriveHitsInKeyOrder) {
  TempDir dir;
  ServerProcess server;
  ASSERT_TRUE(server.Start(FileModeSpec(dir.path(), 1, "256 MiB", "16 MiB")).ok());
  auto client = ClientFor({&server}, 20000);
  constexpr int kValues = 24;  // 24 MiB of 1 MiB values: the first ones leave the 16 MiB pool
  std::vector<std::string> names;
  for (int i = 0; i < kValues; ++i) {
    names.push_back(Key(i));
    ASSERT_TRUE(client->Put(names.back(), Pattern(kMiB, 900 + i)).ok());
  }
  names.push_back("tier/absent");
  std::vector<std::string_view> keys(names.begin(), names.end());
  std::vector<std::vector<uint8_t>> bufs(keys.size(), std::vector<uint8_t>(kMiB));
  std::vector<std::span<uint8_t>> spans(bufs.begin(), bufs.end());
  std::vector<size_t> sizes;
  BatchResult r = client->BatchGetInto(keys, spans, &sizes);
  ASSERT_EQ(r.statuses.size(), keys.size());
  for (int i = 0; i < kValues; ++i) {
    ASSERT_TRUE(r.statuses[i].ok()) << i << ": " << r.statuses[i].ToString();
    EXPECT_TRUE(bufs[i] == Pattern(kMiB, 900 + i)) << i;
  }
  EXPECT_EQ(r.statuses.back().code(), StatusCode::kNotFound);
  BatchResult e = client->BatchExists(keys);
  EXPECT_EQ(e.present_prefix, size_t(kValues));
}

TEST(TierTest, FullDrivesEvictTheirColdestValuesAndPutsKeepSucceeding) {
  TempDir dir;
  ServerProcess server;
  // 64 MiB drive (about 60 extents after the journal) behind a 16 MiB pool.
  ASSERT_TRUE(server.Start(FileModeSpec(dir.path(), 1, "64 MiB", "16 MiB")).ok());
  auto client = ClientFor({&server}, 20000);
  constexpr int kValues = 150;
  for (int i = 0; i < kValues; ++i) {
    Status s = client->Put(Key(i), Pattern(kMiB, 700 + i));
    ASSERT_TRUE(s.ok()) << i << ": " << s.ToString() << "\n" << server.Stderr();
  }
  // The newest values are all there; the oldest went: cleanly absent.
  for (int i = kValues - 20; i < kValues; ++i) ExpectValue(*client, Key(i), Pattern(kMiB, 700 + i), server);
  int absent = 0;
  for (int i = 0; i < kValues; ++i) {
    Result<std::vector<uint8_t>> got = client->Get(Key(i));
    if (got.ok()) {
      EXPECT_TRUE(*got == Pattern(kMiB, 700 + i)) << i;
    } else {
      EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << got.status().ToString();
      ++absent;
    }
  }
  EXPECT_GE(absent, kValues - 64);
}

TEST(TierTest, AValueHotInDramIsTheLastToLeaveTheDrives) {
  TempDir dir;
  const ServerSpec spec = FileModeSpec(dir.path(), 1, "64 MiB", "16 MiB");
  {
    ServerProcess server;
    ASSERT_TRUE(server.Start(spec).ok());
    auto client = ClientFor({&server}, 20000);
    ASSERT_TRUE(client->Put("tier/hot", Pattern(kMiB, 1)).ok());
    // Fill the drive twice over; the hot value is read all along, so it
    // stays in DRAM, and its drive copy is the oldest on the drive's LRU.
    for (int i = 0; i < 120; ++i) {
      ASSERT_TRUE(client->Put(Key(i), Pattern(kMiB, 700 + i)).ok()) << i;
      ASSERT_TRUE(client->Get("tier/hot").ok()) << i;
    }
    EXPECT_EQ(client->Get(Key(0)).status().code(), StatusCode::kNotFound) << "the drive did fill and evict";
    EXPECT_EQ(server.Stop(), 0);
  }
  // After a restart DRAM is empty: the hot value must have kept its drive copy.
  ServerProcess server;
  ASSERT_TRUE(server.Start(spec).ok());
  auto client = ClientFor({&server}, 20000);
  ExpectValue(*client, "tier/hot", Pattern(kMiB, 1), server);
}

TEST(TierTest, ALostDriveFileLeavesTheStoreServingDegraded) {
  TempDir dir;
  ServerSpec spec = FileModeSpec(dir.path(), 2, "256 MiB", "16 MiB");
  constexpr int kValues = 16;
  {
    ServerProcess server;
    ASSERT_TRUE(server.Start(spec).ok());
    auto client = ClientFor({&server}, 20000);
    for (int i = 0; i < kValues; ++i) ASSERT_TRUE(client->Put(Key(i), Pattern(64 * 1024, i)).ok());
    EXPECT_EQ(server.Stop(), 0);
  }
  ASSERT_EQ(::unlink((dir.path() + "/d1.memkv").c_str()), 0);
  ServerProcess server;
  ASSERT_TRUE(server.Start(spec).ok()) << "a lost drive must not stop the others from serving";
  EXPECT_NE(server.Stderr().find("serving degraded"), std::string::npos) << server.Stderr();
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/d1.memkv")) << "a lost drive is not silently recreated";
  auto client = ClientFor({&server}, 20000);
  int present = 0;
  for (int i = 0; i < kValues; ++i) {
    Result<std::vector<uint8_t>> got = client->Get(Key(i));
    if (got.ok()) {
      EXPECT_TRUE(*got == Pattern(64 * 1024, i)) << i;
      ++present;
    } else {
      EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << got.status().ToString();
    }
  }
  // Extents go round-robin over the drives: about half stayed.
  EXPECT_GT(present, 0);
  EXPECT_LT(present, kValues);
  // New puts go to the drive that is left.
  ASSERT_TRUE(client->Put("tier/new", Pattern(3 * kMiB, 77)).ok()) << server.Stderr();
  ExpectValue(*client, "tier/new", Pattern(3 * kMiB, 77), server);
}

TEST(TierTest, WithoutPromotionDriveHitsAreServedWithoutTouchingDram) {
  TempDir dir;
  ServerProcess server;
  ASSERT_TRUE(server.Start(FileModeSpec(dir.path(), 1, "256 MiB", "16 MiB", "  promote_on_read: false\n")).ok());
  auto client = ClientFor({&server}, 20000);
  for (int i = 0; i < 32; ++i) ASSERT_TRUE(client->Put(Key(i), Pattern(kMiB, i)).ok());
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 32; ++i) ExpectValue(*client, Key(i), Pattern(kMiB, i), server);
  }
}

TEST(TierTest, UnformattedOrForeignDrivesAreRefusedWithTheFix) {
  TempDir dir;
  const std::string foreign = dir.Write("d0.memkv", std::string(1 << 20, 'x'));
  ServerProcess server;
  Status s = server.Start(FileModeSpec(dir.path(), 1, "256 MiB", "16 MiB"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("d0.memkv"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("memkv setup"), std::string::npos) << s.message();
  struct stat st{};
  ASSERT_EQ(::stat(foreign.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20) << "a file that is not a MemKV drive must be left alone";
}

}  // namespace
}  // namespace memkv::testing
