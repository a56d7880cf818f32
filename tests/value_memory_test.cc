// A value of 8 GiB put and read back in file mode with a 64 MiB pool: the
// server moves it to and from the drives a window at a time and the client
// straight from and into the caller's buffer, so neither process's memory
// grows by more than 256 MiB over its idle figure (the pool aside). Labelled
// slow (18 GiB of disk, a minute): not run under the sanitizers, whose
// shadow memory would measure nothing of ours. Where the test's directory
// has not the room for 8 GiB, the value is the largest of 4, 2 and 1 GiB that
// fits, each still four times the allowance.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/checksum.h"
#include "tests/harness.h"

namespace memkv::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

// A field of /proc/<pid>/status in bytes ("VmHWM", "RssAnon"); -1 if absent.
int64_t StatusBytes(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  return -1;
}

// A file of `size` pattern bytes mapped shared: the caller's buffer of a put
// and a get, held by the page cache rather than the process's anonymous memory,
// so that what the client itself allocates shows in its RssAnon.
class MappedFile {
 public:
  MappedFile(const std::string& path, uint64_t size) : size_(size) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd_ < 0 || ::ftruncate(fd_, static_cast<off_t>(size)) != 0) return;
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(data_, size_);
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return data_ != nullptr; }
  std::span<uint8_t> span() { return {data_, size_}; }
  // Fills it a chunk at a time, writing each back, so the page cache can
  // drop what it already wrote.
  uint64_t FillAndChecksum(uint64_t seed) {
    ChecksumStream sum;
    constexpr uint64_t kChunk = 256 * kMiB;
    for (uint64_t off = 0; off < size_; off += kChunk) {
      const uint64_t n = std::min(kChunk, size_ - off);
      FillPattern(std::span<uint8_t>(data_ + off, n), seed + off / kChunk);
      sum.Update(data_ + off, n);
      ::msync(data_ + off, n, MS_SYNC);
      ::madvise(data_ + off, n, MADV_DONTNEED);
    }
    return sum.Digest();
  }
  // Reads as zeros again.
  bool Clear() { return ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(size_)) == 0; }

 private:
  uint64_t size_;
  int fd_ = -1;
  uint8_t* data_ = nullptr;
};

// Free bytes of the file system holding `path`; 0 if unknown.
uint64_t FreeBytes(const std::string& path) {
  struct statvfs fs {};
  if (::statvfs(path.c_str(), &fs) != 0) return 0;
  return uint64_t{fs.f_bavail} * fs.f_frsize;
}

// What a value of `size` takes on disk here: the caller's mapped file, two
// drive files of 0.6 times it each (the value, its extents' slack and the
// journal), and 512 MiB to spare.
uint64_t DriveSizeFor(uint64_t size) { return size / 10 * 6; }
uint64_t DiskFor(uint64_t size) { return size + 2 * DriveSizeFor(size) + 512 * kMiB; }

TEST(ValueMemoryTest, ValueOfGiBsPutAndGetStayWithin256MiBOfIdleMemoryOnBothEnds) {
  TempDir dir;
  const uint64_t free_bytes = FreeBytes(dir.path());
  uint64_t size = 8 * kGiB;
  while (size > kGiB && DiskFor(size) > free_bytes) size /= 2;
  if (DiskFor(size) > free_bytes) {
    GTEST_SKIP() << dir.path() << " has " << free_bytes / kMiB << " MiB free; a 1 GiB value needs "
                 << DiskFor(size) / kMiB << " MiB";
  }
  ServerProcess server;
  const std::string pool = "64 MiB";
  const std::string drive = std::to_string(DriveSizeFor(size) / kMiB) + " MiB";
  ASSERT_TRUE(server.Start(FileModeSpec(dir.path(), 2, drive, pool)).ok()) << server.Stderr();
  auto client = ClientFor({&server}, 30000);
  ASSERT_NE(client, nullptr);
  MappedFile file(dir.path() + "/value", size);
  ASSERT_TRUE(file.ok());
  const uint64_t checksum = file.FillAndChecksum(3);
  ASSERT_TRUE(client->Put("warm-up", std::vector<uint8_t>(kMiB, 1)).ok());

  // Peak RSS from here on (clear_refs 5 resets VmHWM to the current RSS).
  std::ofstream(("/proc/" + std::to_string(server.pid()) + "/clear_refs").c_str()) << "5";
  const int64_t server_idle = StatusBytes(server.pid(), "VmRSS");
  const int64_t client_idle = StatusBytes(::getpid(), "RssAnon");
  ASSERT_GT(server_idle, 0);
  ASSERT_GT(client_idle, 0);
  // The client is this process: its anonymous memory is sampled while the
  // value moves (the server's peak is the kernel's VmHWM).
  std::atomic<bool> moving{true};
  std::atomic<int64_t> client_peak{client_idle};
  std::thread sampler([&] {
    while (moving.load()) {
      client_peak.store(std::max(client_peak.load(), StatusBytes(::getpid(), "RssAnon")));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  Status put = client->Put("eight", file.span());
  EXPECT_TRUE(put.ok()) << put.ToString();
  EXPECT_TRUE(file.Clear());
  Result<size_t> got = client->GetInto("eight", file.span());
  moving.store(false);
  sampler.join();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(*got, size);
  EXPECT_EQ(Checksum(file.span().data(), size), checksum) << "the bytes read back are the bytes put";

  constexpr int64_t kAllowance = 256 * static_cast<int64_t>(kMiB);
  const int64_t server_peak = StatusBytes(server.pid(), "VmHWM");
  // The pool aside: it may have been touched only by this put's neighbours.
  EXPECT_LE(server_peak - server_idle, kAllowance + 64 * static_cast<int64_t>(kMiB))
      << "server: idle " << server_idle << ", peak " << server_peak;
  EXPECT_LE(client_peak.load() - client_idle, kAllowance) << "client: idle " << client_idle << ", peak "
                                                          << client_peak.load();
  std::printf("%llu GiB put and get: server peak RSS %+.1f MiB over idle, client peak anonymous RSS %+.1f MiB\n",
              static_cast<unsigned long long>(size / kGiB), double(server_peak - server_idle) / double(kMiB),
              double(client_peak.load() - client_idle) / double(kMiB));
}

}  // namespace
}  // namespace memkv::testing
