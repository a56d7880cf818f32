#include "drive/test_util.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <thread>

#include "base/bytes.h"
#include "base/checksum.h"
#include "drive/format.h"

namespace memkv::drive {

bool PollFor(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

std::vector<uint8_t> ReadRaw(const std::string& path, uint64_t offset, size_t size) {
  std::vector<uint8_t> out(size);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::pread(fd, out.data(), size, off_t(offset)) != ssize_t(size)) out.clear();
  if (fd >= 0) ::close(fd);
  return out;
}

void WriteRaw(const std::string& path, uint64_t offset, const std::vector<uint8_t>& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), off_t(offset));
  (void)n;
  ::fsync(fd);
  ::close(fd);
}

std::vector<uint8_t> Pattern(size_t size, uint64_t seed) {
  std::vector<uint8_t> v(size);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<uint8_t>(x >> 32);
  }
  return v;
}

std::pair<int, std::string> Shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, ""};
  std::array<char, 256> buf;
  while (fgets(buf.data(), int(buf.size()), p) != nullptr) out += buf.data();
  int rc = pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

void WriteVersionOneDrive(const std::string& path, uint64_t file_bytes, uint64_t block) {
  WriteRaw(path, 0, {});
  if (truncate(path.c_str(), 0) != 0 || truncate(path.c_str(), off_t(file_bytes)) != 0) return;
  const Uuid store = Uuid::Random();
  const Uuid drive = Uuid::Random();
  const uint64_t area = 1 << 20;
  const uint64_t data_offset = 3 << 20;
  const uint64_t slot = 4096 + block;
  std::vector<uint8_t> sb(4096, 0);
  std::memcpy(sb.data(), "MEMKVDRV", 8);
  StoreLe32(sb.data() + 8, 1);
  StoreLe32(sb.data() + 12, 4096);
  std::memcpy(sb.data() + 16, store.bytes.data(), 16);
  std::memcpy(sb.data() + 32, drive.bytes.data(), 16);
  StoreLe32(sb.data() + 48, 0);
  StoreLe32(sb.data() + 52, 1);
  StoreLe32(sb.data() + 56, 4096);
  StoreLe64(sb.data() + 64, block);
  StoreLe64(sb.data() + 72, slot);
  StoreLe64(sb.data() + 80, 1700000000000000000ull);
  StoreLe64(sb.data() + 88, file_bytes);
  StoreLe64(sb.data() + 96, 4096);
  StoreLe64(sb.data() + 104, area);
  StoreLe64(sb.data() + 112, data_offset);
  StoreLe64(sb.data() + 120, (file_bytes - data_offset) / slot);
  StoreLe64(sb.data() + 4088, Checksum(sb.data(), 4088));
  // Area 0: header (epoch 1), then one put record with one 8-byte extent ref.
  std::vector<uint8_t> a0(8192, 0);
  const uint64_t nonce = 0x1122334455667788ull;
  std::memcpy(a0.data(), "MKJA", 4);
  StoreLe32(a0.data() + 4, 1);
  StoreLe64(a0.data() + 8, 1);
  StoreLe64(a0.data() + 16, nonce);
  std::memcpy(a0.data() + 24, store.bytes.data(), 16);
  std::memcpy(a0.data() + 40, drive.bytes.data(), 16);
  StoreLe64(a0.data() + 56, 1);
  StoreLe64(a0.data() + 64, 1);
  StoreLe64(a0.data() + 4088, Checksum(a0.data(), 4088));
  const auto value = Pattern(100, 1);
  uint8_t* r = a0.data() + 4096;
  const uint32_t record_bytes = 56 + 8 + 8 + 8;  // head, key "old" padded, one extent, checksum
  std::memcpy(r, "MKJR", 4);
  r[4] = 1;
  StoreLe16(r + 6, 3);
  StoreLe32(r + 8, record_bytes);
  StoreLe32(r + 12, 1);
  StoreLe64(r + 16, nonce);
  StoreLe64(r + 24, 1);
  StoreLe64(r + 32, 1);
  StoreLe64(r + 40, value.size());
  StoreLe64(r + 48, Checksum(value.data(), value.size()));
  std::memcpy(r + 56, "old", 3);
  StoreLe64(r + 64, 0);  // drive 0, slot 0
  StoreLe64(r + record_bytes - 8, Checksum(r, record_bytes - 8));
  // Slot 0: the 4 KiB MKEX header, then the data.
  std::vector<uint8_t> extent(8192, 0);
  std::memcpy(extent.data(), "MKEX", 4);
  StoreLe16(extent.data() + 4, 1);
  StoreLe16(extent.data() + 6, 3);
  std::memcpy(extent.data() + 8, store.bytes.data(), 16);
  StoreLe64(extent.data() + 24, 1);
  StoreLe64(extent.data() + 32, value.size());
  StoreLe32(extent.data() + 40, 0);
  StoreLe32(extent.data() + 44, 1);
  StoreLe32(extent.data() + 48, uint32_t(value.size()));
  std::memcpy(extent.data() + 56, "old", 3);
  std::memcpy(extent.data() + 4096, value.data(), value.size());
  ChecksumStream sum;
  sum.Update(extent.data(), 4088);
  sum.Update(value.data(), value.size());
  StoreLe64(extent.data() + 4088, sum.Digest());
  WriteRaw(path, 0, sb);
  WriteRaw(path, 4096, a0);
  WriteRaw(path, data_offset, extent);
}

LoopDevice::LoopDevice(const std::string& image, uint64_t bytes, int sector_bytes) {
  WriteRaw(image, 0, {});
  if (truncate(image.c_str(), off_t(bytes)) != 0) {
    error_ = "cannot create " + image;
    return;
  }
  std::pair<int, std::string> r{1, ""};
  if (sector_bytes != 0) {
    r = Shell("losetup -f --show --direct-io=on --sector-size " + std::to_string(sector_bytes) + " " + image);
  }
  if (r.first != 0) r = Shell("losetup -f --show " + image);
  if (r.first != 0 || r.second.rfind("/dev/", 0) != 0) {
    error_ = "losetup failed (" + r.second + ")";
    return;
  }
  device_ = r.second;
}

LoopDevice::~LoopDevice() {
  if (!device_.empty()) Shell("losetup -d " + device_);
}

}  // namespace memkv::drive
