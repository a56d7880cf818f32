// Key files that memkv start reads (storage.encryption_key_file, the data
// directory's auth.key) are checked before they are read: a directory made
// the server abort (an uncaught stream exception), /dev/zero was read until
// memory ran out, and a master key readable by group or others was accepted
// without a word. Each is now refused naming the path and what is allowed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "tests/harness.h"

namespace memkv::testing {
namespace {

constexpr char kMasterKeyHex[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
constexpr char kAllowed[] = "allowed: a regular file of 32 raw bytes or 64 hex characters, mode 0600 or 0400";

std::string EncryptedConfig(const TempDir& dir, const std::string& key_file) {
  return "network:\n  address: 127.0.0.1:0\n  auth_key: " + std::string(kTestKeyHex) +
         "\nmemory:\n  max_size: 16 MiB\n  block_size: 1 MiB\nstorage:\n  mode: file\n  block_size: 1 MiB\n"
         "  encryption: aes-256-gcm\n  encryption_key_file: " + key_file + "\n  drives:\n    - {media: " +
         dir.path() + "/d0.memkv, size: 64 MiB}\n";
}

std::string WriteKey(const TempDir& dir, const std::string& name, mode_t mode) {
  const std::string path = dir.Write(name, kMasterKeyHex);
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  return path;
}

// memkv start with storage.encryption_key_file = key_file: it must stop with
// an error (not a signal) whose text names the path and what is allowed.
void ExpectStartRefusesMasterKey(const std::string& key_file, const std::string& why) {
  TempDir dir;
  const std::string config = dir.Write("config.yaml", EncryptedConfig(dir, key_file));
  const auto started = std::chrono::steady_clock::now();
  CommandResult r = RunMemkv({"start", "--config", config, "--data-dir", dir.path() + "/data"}, {}, "", 20000);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_GT(r.exit_code, 0) << r.err;
  EXPECT_LT(r.exit_code, 128) << "ended by a signal: " << r.err;
  EXPECT_LT(took, std::chrono::seconds(15)) << "refused only after a long read";
  EXPECT_NE(r.err.find("storage.encryption_key_file " + key_file + " " + why), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(kAllowed), std::string::npos) << r.err;
}

TEST(KeyFileTest, MasterKeyFileThatIsADirectoryIsRefusedNotAborted) {
  TempDir keys;
  ExpectStartRefusesMasterKey(keys.path(), "is a directory");
}

TEST(KeyFileTest, MasterKeyFileThatIsDevZeroIsRefusedAtOnce) {
  ExpectStartRefusesMasterKey("/dev/zero", "is a character device");
}

TEST(KeyFileTest, MasterKeyFileReadableByGroupOrOthersIsRefused) {
  TempDir keys;
  ExpectStartRefusesMasterKey(WriteKey(keys, "group.key", 0640), "has mode 0640, readable by group or others");
  ExpectStartRefusesMasterKey(WriteKey(keys, "world.key", 0604), "has mode 0604, readable by group or others");
}

TEST(KeyFileTest, MasterKeyFileOwnedByAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the file to another user";
  TempDir keys;
  const std::string path = WriteKey(keys, "other.key", 0600);
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  ExpectStartRefusesMasterKey(path, "is owned by uid 65534, not the server's user");
}

TEST(KeyFileTest, MasterKeyFileOfMode0400OwnedByTheServersUserIsUsed) {
  TempDir dir;
  const std::string key = WriteKey(dir, "drive.key", 0400);
  ServerSpec spec = FileModeSpec(dir.path(), 1, "64 MiB", "16 MiB",
                                 "  encryption: aes-256-gcm\n  encryption_key_file: " + key + "\n");
  ServerProcess server;
  ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();
  auto client = ClientFor({&server});
  EXPECT_TRUE(client->Put("k", Pattern(1000, 1)).ok());
}

TEST(KeyFileTest, AuthKeyFileThatIsADirectoryIsRefusedNamingIt) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  ASSERT_EQ(::mkdir(data.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((data + "/auth.key").c_str(), 0700), 0);
  ServerSpec spec;
  spec.auth_key_hex = "";
  spec.data_dir = data;
  ServerProcess server;
  EXPECT_FALSE(server.Start(spec).ok());
  EXPECT_NE(server.Stderr().find("auth key file " + data + "/auth.key is a directory; allowed: a regular file"),
            std::string::npos)
      << server.Stderr();
}

}  // namespace
}  // namespace memkv::testing
