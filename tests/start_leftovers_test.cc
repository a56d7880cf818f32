// memkv start that fails must leave nothing half-made behind: a drive file
// without a superblock blocked every later start ("no MemKV superblock ...
// format it first") until deleted by hand, and a start on a busy port created
// a key and a formatted drive file before failing on bind.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "tests/harness.h"

namespace memkv::testing {
namespace {

bool Exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

std::string FileConfig(const std::string& address, const std::string& drive, const std::string& block_size,
                       const std::string& drive_size) {
  return "network:\n  address: " + address + "\nmemory:\n  max_size: 128 MiB\n  block_size: " + block_size +
         "\nstorage:\n  mode: file\n  block_size: " + block_size + "\n  drives:\n    - {media: " + drive +
         ", size: " + drive_size + "}\n";
}

TEST(StartLeftoversTest, FirstStartWhoseDriveCannotBeFormattedLeavesNoFileThatBlocksTheNext) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  const std::string drive = data + "/d0.memkv";
  // 64 MiB cannot hold one 64 MiB extent plus the journal: formatting fails
  // after the file was made.
  const std::string bad = dir.Write("bad.yaml", FileConfig("127.0.0.1:0", drive, "64 MiB", "64 MiB"));
  CommandResult r = RunMemkv({"start", "--config", bad, "--data-dir", data}, {});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("needs at least"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(drive)) << "a drive file without a superblock was left behind";

  // Fixed config, same drive path: the next start formats it and serves.
  ServerSpec spec;
  spec.data_dir = data;
  spec.storage_yaml = "  mode: file\n  block_size: 1 MiB\n  drives:\n    - {media: " + drive + ", size: 64 MiB}\n";
  ServerProcess server;
  Status s = server.Start(spec);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << server.Stderr();
  auto client = ClientFor({&server});
  EXPECT_TRUE(client->Put("after", Pattern(100, 1)).ok());
}

TEST(StartLeftoversTest, FirstStartWithoutRoomForItsDriveCreatesNothing) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  const std::string config = dir.Write("big.yaml", FileConfig("127.0.0.1:0", data + "/d0.memkv", "1 MiB", "100 TiB"));
  CommandResult r = RunMemkv({"start", "--config", config, "--data-dir", data}, {});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("needs 100 TiB"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(data + "/d0.memkv"));
  EXPECT_FALSE(Exists(data + "/auth.key")) << "refused before anything was created";
}

TEST(StartLeftoversTest, SecondStartOnABusyPortCreatesNoKeyAndNoDrive) {
  ServerProcess first;
  ASSERT_TRUE(first.Start().ok());
  TempDir dir;
  const std::string data = dir.path() + "/second";
  // No storage section: the embedded default's drive file in the data dir.
  const std::string config = dir.Write("second.yaml", "network:\n  address: " + first.address() + "\n");
  CommandResult r = RunMemkv({"start", "--config", config, "--data-dir", data}, {});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find(first.address()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was created"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(data + "/auth.key"));
  EXPECT_FALSE(Exists(data + "/drive0.memkv"));
  // The first server is untouched.
  auto client = ClientFor({&first});
  EXPECT_TRUE(client->Put("still", Pattern(10, 2)).ok());
}

}  // namespace
}  // namespace memkv::testing
