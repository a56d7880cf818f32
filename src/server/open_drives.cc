// Storage modes file and direct: open the drives (creating and
// formatting missing drive files in file mode), or say exactly why not.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include "base/errno_text.h"
#include "base/log.h"
#include "base/units.h"
#include "server/open_drives.h"

namespace memkv::server {
namespace {

// What is at a drive file's path before the first start.
enum class FileState { kMissing, kEmpty, kPresent };

Result<FileState> Examine(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return FileState::kMissing;
    return IoError("storage.drives: cannot stat " + path + ": " + ErrnoText(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument("storage.drives: " + path +
                           " is not a regular file; storage.mode file keeps drives in files (block devices are "
                           "storage.mode direct)");
  }
  return st.st_size == 0 ? FileState::kEmpty : FileState::kPresent;
}

std::string Parent(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The nearest directory at or above `dir` that exists: where the free space
// of a directory still to be made is read.
std::string ExistingAncestor(std::string dir) {
  struct stat st{};
  while (::stat(dir.c_str(), &st) != 0 && dir != "/" && dir != ".") dir = Parent(dir);
  return dir;
}

// The size a new drive file gets: its configured size, else the default
// capped at half the free space of its filesystem, in whole blocks.
Result<uint64_t> NewFileSize(const config::DriveConfig& drive, uint64_t block_bytes) {
  if (drive.size_bytes != 0) return drive.size_bytes;
  struct statvfs vfs{};
  const std::string dir = ExistingAncestor(Parent(drive.media));
  if (::statvfs(dir.c_str(), &vfs) != 0) {
    return IoError("storage.drives: cannot read the free space of " + dir + ": " + ErrnoText(errno));
  }
  const uint64_t free_bytes = uint64_t(vfs.f_bavail) * vfs.f_frsize;
  uint64_t size = std::min(config::kDefaultDriveFileBytes, free_bytes / 2);
  size -= size % block_bytes;
  constexpr uint64_t kMinimum = 64 * kMiB;
  if (size < kMinimum) {
    return ResourceExhausted("storage.drives: " + dir + " has " + FormatSize(free_bytes) +
                             " free; a drive file needs at least " + FormatSize(kMinimum) +
                             " and MemKV takes at most half the free space by itself; free some space or set "
                             "storage.drives[].size");
  }
  return size;
}

Result<std::vector<FileState>> ExamineAll(const config::StorageConfig& storage) {
  std::vector<FileState> states;
  for (const config::DriveConfig& d : storage.drives) {
    MEMKV_ASSIGN_OR_RETURN(FileState state, Examine(d.media));
    states.push_back(state);
  }
  return states;
}

size_t CountFresh(const std::vector<FileState>& states) {
  return std::count_if(states.begin(), states.end(), [](FileState s) { return s != FileState::kPresent; });
}

// A first start's drive file directory: it exists and is writable, or its
// parent does (start makes one level, mode 0700).
Status CheckNewFileDirectory(const std::string& media) {
  const std::string dir = Parent(media);
  struct stat st{};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return InvalidArgument("storage.drives: " + dir + " (for " + media + ") is not a directory");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      return IoError("storage.drives: cannot create " + media + " in " + dir + ": " + ErrnoText(errno));
    }
    return Status::Ok();
  }
  const std::string parent = Parent(dir);
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return IoError("storage.drives: cannot create the directory " + dir + " for " + media + ": " + parent +
                   " does not exist (start makes one directory level, not a path)");
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    return IoError("storage.drives: cannot create the directory " + dir + ": " + ErrnoText(errno));
  }
  return Status::Ok();
}

Status CheckFileDrives(const config::StorageConfig& storage) {
  MEMKV_ASSIGN_OR_RETURN(std::vector<FileState> states, ExamineAll(storage));
  const size_t fresh = CountFresh(states);
  if (fresh == 0) return Status::Ok();
  if (fresh != states.size()) {
    // A lost drive of an existing store: it opens degraded without it (its
    // values are misses), rather than refusing to serve the others.
    for (size_t i = 0; i < states.size(); ++i) {
      if (states[i] != FileState::kPresent) {
        LOG_WARN_C("start") << "drive file " << storage.drives[i].media
                 << " is missing or empty while the store's other drive files exist; it is not recreated "
                    "(a drive cannot join a store in place), so the store opens degraded without it";
      }
    }
    return Status::Ok();
  }
  // A first start: the files must fit where they go, all of them together
  // on a filesystem they share, before any is made.
  std::map<unsigned long, std::pair<uint64_t, uint64_t>> wanted_and_free;  // by filesystem id
  for (const config::DriveConfig& d : storage.drives) {
    MEMKV_RETURN_IF_ERROR(CheckNewFileDirectory(d.media));
    MEMKV_ASSIGN_OR_RETURN(uint64_t size, NewFileSize(d, storage.block_size_bytes));
    const std::string dir = ExistingAncestor(Parent(d.media));
    struct statvfs vfs{};
    if (::statvfs(dir.c_str(), &vfs) != 0) {
      return IoError("storage.drives: cannot read the free space of " + dir + ": " + ErrnoText(errno));
    }
    auto& [wanted, free_bytes] = wanted_and_free[vfs.f_fsid];
    wanted += size;
    free_bytes = uint64_t(vfs.f_bavail) * vfs.f_frsize;
    if (wanted > free_bytes) {
      return ResourceExhausted("storage.drives: " + d.media + " needs " + FormatSize(size) + " but " + dir +
                               " has " + FormatSize(free_bytes) + " free" +
                               (wanted > size ? " for this and the other drive files there (" +
                                                    FormatSize(wanted) + " in all)"
                                              : "") +
                               "; free some space or set a smaller storage.drives[].size");
    }
  }
  return Status::Ok();
}

// Direct mode: every drive that exists must be a block device this process
// can read and write; a missing one leaves the store degraded, all missing
// leaves nothing to serve from.
Status CheckBlockDevices(const config::StorageConfig& storage) {
  size_t missing = 0;
  for (size_t i = 0; i < storage.drives.size(); ++i) {
    const std::string& path = storage.drives[i].media;
    const std::string where = "storage.drives[" + std::to_string(i) + "]: ";
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno != ENOENT) return IoError(where + "cannot stat " + path + ": " + ErrnoText(errno));
      ++missing;
      LOG_WARN_C("start") << where << path << " does not exist; the store opens degraded without it";
      continue;
    }
    if (!S_ISBLK(st.st_mode)) {
      return InvalidArgument(where + path +
                             " is not a block device; storage.mode direct takes whole devices (e.g. /dev/nvme1n1). "
                             "For drive files set storage.mode: file");
    }
    if (::access(path.c_str(), R_OK | W_OK) != 0) {
      return IoError(where + "cannot open " + path + " for reading and writing: " + ErrnoText(errno) +
                     " (the service needs group disk: docs/packaging.md)");
    }
  }
  if (!storage.drives.empty() && missing == storage.drives.size()) {
    return NotFound("storage.drives: none of the " + std::to_string(missing) +
                    " drive(s) exists (first: " + storage.drives[0].media +
                    "); storage.mode direct serves from block devices formatted by 'memkv setup'");
  }
  return Status::Ok();
}

// File mode: formats the drive files when none of them exists yet (the first
// start). Files missing from an existing store are left missing (degraded).
Status CreateMissingDriveFiles(const config::StorageConfig& storage,
                               const std::optional<drive::MasterKey>& master_key) {
  MEMKV_ASSIGN_OR_RETURN(std::vector<FileState> states, ExamineAll(storage));
  if (CountFresh(states) != states.size()) return Status::Ok();
  uint64_t size = UINT64_MAX;
  for (const config::DriveConfig& d : storage.drives) {
    const std::string dir = Parent(d.media);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return IoError("storage.drives: cannot create the directory " + dir + ": " + ErrnoText(errno));
    }
    MEMKV_ASSIGN_OR_RETURN(uint64_t want, NewFileSize(d, storage.block_size_bytes));
    size = std::min(size, want);
  }
  drive::DriveFormatOptions format;
  for (const config::DriveConfig& d : storage.drives) format.drives.push_back(d.media);
  format.block_size_bytes = storage.block_size_bytes;
  format.file_size_bytes = size;
  format.master_key = master_key;
  LOG_INFO_C("start") << "creating " << storage.drives.size() << " drive file(s) of " << FormatSize(size) << " ("
           << storage.drives[0].media << (storage.drives.size() > 1 ? ", ..." : "") << ")";
  Status formatted = drive::ExtentStore::Format(format);
  if (!formatted.ok()) {
    // None of them held a store: whatever this start made of them (a
    // fallocated file without a superblock) goes, or is emptied again if it
    // was an empty file before, so the next start, once the cause is fixed,
    // creates them afresh instead of refusing them.
    for (size_t i = 0; i < storage.drives.size(); ++i) {
      const char* path = storage.drives[i].media.c_str();
      if (states[i] == FileState::kMissing) ::unlink(path);
      if (states[i] == FileState::kEmpty) (void)::truncate(path, 0);
    }
    return formatted.WithContext("creating the drive files (removed again)");
  }
  return Status::Ok();
}

}  // namespace

// storage.encryption: the master key from storage.encryption_key_file.
Result<std::optional<drive::MasterKey>> MasterKeyOf(const config::StorageConfig& storage) {
  if (storage.encryption == config::StorageEncryption::kOff) return std::optional<drive::MasterKey>();
  MEMKV_ASSIGN_OR_RETURN(drive::MasterKey key, drive::ReadMasterKeyFile(storage.encryption_key_file));
  return std::optional<drive::MasterKey>(key);
}

Status CheckDrivesBeforeOpen(const config::StorageConfig& storage) {
  if (storage.mode != config::StorageMode::kMemory) MEMKV_RETURN_IF_ERROR(MasterKeyOf(storage).status());
  if (storage.mode == config::StorageMode::kFile) return CheckFileDrives(storage);
  if (storage.mode == config::StorageMode::kDirect) return CheckBlockDevices(storage);
  return Status::Ok();
}

Result<std::unique_ptr<drive::ExtentStore>> OpenDrives(const config::StorageConfig& storage) {
  MEMKV_RETURN_IF_ERROR(CheckDrivesBeforeOpen(storage));
  MEMKV_ASSIGN_OR_RETURN(std::optional<drive::MasterKey> master_key, MasterKeyOf(storage));
  if (storage.mode == config::StorageMode::kFile) MEMKV_RETURN_IF_ERROR(CreateMissingDriveFiles(storage, master_key));
  drive::ExtentStoreOptions options;
  options.master_key = master_key;
  for (const config::DriveConfig& d : storage.drives) options.drives.push_back(d.media);
  options.sync = storage.sync == config::StorageSync::kAlways ? drive::SyncMode::kAlways : drive::SyncMode::kInterval;
  options.sync_interval_ms = storage.sync_interval_ms;
  Result<std::unique_ptr<drive::ExtentStore>> store = drive::ExtentStore::Open(options);
  if (!store.ok()) return store.status();
  const drive::ExtentStoreStats stats = (*store)->Stats();
  if (stats.block_size_bytes != storage.block_size_bytes) {
    LOG_WARN_C("start") << "storage.block_size is " << FormatSize(storage.block_size_bytes) << " but the drives were formatted with "
             << FormatSize(stats.block_size_bytes) << "; the drives' size is used (reformat to change it)";
  }
  uint64_t usable = 0, used = 0;
  for (const drive::DriveStats& d : stats.drives) {
    usable += d.usable_bytes;
    used += d.used_bytes;
  }
  LOG_INFO_C("start") << "drive tier: " << stats.drives.size() << " drive(s) via " << stats.io_engine << ", "
                      << FormatSize(stats.block_size_bytes) << " extents, " << stats.keys << " value(s) re-adopted in "
                      << stats.open_nanos / 1'000'000 << " ms, " << FormatSize(used) << " of " << FormatSize(usable)
                      << " used; "
                      << "storage.sync " << drive::SyncModeName(stats.sync)
                      << (stats.sync == drive::SyncMode::kInterval
                              ? " (a put survives kill -9 at once, a power cut once flushed, every " +
                                    std::to_string(storage.sync_interval_ms) + " ms)"
                              : std::string(" (a put survives a power cut once acknowledged)") +
                                    (storage.flush_on_loop_us != 0
                                         ? "; the workers flush their turns' puts while flushes take at most " +
                                               std::to_string(storage.flush_on_loop_us) +
                                               " us (storage.flush_on_loop_us)"
                                         : std::string()));
  for (const drive::DriveStats& d : stats.drives) {
    if (d.state != drive::DriveState::kOnline) {
      LOG_WARN_C("start") << "drive " << d.index << " (" << (d.path.empty() ? "not given" : d.path) << ") is "
                          << drive::DriveStateName(d.state) << ": " << d.reason << "; serving degraded";
    }
  }
  return store;
}

}  // namespace memkv::server
