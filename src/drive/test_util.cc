#include "drive/test_util.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace memkv {

namespace {
std::string DefaultBase() {
  const char* base = std::getenv("TMPDIR");
  return base != nullptr && *base != '\0' ? base : "/tmp";
}
}  // namespace

TempDir::TempDir() : TempDir(DefaultBase()) {}

TempDir::TempDir(const std::string& base_or_empty) {
  const std::string base = base_or_empty.empty() ? DefaultBase() : base_or_empty;
  std::string tmpl = base + "/memkv-drive-XXXXXX";
  char* made = ::mkdtemp(tmpl.data());
  if (made == nullptr && base != DefaultBase()) {
    tmpl = DefaultBase() + "/memkv-drive-XXXXXX";
    made = ::mkdtemp(tmpl.data());
  }
  path_ = made != nullptr ? made : "";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
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

}  // namespace memkv
