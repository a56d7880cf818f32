// The DRAM pool on real 2 MiB hugetlb pages, and what `memkv start` does
// with them (docs/configuration.md, "Memory backing").
//
// These tests change vm.nr_hugepages (they need root; they skip, saying why,
// where the kernel refuses) and put it back in TearDown. ctest runs them
// serially (RUN_SERIAL): the sysctl is host-wide.
//
// The refusal of a pinned pool needs an RDMA device to go through the real
// binary; without one that test skips, and src/storage/hugepages_test.cc
// covers the decision (PoolPolicyFor, PlanPoolBacking, the message).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/units.h"
#include "storage/hugepages.h"
#include "storage/memory_store.h"
#include "tests/harness.h"

namespace memkv {
namespace {

using testing::MemkvBinary;
using testing::PollUntil;
using testing::TempDir;

constexpr char kNrHugepages[] = "/proc/sys/vm/nr_hugepages";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

storage::HugePageCounts HostCounts() {
  Result<storage::HugePageCounts> c = storage::HugePageReader("/").Read2MiB();
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : storage::HugePageCounts{};
}

// The smaps block of the mapping that starts at `base`, or "".
std::string SmapsOf(const void* base) {
  char start[32];
  std::snprintf(start, sizeof(start), "%" PRIxPTR "-", reinterpret_cast<uintptr_t>(base));
  std::istringstream smaps(ReadFile("/proc/self/smaps"));
  std::string line, block;
  bool in_block = false;
  while (std::getline(smaps, line)) {
    // A header line is "START-END perms offset dev inode [path]".
    bool header = line.find('-') != std::string::npos && line.find(':') > line.find(' ');
    if (header) {
      if (in_block) break;
      in_block = line.rfind(start, 0) == 0;
    }
    if (in_block) block += line + "\n";
  }
  return block;
}

// "Private_Hugetlb:    8192 kB" -> 8192.
uint64_t SmapsKb(const std::string& block, const std::string& field) {
  size_t at = block.find("\n" + field + ":");
  if (at == std::string::npos) return UINT64_MAX;
  return std::strtoull(block.c_str() + at + field.size() + 2, nullptr, 10);
}

// Sets vm.nr_hugepages as a test needs and restores the old value.
class HostHugePages : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string text = ReadFile(kNrHugepages);
    if (text.empty()) GTEST_SKIP() << "cannot read " << kNrHugepages << ": no hugetlb in this kernel";
    old_nr_ = std::strtoull(text.c_str(), nullptr, 10);
    Result<storage::HugePageCounts> c = storage::HugePageReader("/").Read2MiB();
    if (!c.ok()) GTEST_SKIP() << c.status().message();
  }
  void TearDown() override {
    if (changed_ && !WriteNr(old_nr_)) ADD_FAILURE() << "could not restore vm.nr_hugepages to " << old_nr_;
  }

  static bool WriteNr(uint64_t nr) {
    int fd = ::open(kNrHugepages, O_WRONLY);
    if (fd < 0) return false;
    std::string text = std::to_string(nr);
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return ok;
  }

  // Makes at least `pages` 2 MiB hugepages available (free and unreserved);
  // on failure `why` says what the kernel did.
  bool Provide(uint64_t pages, std::string* why) {
    storage::HugePageCounts c = HostCounts();
    if (c.available() >= pages) return true;
    uint64_t want = c.total + (pages - c.available());
    changed_ = true;
    if (!WriteNr(want)) {
      *why = std::string("writing ") + std::to_string(want) + " to " + kNrHugepages + ": " + std::strerror(errno);
      return false;
    }
    c = HostCounts();
    if (c.available() < pages) {
      *why = "asked the kernel for " + std::to_string(want) + " 2 MiB hugepages, it made " + std::to_string(c.total) +
             " (" + std::to_string(c.available()) + " available; memory too fragmented?)";
      return false;
    }
    return true;
  }

  uint64_t old_nr_ = 0;
  bool changed_ = false;
};

#define PROVIDE_OR_SKIP(pages)                                                      \
  do {                                                                              \
    std::string why;                                                                \
    if (!Provide(pages, &why)) GTEST_SKIP() << "no hugetlb pages for the test: " << why; \
  } while (0)

storage::MemoryStoreOptions HostOptions(storage::HugePagePolicy policy, uint64_t bytes, uint64_t chunk = 2 * kMiB) {
  storage::MemoryStoreOptions o;
  o.max_size_bytes = bytes;
  o.block_size_bytes = chunk;
  o.hugepages = policy;
  return o;
}

TEST_F(HostHugePages, RequireMapsRealHugetlbPages) {
  PROVIDE_OR_SKIP(4);
  const storage::HugePageCounts before = HostCounts();
  Result<std::unique_ptr<storage::MemoryStore>> made =
      storage::MemoryStore::Create(HostOptions(storage::HugePagePolicy::kRequire, 8 * kMiB));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  storage::MemoryStore& store = **made;
  EXPECT_EQ(store.backing().kind, storage::PageKind::kHugetlb2MiB);
  EXPECT_EQ(storage::PageKindName(store.Stats().page_kind), "hugetlb 2MiB");
  EXPECT_EQ(store.backing().mapping_bytes, 8 * kMiB);
  EXPECT_NE(store.backing().detail.find("4 pages reserved"), std::string::npos) << store.backing().detail;

  // The kernel reserved the pages at mmap: nothing can take them before the
  // first touch (which would otherwise be a SIGBUS).
  storage::HugePageCounts mapped = HostCounts();
  EXPECT_EQ(mapped.reserved, before.reserved + 4);
  EXPECT_EQ(mapped.free, before.free);

  std::string smaps = SmapsOf(store.pool_base());
  ASSERT_FALSE(smaps.empty()) << "no mapping at " << store.pool_base() << " in /proc/self/smaps";
  EXPECT_EQ(SmapsKb(smaps, "KernelPageSize"), 2048u) << smaps;
  EXPECT_EQ(SmapsKb(smaps, "MMUPageSize"), 2048u) << smaps;

  // Fill every chunk: the pages are faulted in, and come back byte-exact.
  std::vector<std::vector<uint8_t>> values;
  for (int i = 0; i < 4; ++i) {
    values.push_back(testing::Pattern(2 * kMiB, i));
    ASSERT_TRUE(store.Put("k" + std::to_string(i), values.back().data(), values.back().size()).ok());
  }
  smaps = SmapsOf(store.pool_base());
  EXPECT_EQ(SmapsKb(smaps, "Private_Hugetlb") + SmapsKb(smaps, "Shared_Hugetlb"), 8192u) << smaps;
  storage::HugePageCounts touched = HostCounts();
  EXPECT_EQ(touched.free, before.free - 4);
  EXPECT_EQ(touched.reserved, before.reserved);
  for (int i = 0; i < 4; ++i) {
    Result<storage::ReadHandle> h = store.Get("k" + std::to_string(i));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    std::vector<uint8_t> got(h->size());
    h->CopyTo(got.data());
    EXPECT_EQ(got, values[i]);
  }

  made->reset();  // munmap gives the pages back
  storage::HugePageCounts after = HostCounts();
  EXPECT_EQ(after.free, before.free);
  EXPECT_EQ(after.reserved, before.reserved);
}

TEST_F(HostHugePages, PoolOfPartPagesIsRoundedUpToWholeHugepages) {
  PROVIDE_OR_SKIP(2);
  const storage::HugePageCounts before = HostCounts();
  // 3 MiB in 4 KiB chunks: two 2 MiB pages, the last one half used.
  Result<std::unique_ptr<storage::MemoryStore>> made =
      storage::MemoryStore::Create(HostOptions(storage::HugePagePolicy::kRequire, 3 * kMiB, 4 * kKiB));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ((*made)->pool_bytes(), 3 * kMiB);
  EXPECT_EQ((*made)->backing().mapping_bytes, 4 * kMiB);
  EXPECT_EQ(HostCounts().reserved, before.reserved + 2);
  std::vector<uint8_t> value = testing::Pattern(3 * kMiB, 7);
  ASSERT_TRUE((*made)->Put("whole-pool", value.data(), value.size()).ok());
  Result<storage::ReadHandle> h = (*made)->Get("whole-pool");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  std::vector<uint8_t> got(h->size());
  h->CopyTo(got.data());
  EXPECT_EQ(got, value);
  *h = storage::ReadHandle();
  made->reset();  // munmap of the rounded length, or the pages would leak
  EXPECT_EQ(HostCounts().free, before.free);
  EXPECT_EQ(HostCounts().reserved, before.reserved);
}

TEST_F(HostHugePages, AutoTakesHugetlbWhenEnoughAreFree) {
  PROVIDE_OR_SKIP(4);
  Result<std::unique_ptr<storage::MemoryStore>> made =
      storage::MemoryStore::Create(HostOptions(storage::HugePagePolicy::kAuto, 8 * kMiB));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ((*made)->backing().kind, storage::PageKind::kHugetlb2MiB);
  EXPECT_EQ(SmapsKb(SmapsOf((*made)->pool_base()), "KernelPageSize"), 2048u);
}

TEST_F(HostHugePages, AutoWithTooFewFreeFallsBackAndSaysWhy) {
  const storage::HugePageCounts c = HostCounts();
  const uint64_t pages = c.available() + 16;
  Result<std::unique_ptr<storage::MemoryStore>> made =
      storage::MemoryStore::Create(HostOptions(storage::HugePagePolicy::kAuto, pages * storage::kHugePageBytes));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_NE((*made)->backing().kind, storage::PageKind::kHugetlb2MiB);
  EXPECT_NE((*made)->backing().detail.find("hugetlb not used: " + std::to_string(c.available()) +
                                           " free 2 MiB hugepages, " + std::to_string(pages) + " needed"),
            std::string::npos)
      << (*made)->backing().detail;
  EXPECT_EQ(SmapsKb(SmapsOf((*made)->pool_base()), "KernelPageSize"), 4u);
}

// --- memkv start ---------------------------------------------------------------

// `memkv start` in the background with a config of our own (the harness's
// ServerProcess always uses the default rdma.device, which these tests must
// pick). Stops it with SIGTERM on destruction.
class StartedServer {
 public:
  StartedServer(const TempDir& dir, const std::string& config_path) : dir_(dir) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int out = ::open((dir.path() + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open((dir.path() + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, STDOUT_FILENO);
      ::dup2(err, STDERR_FILENO);
      std::string bin = MemkvBinary(), data_dir = dir.path() + "/data";
      ::execl(bin.c_str(), bin.c_str(), "start", "--config", config_path.c_str(), "--data-dir", data_dir.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~StartedServer() { Stop(); }

  // True once "ready" is printed; false when the server exited (exit_code()
  // then says how) or 10 s passed.
  bool WaitReady() {
    PollUntil([&] { return Out().rfind("ready ", 0) == 0 || Exited(); }, 10000);
    return Out().rfind("ready ", 0) == 0;
  }
  // Exit code once exited, -1 while running; waits up to 10 s.
  int WaitExit() {
    PollUntil([&] { return Exited(); }, 10000);
    return exit_code_;
  }
  void Stop() {
    if (pid_ > 0 && !Exited()) {
      ::kill(pid_, SIGTERM);
      WaitExit();
      if (!Exited()) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
      }
    }
    pid_ = -1;
  }
  std::string Out() const { return ReadFile(dir_.path() + "/stdout"); }
  std::string Err() const { return ReadFile(dir_.path() + "/stderr"); }

 private:
  bool Exited() {
    if (exit_code_ != -1) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }
  const TempDir& dir_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

std::string ServerConfigYaml(uint64_t max_size_bytes, const std::string& rdma_device) {
  return "network:\n  address: 127.0.0.1:0\n  auth_key: " + std::string(testing::kTestKeyHex) +
         "\nmemory:\n  max_size: " + FormatSize(max_size_bytes) + "\n  block_size: 2 MiB\nstorage:\n  mode: memory\n"
         "rdma:\n  device: " + rdma_device + "\n";
}

// A device name no host has: the server is TCP only whatever the host has.
constexpr char kNoSuchDevice[] = "memkv-test-no-such-hca";

TEST_F(HostHugePages, StartBacksThePoolWithFreeHugepages) {
  PROVIDE_OR_SKIP(32);
  const storage::HugePageCounts before = HostCounts();
  TempDir dir;
  StartedServer server(dir, dir.Write("config.yaml", ServerConfigYaml(64 * kMiB, kNoSuchDevice)));
  ASSERT_TRUE(server.WaitReady()) << server.Err();
  EXPECT_NE(server.Err().find("INFO  [start] memory store: 64 MiB pool (2 MiB blocks, values packed in 64-byte units), hugetlb 2MiB (32 pages reserved"),
            std::string::npos)
      << server.Err();
  // The server holds them: faulted in at start (memory.prefault), so they
  // are no longer free rather than reserved.
  EXPECT_EQ(HostCounts().available(), before.available() - 32);
  EXPECT_EQ(HostCounts().reserved, before.reserved);
  server.Stop();
  EXPECT_EQ(HostCounts().available(), before.available());
}

// storage.mode direct end to end: a loop device formatted by `memkv setup`,
// served by `memkv start` (whose pool must then be hugetlb), values survive a
// restart, one of them larger than the pool (to the device and back in
// pieces); a regular file is refused as a direct-mode drive.
TEST_F(HostHugePages, DirectModeServesFromALoopDeviceAcrossARestart) {
  if (::geteuid() != 0 || testing::RunShell("command -v losetup").exit_code != 0) {
    GTEST_SKIP() << "loop devices need root and losetup";
  }
  PROVIDE_OR_SKIP(32);
  TempDir dir;
  const std::string image = dir.path() + "/nvme.img";
  testing::CommandResult made = testing::RunShell("truncate -s 256M " + image + " && losetup --find --show " + image);
  if (made.exit_code != 0) GTEST_SKIP() << "no loop device: " << made.out;
  const std::string device = made.out.substr(0, made.out.find('\n'));
  struct Detach {
    std::string device;
    ~Detach() { testing::RunShell("losetup -d " + device); }
  } detach{device};

  testing::CommandResult setup =
      testing::RunMemkv({"setup", "--drives", device, "--block-size", "1MiB"}, {}, "", 60000);
  ASSERT_EQ(setup.exit_code, 0) << setup.err;
  auto config = [&](const std::string& media) {
    return "network:\n  address: 127.0.0.1:0\n  auth_key: " + std::string(testing::kTestKeyHex) +
           "\nmemory:\n  max_size: 64 MiB\n  block_size: 2 MiB\nrdma:\n  device: " + kNoSuchDevice +
           "\nstorage:\n  mode: direct\n  block_size: 1 MiB\n  drives:\n    - media: " + media + "\n";
  };
  const std::string config_path = dir.Write("direct.yaml", config(device));
  const std::vector<uint8_t> value = testing::Pattern(3 << 20, 42);
  const std::vector<uint8_t> over_pool = testing::Pattern(80 << 20, 43);  // the pool is 64 MiB
  for (int round = 0; round < 2; ++round) {
    TempDir run;
    StartedServer server(run, config_path);
    ASSERT_TRUE(server.WaitReady()) << server.Err();
    EXPECT_NE(server.Err().find("hugetlb 2MiB"), std::string::npos) << server.Err();
    const std::string out = server.Out();
    ClientOptions options;
    options.servers = {out.substr(6, out.find('\n') - 6)};
    options.auth_key_hex = testing::kTestKeyHex;
    options.transport = "tcp";
    auto client = std::move(Client::Create(options)).value();
    if (round == 0) {
      ASSERT_TRUE(client->Put("direct", value).ok()) << server.Err();
      Status big = client->Put("over-pool", over_pool);
      ASSERT_TRUE(big.ok()) << big.ToString() << "\n" << server.Err();
    }
    Result<std::vector<uint8_t>> got = client->Get("direct");
    ASSERT_TRUE(got.ok()) << "round " << round << ": " << got.status().ToString() << "\n" << server.Err();
    EXPECT_TRUE(*got == value);
    got = client->Get("over-pool");
    ASSERT_TRUE(got.ok()) << "round " << round << ": " << got.status().ToString() << "\n" << server.Err();
    EXPECT_TRUE(*got == over_pool);
  }

  TempDir run;
  StartedServer refused(run, dir.Write("file.yaml", config(image)));
  EXPECT_EQ(refused.WaitExit(), 3) << refused.Err();
  EXPECT_NE(refused.Err().find("is not a block device"), std::string::npos) << refused.Err();
}

TEST_F(HostHugePages, StartWithoutRdmaServesWhenHugepagesAreShort) {
  // The embedded-default shape (no RDMA device in use): too few hugepages is
  // not a refusal, the pool takes transparent hugepages or 4 KiB pages.
  const storage::HugePageCounts c = HostCounts();
  const uint64_t pages = c.available() + 16;
  TempDir dir;
  StartedServer server(dir, dir.Write("config.yaml", ServerConfigYaml(pages * storage::kHugePageBytes, kNoSuchDevice)));
  ASSERT_TRUE(server.WaitReady()) << server.Err();
  EXPECT_NE(server.Err().find("hugetlb not used: " + std::to_string(c.available()) + " free 2 MiB hugepages, " +
                              std::to_string(pages) + " needed"),
            std::string::npos)
      << server.Err();
}

// The first RDMA device on this host, or "".
std::string AnyRdmaDevice() {
  DIR* dir = ::opendir("/sys/class/infiniband");
  if (dir == nullptr) return "";
  std::string name;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') {
      name = e->d_name;
      break;
    }
  }
  ::closedir(dir);
  return name;
}

TEST_F(HostHugePages, StartRefusesAPinnedPoolWithoutFreeHugepages) {
  const std::string device = AnyRdmaDevice();
  if (device.empty()) {
    GTEST_SKIP() << "no RDMA device (/sys/class/infiniband is empty): the refusal needs one; "
                    "src/storage/hugepages_test.cc tests the decision and its message";
  }
  const storage::HugePageCounts c = HostCounts();
  const uint64_t pages = c.available() + 16;
  TempDir dir;
  StartedServer server(dir, dir.Write("config.yaml", ServerConfigYaml(pages * storage::kHugePageBytes, device)));
  EXPECT_EQ(server.WaitExit(), 3) << server.Err();
  EXPECT_NE(server.Err().find("memkv start: the memory pool is pinned (RDMA device " + device +
                              " registers it), so it must be 2 MiB hugepages: memory.max_size " +
                              FormatSize(pages * storage::kHugePageBytes) + " needs " + std::to_string(pages) +
                              " free 2 MiB hugepages but only " + std::to_string(c.available()) + " are free"),
            std::string::npos)
      << server.Err();
  EXPECT_NE(server.Err().find("sysctl -w vm.nr_hugepages="), std::string::npos) << server.Err();
  EXPECT_EQ(server.Out(), "");
}

}  // namespace
}  // namespace memkv
