#include "drive/test_util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

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

}  // namespace memkv
