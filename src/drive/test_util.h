// Helpers for the drive layer's tests: temporary directories, value patterns.
#ifndef MEMKV_DRIVE_TEST_UTIL_H_
#define MEMKV_DRIVE_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

namespace memkv {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on
// destruction. /tmp is a real filesystem here, so O_DIRECT is exercised.
class TempDir {
 public:
  TempDir();
  // Under `base` instead, "" meaning the default (e.g. /dev/shm, where fsync costs nothing: for tests
  // whose durability is simulated by the fault-injecting engine).
  explicit TempDir(const std::string& base);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Plain (buffered) access to a drive file, around O_DIRECT and the engines:
// what is on the disk, and damage done behind the store's back.
std::vector<uint8_t> ReadRaw(const std::string& path, uint64_t offset, size_t size);
// WriteRaw creates the file when missing.
void WriteRaw(const std::string& path, uint64_t offset, const std::vector<uint8_t>& bytes);

// Bytes that differ per position and per seed, so a value read back from the
// wrong extent, offset or version does not compare equal by accident.
std::vector<uint8_t> Pattern(size_t size, uint64_t seed);

}  // namespace memkv

#endif  // MEMKV_DRIVE_TEST_UTIL_H_
