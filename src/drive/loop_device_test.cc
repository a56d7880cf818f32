// The extent store on real block devices: loop devices over image files,
// opened with O_DIRECT ("direct" mode). Needs root and losetup; skipped with
// a message otherwise.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

#include "drive/drive_file.h"
#include "drive/extent_store.h"
#include "drive/test_util.h"

namespace memkv::drive {
namespace {

// Runs a shell command; its stdout (trimmed) and exit status.

TEST(LoopDevice, DirectModeOnBlockDevicesFormatsStoresAndReopens) {
  TempDir dir;
  LoopDevice a(dir.File("a.img"), 64 << 20, 4096);
  LoopDevice b(dir.File("b.img"), 64 << 20, 512);
  REQUIRE_LOOP(a);
  REQUIRE_LOOP(b);

  auto probe = DriveFile::Open(a.device());
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  EXPECT_TRUE(probe->is_block_device());
  EXPECT_TRUE(probe->direct_io());
  EXPECT_EQ(probe->size_bytes(), 64u << 20);
  uint32_t lbs_a = probe->logical_block_bytes();
  probe = DriveFile();  // release the lock

  DriveFormatOptions f;
  f.drives = {a.device(), b.device()};
  f.block_size_bytes = 1 << 20;
  Status formatted = ExtentStore::Format(f);
  ASSERT_TRUE(formatted.ok()) << formatted.ToString();
  ExtentStoreOptions o;
  o.drives = f.drives;
  o.io_buffers = 8;
  auto store = ExtentStore::Open(o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ExtentStoreStats st = (*store)->Stats();
  ASSERT_EQ(st.drives.size(), 2u);
  EXPECT_EQ(st.drives[0].raw_bytes, 64u << 20);
  EXPECT_GT(st.drives[0].slots_total, 50u);
  RecordProperty("io_engine", st.io_engine);
  RecordProperty("logical_block_bytes_a", std::to_string(lbs_a));

  std::vector<std::vector<uint8_t>> values;
  for (int i = 0; i < 20; ++i) {
    values.push_back(Pattern(size_t(i) * 300007 % (3 << 20) + 1, uint64_t(i)));  // up to 3 extents, odd sizes
    ASSERT_TRUE((*store)->Put("k" + std::to_string(i), values.back()).ok());
  }
  ASSERT_TRUE((*store)->Delete("k3").ok());
  store->reset();

  // A formatted device is not formatted again without force.
  EXPECT_EQ(ExtentStore::Format(f).code(), StatusCode::kFailedPrecondition);

  store = ExtentStore::Open(o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  for (int i = 0; i < 20; ++i) {
    auto got = (*store)->Get("k" + std::to_string(i));
    if (i == 3) {
      EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
      continue;
    }
    ASSERT_TRUE(got.ok()) << i << ": " << got.status().ToString();
    EXPECT_EQ(*got, values[size_t(i)]) << i;
  }
  EXPECT_FALSE((*store)->Stats().degraded);
}

TEST(LoopDevice, ABlockDeviceInUseIsRefused) {
  TempDir dir;
  LoopDevice a(dir.File("a.img"), 16 << 20, 512);
  REQUIRE_LOOP(a);
  auto first = DriveFile::Open(a.device());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = DriveFile::Open(a.device());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition) << second.status().ToString();
}

}  // namespace
}  // namespace memkv::drive
