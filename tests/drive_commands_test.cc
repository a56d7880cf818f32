// `memkv setup` and `memkv drive list|inspect|verify` as an operator runs
// them: the real binary on image files and on loop devices (root and
// losetup; skipped with the reason otherwise). Values are written and
// damaged in-process through the drive library, as a stopped server would
// have left them. setup's RDMA detection runs in-process on a FakeFabric
// (this file is built with src/cli/setup.cc), since hosts without a NIC
// only ever see "no device".
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>

#include "cli/cli.h"
#include "config/server_config.h"
#include "drive/drive_file.h"
#include "drive/extent_store.h"
#include "drive/format.h"
#include "drive/test_util.h"
#include "tests/harness.h"
#include "verbs/fake.h"

namespace memkv::testing {
namespace {

using drive::LoopDevice;
using drive::Pattern;
using drive::Shell;
using drive::WriteVersionOneDrive;

constexpr uint64_t kMiB = 1 << 20;

// Runs a shell command; its exit status and output (trimmed).

void MakeFile(const std::string& path, uint64_t bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).flush();
  ASSERT_EQ(::truncate(path.c_str(), off_t(bytes)), 0) << path;
}

// Writes bytes at an offset of a file or device, around O_DIRECT.
void Poke(const std::string& path, uint64_t offset, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), off_t(offset)), ssize_t(bytes.size()));
  ::fsync(fd);
  ::close(fd);
}

std::string Peek(const std::string& path, uint64_t offset, size_t size) {
  std::string out(size, '\0');
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return "";
  ssize_t n = ::pread(fd, out.data(), size, off_t(offset));
  ::close(fd);
  out.resize(n > 0 ? size_t(n) : 0);
  return out;
}

// An ext4 filesystem on `path`: mkfs.ext4 when installed, else its magic.
void MakeExt4(const std::string& path) {
  if (Shell("command -v mkfs.ext4").first == 0) {
    auto [rc, out] = Shell("mkfs.ext4 -F -q " + path);
    ASSERT_EQ(rc, 0) << out;
  } else {
    Poke(path, 1080, std::string("\x53\xEF", 2));
  }
  ASSERT_EQ(Peek(path, 1080, 2), std::string("\x53\xEF", 2));
}

Result<config::ServerConfig> ParseConfig(const std::string& yaml) {
  return config::ParseServerConfig(yaml, "<memkv setup>");
}

Result<std::unique_ptr<drive::ExtentStore>> OpenStore(const std::vector<std::string>& drives) {
  drive::ExtentStoreOptions o;
  o.drives = drives;
  o.io_buffers = 4;
  return drive::ExtentStore::Open(o);
}

std::string StoreUuidOf(const std::string& drive) {
  std::string raw = Peek(drive, 0, drive::kDriveHeaderBytes);
  auto sb = drive::DecodeSuperblock(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()),
                                    drive);
  return sb.ok() ? sb->store_uuid.ToString() : "";
}

drive::Superblock SuperblockOf(const std::string& drive) {
  std::string raw = Peek(drive, 0, drive::kDriveHeaderBytes);
  auto sb = drive::DecodeSuperblock(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()),
                                    drive);
  EXPECT_TRUE(sb.ok()) << sb.status().ToString();
  return sb.ok() ? *sb : drive::Superblock{};
}

std::string Describe(const CommandResult& r) { return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err; }


CommandResult MemkvSetup(std::vector<std::string> args) {
  args.insert(args.begin(), "setup");
  return RunMemkv(args, {});
}

// ----------------------------------------------------------------- setup

TEST(Setup, FormatsFilesAndPrintsAConfigTheLoaderTakes) {
  TempDir dir;
  const std::string a = dir.path() + "/a.img", b = dir.path() + "/b.img";
  CommandResult r = MemkvSetup({"--drives", a, b, "--file-size", "64MiB", "--block-size", "1MiB"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  Result<config::ServerConfig> c = ParseConfig(r.out);
  ASSERT_TRUE(c.ok()) << c.status().ToString() << "\n" << r.out;
  EXPECT_EQ(c->storage.mode, config::StorageMode::kFile);
  EXPECT_EQ(c->storage.block_size_bytes, 1 * kMiB);
  ASSERT_EQ(c->storage.drives.size(), 2u);
  EXPECT_EQ(c->storage.drives[0].media, a);
  EXPECT_EQ(c->storage.drives[1].media, b);
  EXPECT_EQ(c->network.host, "127.0.0.1");  // loopback unless --address names one
  EXPECT_GE(c->memory.max_size_bytes, 256 * kMiB);  // sized to the box
  EXPECT_NE(r.err.find("format: "), std::string::npos) << "progress goes to stderr";
  EXPECT_EQ(r.out.find("INFO"), std::string::npos) << "stdout is only the config";

  // The config is a file the real loader reads, and the store it names opens.
  const std::string path = dir.Write("config.yaml", r.out);
  EXPECT_TRUE(config::LoadServerConfigFile(path).ok());
  struct stat st {};
  ASSERT_EQ(::stat(a.c_str(), &st), 0);
  EXPECT_EQ(uint64_t(st.st_size), 64 * kMiB);
  auto store = OpenStore({a, b});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->Stats().drives.size(), 2u);
  EXPECT_EQ((*store)->block_size_bytes(), 1 * kMiB);
}

TEST(Setup, RefusesAFormattedDriveNamingItAndForceReformats) {
  TempDir dir;
  const std::string a = dir.path() + "/a.img";
  ASSERT_EQ(MemkvSetup({"--drives", a, "--file-size", "32MiB"}).exit_code, 0);
  const std::string first = StoreUuidOf(a);
  ASSERT_FALSE(first.empty());

  CommandResult again = MemkvSetup({"--drives", a, "--file-size", "32MiB"});
  EXPECT_EQ(again.exit_code, 6) << Describe(again);
  EXPECT_TRUE(again.out.empty());
  EXPECT_NE(again.err.find(a + " holds MemKV data (store " + first), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
  EXPECT_EQ(StoreUuidOf(a), first) << "a refused setup writes nothing";

  CommandResult forced = MemkvSetup({"--drives", a, "--file-size", "32MiB", "--force"});
  ASSERT_EQ(forced.exit_code, 0) << Describe(forced);
  EXPECT_NE(StoreUuidOf(a), first);
  EXPECT_NE(forced.out.find("Store " + StoreUuidOf(a)), std::string::npos) << forced.out;
}

// A drive of the first on-drive format (a 4 KiB header per extent) cannot be
// read by this memkv: drive list names both versions and the way out, setup
// refuses it without --force like any MemKV data, and --force reformats it.
TEST(Setup, AVersionOneDriveIsNamedUnsupportedAndForceReformatsIt) {
  TempDir dir;
  const std::string a = dir.path() + "/a.img";
  WriteVersionOneDrive(a, 32 * kMiB, kMiB);

  CommandResult list = RunMemkv({"drive", "list", "--drives", a}, {});
  EXPECT_EQ(list.exit_code, 0) << "list shows what the drives are, openable or not: " << Describe(list);
  EXPECT_NE(list.out.find("unsupported"), std::string::npos) << Describe(list);
  EXPECT_NE(list.out.find("format version 1 is older"), std::string::npos) << Describe(list);
  EXPECT_NE(list.out.find("memkv setup --force"), std::string::npos) << Describe(list);

  CommandResult refused = MemkvSetup({"--drives", a});
  EXPECT_EQ(refused.exit_code, 6) << Describe(refused);
  EXPECT_NE(refused.err.find("version 1"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_EQ(Peek(a, 8, 1), std::string(1, '\1')) << "a refused setup writes nothing";

  CommandResult forced = MemkvSetup({"--drives", a, "--force"});
  ASSERT_EQ(forced.exit_code, 0) << Describe(forced);
  EXPECT_EQ(SuperblockOf(a).format_version, drive::kDriveFormatVersion);
  auto store = OpenStore({a});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_FALSE((*store)->Exists("old"));
}

TEST(Setup, JournalSizeSetsTheJournalAreasForStoresOfSmallValues) {
  TempDir dir;
  const std::string a = dir.path() + "/a.img";
  CommandResult r = MemkvSetup({"--drives", a, "--file-size", "64MiB", "--journal-size", "8MiB"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(SuperblockOf(a).journal_area_bytes, 8 * kMiB);
  CommandResult same = MemkvSetup({"--drives", a, "--file-size", "64MiB", "--journal-size", "8MiB", "--idempotent"});
  EXPECT_EQ(same.exit_code, 0) << Describe(same);
  CommandResult other = MemkvSetup({"--drives", a, "--file-size", "64MiB", "--journal-size", "4MiB", "--idempotent"});
  EXPECT_EQ(other.exit_code, 6) << Describe(other);
  EXPECT_NE(other.err.find("--journal-size"), std::string::npos) << other.err;
  EXPECT_EQ(SuperblockOf(a).journal_area_bytes, 8 * kMiB) << "a refused setup writes nothing";
}

TEST(Setup, IdempotentRerunKeepsTheDataAndPrintsTheSameConfig) {
  TempDir dir;
  const std::string a = dir.path() + "/a.img", b = dir.path() + "/b.img";
  const std::vector<std::string> args = {"--drives", a, b, "--file-size", "48MiB", "--block-size", "1MiB",
                                         "--idempotent"};
  CommandResult first = MemkvSetup(args);
  ASSERT_EQ(first.exit_code, 0) << Describe(first);
  const std::vector<uint8_t> value = Pattern(3 * kMiB + 17, 1);  // striped over both drives
  {
    auto store = OpenStore({a, b});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Put("kept", value).ok());
  }

  CommandResult second = MemkvSetup(args);
  ASSERT_EQ(second.exit_code, 0) << Describe(second);
  EXPECT_EQ(second.out, first.out);
  EXPECT_NE(second.err.find("left alone"), std::string::npos) << second.err;
  {
    auto store = OpenStore({b, a});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto got = (*store)->Get("kept");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, value);
  }

  // Other settings are not "the same store": refused, saying why.
  CommandResult other = MemkvSetup({"--drives", a, b, "--block-size", "2MiB", "--idempotent"});
  EXPECT_EQ(other.exit_code, 6) << Describe(other);
  EXPECT_NE(other.err.find("block size 1 MiB"), std::string::npos) << other.err;
  CommandResult partial = MemkvSetup({"--drives", a, "--block-size", "1MiB", "--idempotent"});
  EXPECT_EQ(partial.exit_code, 6) << Describe(partial);
  EXPECT_NE(partial.err.find("has 2 drives"), std::string::npos) << partial.err;

  // --idempotent --force: whatever it takes; a matching store is still kept.
  CommandResult both = MemkvSetup({"--drives", a, b, "--block-size", "1MiB", "--idempotent", "--force"});
  ASSERT_EQ(both.exit_code, 0) << Describe(both);
  EXPECT_EQ(both.out, first.out);
}

TEST(Setup, RefusesAnExt4ImageUnlessForcedAndThenWipesIt) {
  TempDir dir;
  const std::string img = dir.path() + "/fs.img";
  MakeFile(img, 64 * kMiB);
  MakeExt4(img);

  CommandResult r = MemkvSetup({"--drives", img});
  EXPECT_EQ(r.exit_code, 6) << Describe(r);
  EXPECT_NE(r.err.find(img + " holds an ext2/3/4 filesystem"), std::string::npos) << r.err;
  EXPECT_EQ(Peek(img, 1080, 2), std::string("\x53\xEF", 2)) << "refused: untouched";

  CommandResult forced = MemkvSetup({"--drives", img, "--force"});
  ASSERT_EQ(forced.exit_code, 0) << Describe(forced);
  EXPECT_EQ(Peek(img, 1080, 2), std::string(2, '\0')) << "the old signature is gone";
  EXPECT_FALSE(StoreUuidOf(img).empty());
}

TEST(Setup, RefusesOtherFilesystemAndPartitionSignatures) {
  struct Case {
    const char* name;
    uint64_t offset;
    std::string bytes;
    const char* found;
  };
  std::string mbr_entry(16, '\0');
  mbr_entry[4] = '\x83';  // a Linux partition
  const Case cases[] = {
      {"xfs", 0, "XFSB", "an XFS filesystem"},
      {"btrfs", 65600, "_BHRfS_M", "a btrfs filesystem"},
      {"gpt", 512, "EFI PART", "a GPT partition table"},
      {"mbr", 446, mbr_entry + std::string(48, '\0') + "\x55\xAA", "an MBR partition table"},
  };
  TempDir dir;
  for (const Case& c : cases) {
    const std::string img = dir.path() + "/" + c.name + ".img";
    MakeFile(img, 16 * kMiB);
    Poke(img, c.offset, c.bytes);
    CommandResult r = MemkvSetup({"--drives", img});
    EXPECT_EQ(r.exit_code, 6) << c.name << ": " << Describe(r);
    EXPECT_NE(r.err.find(img + " holds " + c.found), std::string::npos) << c.name << ": " << r.err;
  }
  // A bare 0x55AA with an empty partition table is not a partition table.
  const std::string blank = dir.path() + "/blank.img";
  MakeFile(blank, 16 * kMiB);
  Poke(blank, 510, "\x55\xAA");
  CommandResult ok = MemkvSetup({"--drives", blank});
  EXPECT_EQ(ok.exit_code, 0) << Describe(ok);
}

TEST(Setup, UsageAndInputErrorsSayWhatToDoAndTouchNothing) {
  TempDir dir;
  const std::string missing = dir.path() + "/missing.img";
  CommandResult r = MemkvSetup({"--drives", missing});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_NE(r.err.find("--file-size"), std::string::npos) << r.err;

  r = MemkvSetup({"--drives", missing, "--file-size", "16MiB", "--block-size", "3MiB"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_NE(r.err.find("power of two"), std::string::npos) << r.err;

  r = MemkvSetup({"--drives", missing, "--file-size", "16MiB", "--journal-size", "100KiB"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_NE(r.err.find("from 1 MiB to 1 GiB"), std::string::npos) << r.err;

  r = MemkvSetup({"--drives", missing, "--file-size", "16MiB", "--rdma", "nosuch9"});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_NE(r.err.find("nosuch9"), std::string::npos) << r.err;
  EXPECT_NE(::access(missing.c_str(), F_OK), 0) << "nothing created before every check passed";

  r = MemkvSetup({});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  r = MemkvSetup({"--drives", missing, dir.path() + "/./missing.img", "--file-size", "16MiB"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_NE(r.err.find("given twice"), std::string::npos) << r.err;
  EXPECT_NE(::access(missing.c_str(), F_OK), 0);
}

TEST(Setup, ADriveInUseIsRefusedAsBusy) {
  TempDir dir;
  const std::string a = dir.path() + "/a.img";
  ASSERT_EQ(MemkvSetup({"--drives", a, "--file-size", "32MiB"}).exit_code, 0);
  auto store = OpenStore({a});  // a "running server"
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  CommandResult r = MemkvSetup({"--drives", a, "--force"});
  EXPECT_EQ(r.exit_code, 4) << Describe(r);
  EXPECT_NE(r.err.find("in use"), std::string::npos) << r.err;
}

// ----------------------------------------------------------- loop devices

TEST(SetupOnLoopDevices, DirectModeRefusalsForceAndIdempotent) {
  TempDir dir;
  LoopDevice loop(dir.path() + "/disk.img", 64 * kMiB);
  REQUIRE_LOOP(loop);
  const std::string dev = loop.device();

  MakeExt4(dev);
  CommandResult r = MemkvSetup({"--drives", dev, "--block-size", "1MiB"});
  EXPECT_EQ(r.exit_code, 6) << Describe(r);
  EXPECT_NE(r.err.find(dev + " holds an ext2/3/4 filesystem"), std::string::npos) << r.err;

  r = MemkvSetup({"--drives", dev, "--block-size", "1MiB", "--force"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Result<config::ServerConfig> c = ParseConfig(r.out);
  ASSERT_TRUE(c.ok()) << c.status().ToString() << "\n" << r.out;
  EXPECT_EQ(c->storage.mode, config::StorageMode::kDirect);
  ASSERT_EQ(c->storage.drives.size(), 1u);
  EXPECT_EQ(c->storage.drives[0].media, dev);
  EXPECT_NE(r.out.find("hugepages"), std::string::npos) << "direct mode pins the pool: " << r.out;

  CommandResult again = MemkvSetup({"--drives", dev, "--block-size", "1MiB"});
  EXPECT_EQ(again.exit_code, 6) << Describe(again);
  EXPECT_NE(again.err.find(dev + " holds MemKV data"), std::string::npos) << again.err;
  CommandResult same = MemkvSetup({"--drives", dev, "--block-size", "1MiB", "--idempotent"});
  ASSERT_EQ(same.exit_code, 0) << Describe(same);
  EXPECT_EQ(same.out, r.out);

  // Files and block devices do not mix; --file-size is for files.
  CommandResult sized = MemkvSetup({"--drives", dev, "--file-size", "16MiB", "--force"});
  EXPECT_EQ(sized.exit_code, 2) << Describe(sized);
  EXPECT_NE(sized.err.find("--file-size is for file drives"), std::string::npos) << sized.err;
  const std::string file = dir.path() + "/f.img";
  MakeFile(file, 16 * kMiB);
  CommandResult mixed = MemkvSetup({"--drives", dev, file});
  EXPECT_EQ(mixed.exit_code, 3) << Describe(mixed);
  EXPECT_NE(mixed.err.find("mix"), std::string::npos) << mixed.err;

  CommandResult list = RunMemkv({"drive", "list", "--drives", dev}, {});
  EXPECT_EQ(list.exit_code, 0) << Describe(list);
  EXPECT_NE(list.out.find("online"), std::string::npos) << list.out;
}

TEST(SetupOnLoopDevices, AMountedDeviceIsBusy) {
  TempDir dir;
  LoopDevice loop(dir.path() + "/disk.img", 64 * kMiB);
  REQUIRE_LOOP(loop);
  auto held = drive::DriveFile::Open(loop.device());  // O_EXCL, as a mount or a server holds it
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  CommandResult r = MemkvSetup({"--drives", loop.device(), "--force"});
  EXPECT_EQ(r.exit_code, 4) << Describe(r);
  EXPECT_NE(r.err.find("in use"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stop the server or unmount it"), std::string::npos) << r.err;
}

// ------------------------------------------------------------ setup RDMA

// Runs `fn` with file descriptor 1 sent to a file; what it wrote there.
std::string CaptureStdout(const TempDir& dir, const std::function<void()>& fn) {
  const std::string path = dir.path() + "/captured-stdout";
  std::fflush(stdout);
  int saved = ::dup(STDOUT_FILENO);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(fd, STDOUT_FILENO);
  ::close(fd);
  fn();
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  return Peek(path, 0, 1 << 20);
}

TEST(SetupRdma, NamesTheDeviceWithAnActivePortAndCapsTheMtuAtItsActiveMtu) {
  verbs::FakeFabric fabric;
  verbs::PortInfo down = verbs::FakeFabric::HealthyPort("mlx5_0");
  down.active = false;
  down.state = "DOWN";
  verbs::PortInfo up = verbs::FakeFabric::HealthyPort("mlx5_1");
  up.active_mtu = 1024;  // a 1500-byte Ethernet path
  fabric.AddDevice(down);
  fabric.AddDevice(up);

  TempDir dir;
  const std::string a = dir.path() + "/a.img";
  cli::Environment env;
  int code = -1;
  std::string out = CaptureStdout(dir, [&] { code = cli::RunSetup({"--drives", a, "--file-size", "16MiB"}, env, fabric); });
  ASSERT_EQ(code, 0) << out;
  Result<config::ServerConfig> c = ParseConfig(out);
  ASSERT_TRUE(c.ok()) << c.status().ToString() << "\n" << out;
  EXPECT_EQ(c->rdma.device, "mlx5_1");
  EXPECT_EQ(c->rdma.mtu, 1024u) << "start refuses an rdma.mtu above the port's active MTU";
  EXPECT_NE(out.find("pinned (RDMA)"), std::string::npos) << out;

  // Named: taken even while its port is down (with a warning), MTU left at the default.
  out = CaptureStdout(dir, [&] {
    code = cli::RunSetup({"--drives", a, "--rdma", "mlx5_0", "--idempotent"}, env, fabric);
  });
  ASSERT_EQ(code, 0) << out;
  c = ParseConfig(out);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rdma.device, "mlx5_0");
  EXPECT_EQ(c->rdma.mtu, 4096u);

  out = CaptureStdout(dir, [&] { code = cli::RunSetup({"--drives", a, "--rdma", "mlx5_9", "--idempotent"}, env, fabric); });
  EXPECT_EQ(code, 3);
  EXPECT_TRUE(out.empty()) << out;
}

TEST(SetupRdma, NoDeviceMeansATcpOnlyConfig) {
  verbs::FakeFabric fabric;
  TempDir dir;
  int code = -1;
  cli::Environment env;
  std::string out = CaptureStdout(dir, [&] {
    code = cli::RunSetup({"--drives", dir.path() + "/a.img", "--file-size", "16MiB"}, env, fabric);
  });
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(out.find("\nrdma:"), std::string::npos) << out;
  EXPECT_NE(out.find("clients use TCP"), std::string::npos) << out;
  EXPECT_EQ(out.find("pinned"), std::string::npos) << "file mode without RDMA does not pin the pool: " << out;
  EXPECT_TRUE(ParseConfig(out).ok());
}

// ---------------------------------------------------------------- drive

class DriveCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = dir_.path() + "/a.img";
    b_ = dir_.path() + "/b.img";
    CommandResult r = MemkvSetup({"--drives", a_, b_, "--file-size", "64MiB", "--block-size", "1MiB"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    config_ = dir_.Write("config.yaml", r.out);
  }
  // Writes values of assorted sizes (one to four extents) and deletes one.
  void Fill(int n) {
    auto store = OpenStore({a_, b_});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    for (int i = 0; i < n; ++i) {
      std::vector<uint8_t> v = Pattern(size_t(i) * 700001 % (4 * kMiB) + 1, uint64_t(i));
      ASSERT_TRUE((*store)->Put("key-" + std::to_string(i), v).ok());
      bytes_ += v.size();
    }
    ASSERT_TRUE((*store)->Put("gone", Pattern(1000, 99)).ok());
    ASSERT_TRUE((*store)->Delete("gone").ok());
  }
  CommandResult Drive(const std::string& action, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"drive", action, "--config", config_};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunMemkv(args, {});
  }

  TempDir dir_;
  std::string a_, b_, config_;
  uint64_t bytes_ = 0;
};

TEST_F(DriveCommand, ListInspectAndVerifyAHealthyStore) {
  Fill(12);
  CommandResult list = Drive("list");
  ASSERT_EQ(list.exit_code, 0) << Describe(list);
  EXPECT_NE(list.out.find("12 values"), std::string::npos) << list.out;
  for (const std::string& path : {a_, b_}) {
    const drive::Superblock sb = SuperblockOf(path);
    EXPECT_NE(list.out.find(sb.drive_uuid.ToString()), std::string::npos) << list.out;
  }
  EXPECT_EQ(std::count(list.out.begin(), list.out.end(), '\n'), 4) << "header, store line, two rows:\n" << list.out;
  CommandResult json = Drive("list", {"--json"});
  ASSERT_EQ(json.exit_code, 0) << Describe(json);
  EXPECT_NE(json.out.find("\"path\": \"" + a_ + "\", \"index\": 0"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"state\": \"online\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"format_version\": " + std::to_string(drive::kDriveFormatVersion)), std::string::npos)
      << json.out;

  CommandResult inspect = Drive("inspect");
  ASSERT_EQ(inspect.exit_code, 0) << Describe(inspect);
  EXPECT_NE(inspect.out.find("values             12"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("journal used"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("drive 1: " + b_), std::string::npos) << inspect.out;
  CommandResult ijson = Drive("inspect", {"--json"});
  ASSERT_EQ(ijson.exit_code, 0) << Describe(ijson);
  EXPECT_NE(ijson.out.find("\"keys\": 12"), std::string::npos) << ijson.out;
  EXPECT_NE(ijson.out.find("\"extent_bytes\": 1048576"), std::string::npos) << ijson.out;

  CommandResult verify = Drive("verify");
  ASSERT_EQ(verify.exit_code, 0) << Describe(verify);
  EXPECT_NE(verify.out.find("values ok          12\n"), std::string::npos) << verify.out;
  EXPECT_NE(verify.out.find("result: ok"), std::string::npos) << verify.out;
  CommandResult vjson = Drive("verify", {"--json"});
  ASSERT_EQ(vjson.exit_code, 0) << Describe(vjson);
  EXPECT_NE(vjson.out.find("\"bytes_scanned\": " + std::to_string(bytes_)), std::string::npos) << vjson.out;
}

TEST_F(DriveCommand, VerifyNamesACorruptValueAndExitsNonZero) {
  // "victim" alone first: its one extent lands in unit 0 of one drive.
  {
    auto store = OpenStore({a_, b_});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Put("victim", Pattern(5000, 7)).ok());
  }
  std::string victim_drive;
  uint64_t at = 0;
  for (const std::string& path : {a_, b_}) {
    const drive::Superblock sb = SuperblockOf(path);
    const uint64_t data = sb.unit_offset(0) + 100;
    if (Peek(path, data, 1) != std::string(1, '\0')) {
      victim_drive = path;
      at = data;
    }
  }
  ASSERT_FALSE(victim_drive.empty());
  {
    auto store = OpenStore({a_, b_});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Put("fine", Pattern(5000, 8)).ok());
  }
  std::string byte = Peek(victim_drive, at, 1);
  Poke(victim_drive, at, std::string(1, char(byte[0] ^ 0x40)));

  CommandResult r = Drive("verify");
  EXPECT_EQ(r.exit_code, 6) << Describe(r);
  EXPECT_NE(r.out.find("values ok          1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("values bad         1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bad: key \"victim\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("result: FAILED"), std::string::npos) << r.out;
  CommandResult json = Drive("verify", {"--json"});
  EXPECT_EQ(json.exit_code, 6) << Describe(json);
  EXPECT_NE(json.out.find("\"bad\": 1,"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"result\": \"failed\""), std::string::npos) << json.out;
}

TEST_F(DriveCommand, RefusesAStoreInUse) {
  auto store = OpenStore({a_, b_});  // what a running server holds
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  for (const char* action : {"list", "inspect", "verify"}) {
    CommandResult r = Drive(action);
    EXPECT_EQ(r.exit_code, 4) << action << ": " << Describe(r);
    EXPECT_NE(r.err.find("stop"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
}

// Regression: `drive list` with a drive left out of --drives opened the
// store, which recorded the absent drive offline; it then came back empty.
TEST_F(DriveCommand, ADriveLeftOutIsNotMarkedOffline) {
  Fill(4);
  CommandResult list = RunMemkv({"drive", "list", "--drives", a_}, {});
  EXPECT_EQ(list.exit_code, 0) << Describe(list);
  EXPECT_NE(list.out.find("not-given"), std::string::npos) << list.out;
  CommandResult verify = RunMemkv({"drive", "verify", "--drives", a_}, {});
  EXPECT_EQ(verify.exit_code, 3) << Describe(verify);
  EXPECT_NE(verify.err.find("--allow-degraded"), std::string::npos) << verify.err;

  CommandResult full = Drive("verify");
  EXPECT_EQ(full.exit_code, 0) << Describe(full);
  EXPECT_NE(full.out.find("values ok          4\n"), std::string::npos) << full.out;
}

TEST_F(DriveCommand, NothingToExamineIsAConfigError) {
  const std::string memory = dir_.Write("memory.yaml", "storage:\n  mode: memory\n");
  CommandResult r = RunMemkv({"drive", "list", "--config", memory}, {});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_NE(r.err.find("no storage.drives"), std::string::npos) << r.err;
  r = RunMemkv({"drive", "frob"}, {});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  const std::string blank = dir_.path() + "/blank.img";
  MakeFile(blank, 16 * kMiB);
  r = RunMemkv({"drive", "inspect", "--drives", blank}, {});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_NE(r.err.find("unformatted"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace memkv::testing
