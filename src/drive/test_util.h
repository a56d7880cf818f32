// Helpers for the drive layer's tests: temporary directories, value patterns.
#ifndef MEMKV_DRIVE_TEST_UTIL_H_
#define MEMKV_DRIVE_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/temp_dir.h"

namespace memkv::drive {

// Scratch directories: /tmp is a real filesystem here, so O_DIRECT is
// exercised; TempDir("/dev/shm") for tests whose durability is simulated by
// the fault-injecting engine (fsync costs nothing there).
using testing::TempDir;

// Plain (buffered) access to a drive file, around O_DIRECT and the engines:
// what is on the disk, and damage done behind the store's back.
std::vector<uint8_t> ReadRaw(const std::string& path, uint64_t offset, size_t size);
// WriteRaw creates the file when missing.
void WriteRaw(const std::string& path, uint64_t offset, const std::vector<uint8_t>& bytes);

// Bytes that differ per position and per seed, so a value read back from the
// wrong extent, offset or version does not compare equal by accident.
std::vector<uint8_t> Pattern(size_t size, uint64_t seed);

// Polls `condition` every 2 ms until it holds (true) or 10 s pass (false).
bool PollFor(const std::function<bool()>& condition);

// A drive as format version 1 wrote it, byte by byte (docs/storage.md of
// that format), for tests of the version policy: a superblock of version 1
// (a slot of 4 KiB + block size at byte 72, the slot count at 120), journal
// area headers of version 1 with one put record of a 100-byte value ("old")
// in slot 0, and that slot's MKEX extent header and data. Creates or
// resizes the file to `file_bytes`.
void WriteVersionOneDrive(const std::string& path, uint64_t file_bytes, uint64_t block_bytes);

// Runs `cmd` through the shell: its exit code and its output (stderr
// included), trailing whitespace trimmed.
std::pair<int, std::string> Shell(const std::string& cmd);

// A loop device over a sparse image of `bytes`; detached on destruction.
// `sector_bytes` non-zero asks for direct I/O and that logical sector size
// (falling back to a plain device when losetup cannot). device() is empty
// when no device could be made, and error() says why.
class LoopDevice {
 public:
  LoopDevice(const std::string& image, uint64_t bytes, int sector_bytes = 0);
  ~LoopDevice();
  LoopDevice(const LoopDevice&) = delete;
  LoopDevice& operator=(const LoopDevice&) = delete;
  const std::string& device() const { return device_; }
  const std::string& error() const { return error_; }

 private:
  std::string device_;
  std::string error_;
};

// Skips the test (with the reason) when loop devices cannot be used here.
#define REQUIRE_LOOP(loop)                                                                                \
  if (::geteuid() != 0) GTEST_SKIP() << "loop devices need root; skipping the direct-mode test";          \
  if (::memkv::drive::Shell("command -v losetup").first != 0) GTEST_SKIP() << "losetup is not installed"; \
  if ((loop).device().empty()) GTEST_SKIP() << "no loop device: " << (loop).error()

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_TEST_UTIL_H_
