#include "bench/scratch_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "base/units.h"
#include "bench/process.h"

namespace memkv::bench {
namespace {

constexpr uint64_t kChunkBytes = 4 * kMiB;
constexpr size_t kPageBytes = 4096;

std::string ErrnoText(const std::string& call) { return call + ": " + std::strerror(errno); }

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

// xorshift64*: cheap bytes that no disk compresses or detects as zeros.
void FillRandom(uint8_t* buf, size_t size, uint64_t seed) {
  uint64_t x = seed | 1;
  for (size_t i = 0; i + 8 <= size; i += 8) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const uint64_t v = x * 0x2545F4914F6CDD1DULL;
    std::memcpy(buf + i, &v, 8);
  }
}

std::string FilesystemName(int64_t type) {
  switch (static_cast<uint64_t>(type)) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x794C7630:
      return "overlayfs";
    case 0xF2F52010:
      return "f2fs";
    case 0x2FC12FC1:
      return "zfs";
    case 0x6969:
      return "nfs";
    case 0x65735546:
      return "fuse";
    default: {
      char text[32];
      std::snprintf(text, sizeof(text), "filesystem 0x%llx", static_cast<unsigned long long>(type));
      return text;
    }
  }
}

std::string ReadFirstLine(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

// "mq-deadline" out of "none [mq-deadline] kyber".
std::string ActiveScheduler(const std::string& line) {
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return line;
  return line.substr(open + 1, close - open - 1);
}

std::string DescribeBlockDevice(dev_t dev) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path sys = fs::canonical("/sys/dev/block/" + std::to_string(major(dev)) + ":" + std::to_string(minor(dev)), ec);
  if (ec) return "";
  std::string name = sys.filename().string();
  if (fs::exists(sys / "partition")) sys = sys.parent_path();  // the queue belongs to the whole disk
  std::string out = name;
  std::vector<std::string> parts;
  fs::path driver = fs::read_symlink(sys / "device" / "driver", ec);
  if (!ec) parts.push_back("driver " + driver.filename().string());
  if (std::string backing = ReadFirstLine(sys / "loop" / "backing_file"); !backing.empty()) {
    parts.push_back("backed by " + backing);
  }
  if (std::string rot = ReadFirstLine(sys / "queue" / "rotational"); !rot.empty()) {
    parts.push_back(rot == "0" ? "non-rotational" : "rotational");
  }
  if (std::string wc = ReadFirstLine(sys / "queue" / "write_cache"); !wc.empty()) {
    parts.push_back("write cache: " + wc);
  }
  if (std::string sched = ReadFirstLine(sys / "queue" / "scheduler"); !sched.empty()) {
    parts.push_back("scheduler: " + ActiveScheduler(sched));
  }
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? " (" : ", ") + parts[i];
  return parts.empty() ? out : out + ")";
}

// Writes [0, size) of `fd` in 4 MiB O_DIRECT chunks and syncs.
Status WriteWhole(int fd, const std::string& path, uint64_t size) {
  void* raw = nullptr;
  if (::posix_memalign(&raw, kPageBytes, kChunkBytes) != 0) return ResourceExhausted("posix_memalign(4 MiB)");
  std::unique_ptr<uint8_t, FreeDeleter> buf(static_cast<uint8_t*>(raw));
  for (uint64_t off = 0; off < size; off += kChunkBytes) {
    const size_t n = size_t(std::min(kChunkBytes, size - off));
    FillRandom(buf.get(), n, off + 1);
    ssize_t w = ::pwrite(fd, buf.get(), n, off_t(off));
    if (w < 0 && errno == EINTR) w = ::pwrite(fd, buf.get(), n, off_t(off));
    if (w != ssize_t(n)) {
      if (w >= 0) errno = EIO;
      return IoError(ErrnoText("pwrite(" + path + ", " + std::to_string(n) + " bytes at " + std::to_string(off) + ")"));
    }
  }
  if (::fdatasync(fd) != 0) return IoError(ErrnoText("fdatasync(" + path + ")"));
  return Status::Ok();
}

}  // namespace

Result<ScratchFile> ScratchFile::Create(const std::string& parent, const std::string& name, uint64_t size_bytes) {
  if (size_bytes % kPageBytes != 0) return InvalidArgument("scratch file size must be a multiple of 4 KiB");
  MEMKV_ASSIGN_OR_RETURN(std::string dir, MakeTempDir(parent, "memkv-drive-bench-"));
  ScratchFile f;
  f.dir_ = dir;
  f.path_ = dir + "/" + name;
  f.size_bytes_ = size_bytes;
  UniqueFd fd(::open(f.path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    if (errno == EINVAL) {
      struct statfs sfs {};
      ::statfs(dir.c_str(), &sfs);
      return FailedPrecondition("open(" + f.path_ + ", O_DIRECT): EINVAL: the " + FilesystemName(sfs.f_type) +
                                " under " + parent +
                                " does not support O_DIRECT; pass --dir on a filesystem that does (ext4, xfs) "
                                "or on a loop device formatted with one");
    }
    return IoError(ErrnoText("open(" + f.path_ + ", O_CREAT | O_DIRECT)"));
  }
  const auto start = std::chrono::steady_clock::now();
  MEMKV_RETURN_IF_ERROR(WriteWhole(fd.get(), f.path_, size_bytes));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  f.write_mib_per_s_ = seconds > 0 ? double(size_bytes) / double(kMiB) / seconds : 0;
  return f;
}

ScratchFile::ScratchFile(ScratchFile&& other) noexcept
    : dir_(std::exchange(other.dir_, "")),
      path_(std::exchange(other.path_, "")),
      size_bytes_(other.size_bytes_),
      write_mib_per_s_(other.write_mib_per_s_) {}

ScratchFile::~ScratchFile() {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  if (ec) std::fprintf(stderr, "memkv-drive-bench: removing %s: %s\n", dir_.c_str(), ec.message().c_str());
}

std::string DescribeStorage(const std::string& path) {
  struct statfs sfs {};
  struct stat st {};
  if (::statfs(path.c_str(), &sfs) != 0 || ::stat(path.c_str(), &st) != 0) return "unknown";
  std::string out = FilesystemName(sfs.f_type);
  if (std::string dev = DescribeBlockDevice(st.st_dev); !dev.empty()) out += " on " + dev;
  return out;
}

}  // namespace memkv::bench
