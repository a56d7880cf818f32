// memkv setup: prepares this host's drives for MemKV and prints the config
// that serves from them (docs/cli.md, "memkv setup").
//
// Order matters: everything that can refuse (flags, drive kinds, RDMA
// device, what the drives hold) is decided before the first byte is
// written, so a refused setup leaves every drive as it was. Then foreign
// signatures are wiped (--force only), ExtentStore::Format writes the
// superblocks and journals, and the new store is opened once to prove it
// works. The config goes to stdout and depends only on the store and this
// host, so an --idempotent re-run prints it byte for byte again.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/bytes.h"
#include "base/errno_text.h"
#include "base/log.h"
#include "base/units.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "config/host_port.h"
#include "config/server_config.h"
#include "drive/aligned_buffer.h"
#include "drive/drive_file.h"
#include "drive/extent_store.h"
#include "drive/format.h"
#include "storage/hugepages.h"
#include "verbs/verbs.h"

namespace memkv::cli {
namespace {

constexpr const char* kSetupUsage = R"(Usage: memkv setup --drives PATH... [options]

Initialises drives for MemKV and prints a working config.yaml on standard
output (progress and logs on standard error):

  memkv setup --drives /dev/nvme0n1 /dev/nvme1n1 > /etc/memkv/config.yaml

Drives are all block devices (storage.mode direct) or all regular files
(storage.mode file). A drive that holds MemKV data, a filesystem, a partition
table, LVM, RAID or swap is refused, naming what was found, unless --force.

Options:
  --drives PATH...     the drives, in order (at least one)
  --address HOST:PORT  network.address (default 127.0.0.1:9900, this host
                       only; 0.0.0.0:9900 or the storage network's address
                       serves other hosts)
  --rdma DEV           RDMA device for rdma.device (default: the first device
                       with an active port; none found: the config is TCP only)
  --block-size SIZE    storage.block_size, the longest on-drive extent (values
                       are packed in 4 KiB units whatever it is): a power of
                       two from 4 KiB to 1 GiB (default 4 MiB)
  --file-size SIZE     file drives: create missing files, and make every file
                       exactly this size (default: existing files keep theirs)
  --journal-size SIZE  each of a drive's two journal areas, 1 MiB to 1 GiB
                       (default: 192 bytes per 4 KiB of the store's drives,
                       enough for one drive full of 4 KiB values; both areas
                       at most 1/8 of the smallest drive). Every
                       drive's journal holds a record (about 100 to 150
                       bytes) per value of the store: with large values a
                       smaller journal gives drive space back
                       (docs/storage.md, "Journal capacity")
  --encryption-key-file PATH
                       format the drives encrypted (storage.encryption:
                       aes-256-gcm) under the master key in PATH: 32 raw
                       bytes or 64 hex characters (docs/storage.md,
                       "Encryption at rest")
  --force              erase whatever the drives hold (MemKV data, filesystems)
  --idempotent         drives that already form one MemKV store with these
                       settings are left alone; the config is printed again

Exit codes: 0 config printed, 2 usage error, 3 the drives or options cannot
be used as given, 4 a drive is in use (mounted, or a server runs on it),
6 refused (a drive holds data; see --force) or formatting failed.
)";

constexpr uint64_t kDefaultBlockBytes = 4 * kMiB;
// Loopback unless the operator names an address (docs/configuration.md).
constexpr const char* kLoopbackAddress = "127.0.0.1:9900";
// Signatures sit in the first 68 KiB (btrfs at 64 KiB + 64 is the deepest).
constexpr uint64_t kHeadBytes = 68 * kKiB;
// --force wipes this much of a drive that holds a foreign signature.
constexpr uint64_t kWipeBytes = 1 * kMiB;

struct SetupFlags {
  std::vector<std::string> drives;
  std::string address = kLoopbackAddress;  // network.address of the config printed
  std::string rdma_device;
  uint64_t block_size_bytes = kDefaultBlockBytes;
  uint64_t file_size_bytes = 0;
  uint64_t journal_area_bytes = 0;  // 0: ExtentStore::Format's default
  std::string encryption_key_file;  // set: format encrypted
  bool force = false;
  bool idempotent = false;
};

Result<uint64_t> ParseSizeFlag(const std::string& flag, const std::string& text) {
  Result<uint64_t> n = ParseSize(text);
  if (!n.ok()) return InvalidArgument(flag + " " + text + ": " + n.status().message());
  return n;
}

std::optional<int> ParseSetupFlags(const std::vector<std::string>& raw_args, SetupFlags* flags) {
  auto usage = [](const std::string& what) {
    std::fprintf(stderr, "memkv setup: %s; see 'memkv setup --help'\n", what.c_str());
    return kExitUsage;
  };
  Result<std::vector<std::string>> expanded = ExpandOptions(raw_args, kSetupOptions);
  if (!expanded.ok()) return usage(expanded.status().message());
  const std::vector<std::string>& args = *expanded;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == kEndOfOptions) {  // drives named after "--" may begin with '-'
      flags->drives.insert(flags->drives.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (IsHelp(a)) {
      std::fputs(kSetupUsage, stdout);
      return kExitOk;
    }
    if (a == "--force") {
      flags->force = true;
    } else if (a == "--idempotent") {
      flags->idempotent = true;
    } else if (a == "--drives") {
      // ExpandOptions: at least one path follows (the first may be "--drives=-x").
      flags->drives.push_back(args[++i]);
      while (i + 1 < args.size() && !LooksLikeOption(args[i + 1])) flags->drives.push_back(args[++i]);
    } else if (a == "--encryption-key-file") {
      flags->encryption_key_file = args[++i];
    } else if (a == "--address") {
      const std::string& v = args[++i];
      Result<config::internal::HostPort> split = config::internal::SplitHostPort(v);
      if (!split.ok()) return usage("--address '" + v + "': " + split.status().message());
      if (split->port > 65534) return usage("--address '" + v + "': allowed ports: 0..65534 (port+1 is the admin port)");
      flags->address = v;
    } else if (a == "--rdma" || a == "--block-size" || a == "--file-size" || a == "--journal-size") {
      const std::string& v = args[++i];
      if (a == "--rdma") {
        flags->rdma_device = v;
        continue;
      }
      Result<uint64_t> n = ParseSizeFlag(a, v);
      if (!n.ok()) return usage(n.status().message());
      if (a == "--block-size") {
        if (!std::has_single_bit(*n) || *n < 4 * kKiB || *n > kGiB) {
          return usage("--block-size " + v + ": allowed: a power of two from 4 KiB to 1 GiB");
        }
        flags->block_size_bytes = *n;
      } else if (a == "--journal-size") {
        if (*n < kMiB || *n > kGiB || *n % (4 * kKiB) != 0) {
          return usage("--journal-size " + v + ": allowed: a multiple of 4 KiB from 1 MiB to 1 GiB");
        }
        flags->journal_area_bytes = *n;
      } else {
        if (*n == 0 || *n % (4 * kKiB) != 0) return usage("--file-size " + v + ": allowed: a multiple of 4 KiB");
        flags->file_size_bytes = *n;
      }
    } else {
      return usage("unknown option '" + a + "'");
    }
  }
  if (flags->drives.empty()) return usage("--drives needs at least one path");
  return std::nullopt;
}

// A setup failure: the exit code and the one line that says what to do.
struct Failure {
  int code;
  std::string message;
};

int Fail(const Failure& f) {
  std::fprintf(stderr, "memkv setup: %s\n", f.message.c_str());
  return f.code;
}

// ------------------------------------------------------------ what drives hold

enum class Holds { kNothing, kMemkv, kMemkvUnusable, kForeign };

struct DriveCheck {
  std::string path;        // as given
  std::string config_path; // absolute, symlinks kept (/dev/disk/by-id/... stays stable)
  bool exists = false;
  bool block_device = false;
  Holds holds = Holds::kNothing;
  drive::Superblock sb;    // kMemkv
  std::string what;        // kMemkvUnusable, kForeign: what was found
};

// The filesystem, partition table or volume signature in the first bytes of
// a drive, or "" when none of the common ones is there.
std::string ForeignSignature(std::span<const uint8_t> head) {
  auto at = [&](size_t offset, std::string_view magic) {
    return head.size() >= offset + magic.size() && std::memcmp(head.data() + offset, magic.data(), magic.size()) == 0;
  };
  // ext2/3/4: s_magic 0xEF53 at 1024 + 56, and a sane s_log_block_size.
  if (head.size() >= 2048 && LoadLe16(head.data() + 1080) == 0xEF53 && LoadLe32(head.data() + 1048) <= 6) {
    return "an ext2/3/4 filesystem";
  }
  if (at(0, "XFSB")) return "an XFS filesystem";
  if (at(65600, "_BHRfS_M")) return "a btrfs filesystem";
  if (at(512, "EFI PART") || at(4096, "EFI PART")) return "a GPT partition table";
  if (at(512, "LABELONE")) return "an LVM physical volume";
  if (at(4086, "SWAPSPACE2") || at(4086, "SWAP-SPACE")) return "a swap area";
  for (size_t off : {size_t(0), size_t(4096)}) {
    if (head.size() >= off + 4 && LoadLe32(head.data() + off) == 0xa92b4efc) return "a Linux RAID (md) member";
  }
  if (head.size() >= 512 && head[510] == 0x55 && head[511] == 0xAA) {
    for (int p = 0; p < 4; ++p) {
      if (head[446 + 16 * p + 4] != 0) return "an MBR partition table";
    }
  }
  return "";
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

// What kind of drive `path` is and what it holds. Reads only; the drive is
// open (and flock'ed) for the duration of this call.
Result<DriveCheck> ExamineDrive(const std::string& path, const SetupFlags& flags) {
  DriveCheck c;
  c.path = path;
  c.config_path = AbsolutePath(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return IoError("stat " + path + ": " + ErrnoName(errno));
    if (flags.file_size_bytes == 0) {
      return InvalidArgument(path + " does not exist; pass --file-size SIZE to create it as a file drive");
    }
    std::string dir = std::filesystem::path(c.config_path).parent_path().string();
    struct stat dst {};
    if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
      return InvalidArgument(path + " cannot be created: directory " + dir + " does not exist");
    }
    return c;
  }
  c.exists = true;
  c.block_device = S_ISBLK(st.st_mode);
  if (!c.block_device && !S_ISREG(st.st_mode)) {
    return InvalidArgument(path + " is neither a block device nor a regular file");
  }
  if (!c.block_device && st.st_size == 0 && flags.file_size_bytes == 0) {
    return InvalidArgument(path + " is an empty file; pass --file-size SIZE to size it");
  }
  MEMKV_ASSIGN_OR_RETURN(drive::DriveFile f, drive::DriveFile::Open(path, {.writable = false}));
  const uint64_t len = std::min(kHeadBytes, f.size_bytes() / drive::kDriveHeaderBytes * drive::kDriveHeaderBytes);
  if (len == 0) return c;
  MEMKV_ASSIGN_OR_RETURN(drive::AlignedBuffer head, drive::AlignedBuffer::Allocate(len));
  MEMKV_RETURN_IF_ERROR(f.ReadAt(0, head.span()));
  Result<drive::Superblock> sb =
      drive::DecodeSuperblock(std::span<const uint8_t>(head.data(), drive::kDriveHeaderBytes), path);
  if (sb.ok()) {
    c.holds = Holds::kMemkv;
    c.sb = *sb;
  } else if (sb.status().code() != StatusCode::kNotFound) {
    c.holds = Holds::kMemkvUnusable;
    c.what = sb.status().message();
  } else if (std::string sig = ForeignSignature(head.span()); !sig.empty()) {
    c.holds = Holds::kForeign;
    c.what = sig;
  }
  return c;
}

// "holds an ext2/3/4 filesystem", "holds MemKV data (store ..., drive 0 of 2, ...)".
std::string Holding(const DriveCheck& c) {
  switch (c.holds) {
    case Holds::kMemkv:
      return "holds MemKV data (store " + c.sb.store_uuid.ToString() + ", drive " + std::to_string(c.sb.drive_index) +
             " of " + std::to_string(c.sb.drive_count) + ", block size " + FormatSize(c.sb.extent_bytes) + ")";
    case Holds::kMemkvUnusable: return "holds a MemKV superblock this memkv cannot use (" + c.what + ")";
    case Holds::kForeign: return "holds " + c.what;
    case Holds::kNothing: break;
  }
  return "holds nothing MemKV recognises";
}

// Ok when the drives already form one complete store with these settings
// (what --idempotent keeps); otherwise why not.
Status SameStore(const std::vector<DriveCheck>& checks, const SetupFlags& flags) {
  const DriveCheck& first = checks[0];
  if (first.holds != Holds::kMemkv) return FailedPrecondition(first.path + " is not formatted for MemKV");
  std::set<uint32_t> indexes;
  for (const DriveCheck& c : checks) {
    if (c.holds != Holds::kMemkv) return FailedPrecondition(c.path + " is not formatted for MemKV");
    if (c.sb.store_uuid != first.sb.store_uuid) {
      return FailedPrecondition(c.path + " and " + first.path + " belong to different stores");
    }
    if (c.sb.extent_bytes != flags.block_size_bytes) {
      return FailedPrecondition(c.path + " has block size " + FormatSize(c.sb.extent_bytes) + ", not the " +
                                FormatSize(flags.block_size_bytes) + " asked for (--block-size)");
    }
    if (flags.journal_area_bytes != 0 && c.sb.journal_area_bytes != flags.journal_area_bytes) {
      return FailedPrecondition(c.path + " has journal areas of " + FormatSize(c.sb.journal_area_bytes) + ", not the " +
                                FormatSize(flags.journal_area_bytes) + " asked for (--journal-size)");
    }
    if (flags.file_size_bytes != 0 && !c.block_device && c.sb.device_bytes != flags.file_size_bytes) {
      return FailedPrecondition(c.path + " was formatted at " + FormatSize(c.sb.device_bytes) + ", not the " +
                                FormatSize(flags.file_size_bytes) + " asked for (--file-size)");
    }
    indexes.insert(c.sb.drive_index);
  }
  if (first.sb.drive_count != checks.size() || indexes.size() != checks.size()) {
    return FailedPrecondition("store " + first.sb.store_uuid.ToString() + " has " +
                              std::to_string(first.sb.drive_count) + " drives, and " +
                              std::to_string(checks.size()) + " were given with " + std::to_string(indexes.size()) +
                              " distinct drive numbers");
  }
  return Status::Ok();
}

// Zeroes the head of a drive so that no tool (blkid, udev, mount) still
// takes it for what it held before --force.
Status WipeHead(const DriveCheck& c) {
  MEMKV_ASSIGN_OR_RETURN(drive::DriveFile f, drive::DriveFile::Open(c.path));
  const uint64_t len = std::min(kWipeBytes, f.size_bytes() / drive::kDriveHeaderBytes * drive::kDriveHeaderBytes);
  MEMKV_ASSIGN_OR_RETURN(drive::AlignedBuffer zeros, drive::AlignedBuffer::Allocate(len));
  MEMKV_RETURN_IF_ERROR(f.WriteAt(0, zeros.span()));
  return f.Sync();
}

// ------------------------------------------------------------------- RDMA

struct RdmaChoice {
  std::string device;  // empty: TCP only
  uint32_t mtu = 0;    // the port's active MTU when known (rdma.mtu must not exceed it)
};

Result<RdmaChoice> ChooseRdma(const std::string& wanted, verbs::Provider& provider) {
  Result<std::vector<std::string>> devices = provider.Devices();
  if (!devices.ok()) {
    LOG_WARN << "setup: cannot list RDMA devices (" << devices.status().message() << "); the config is TCP only";
    devices = std::vector<std::string>{};
  }
  std::string present;
  for (const std::string& d : *devices) present += (present.empty() ? "" : ", ") + d;
  LOG_INFO << "setup: RDMA devices on this host: " << (present.empty() ? "none" : present);
  RdmaChoice choice;
  if (!wanted.empty() && std::find(devices->begin(), devices->end(), wanted) == devices->end()) {
    return NotFound("--rdma " + wanted + ": no such RDMA device on this host (present: " +
                    (present.empty() ? "none" : present) + "); check 'rdma link' or leave --rdma out for TCP only");
  }
  for (const std::string& d : *devices) {
    if (!wanted.empty() && d != wanted) continue;
    Result<std::unique_ptr<verbs::Context>> ctx = provider.Open(d, 1);
    if (!ctx.ok()) {
      LOG_WARN << "setup: cannot open " << d << ": " << ctx.status().message();
      if (!wanted.empty()) choice.device = d;
      continue;
    }
    const verbs::PortInfo& port = (*ctx)->port();
    if (!port.active && wanted.empty()) {
      LOG_INFO << "setup: " << d << " port 1 is " << port.state << "; not chosen";
      continue;
    }
    if (!port.active) LOG_WARN << "setup: " << d << " port 1 is " << port.state << "; clients fall back to TCP until it is up";
    choice.device = d;
    if (port.active) choice.mtu = std::min<uint32_t>(4096, port.active_mtu);
    break;
  }
  if (choice.device.empty() && wanted.empty() && !devices->empty()) {
    LOG_WARN << "setup: no RDMA device has an active port; the config is TCP only (pass --rdma DEV to name one)";
  }
  return choice;
}

// ----------------------------------------------------------------- config

uint64_t PhysicalMemoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page_size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : 0;
}

std::string YamlQuoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

struct ConfigInputs {
  std::string encryption_key_file;  // set: the drives are encrypted
  std::string address;
  bool direct = false;
  uint64_t block_size_bytes = 0;
  std::vector<std::string> drives;
  std::string store_uuid;
  uint64_t usable_bytes = 0;
  RdmaChoice rdma;
  uint64_t memory_bytes = 0;
};

std::string RenderConfig(const ConfigInputs& in) {
  const bool pinned = in.direct || !in.rdma.device.empty();
  std::string y = "# MemKV server config written by 'memkv setup' (docs/configuration.md).\n";
  y += "# Store " + in.store_uuid + ": " + std::to_string(in.drives.size()) + " drive(s), " +
       FormatSize(in.usable_bytes) + " usable in 4 KiB units, extents of up to " + FormatSize(in.block_size_bytes) +
       ".\n";
  y += "network:\n  address: " + in.address + "\n";
  if (in.address == kLoopbackAddress) {
    y += "  # loopback only: for clients on other hosts, run setup with --address (e.g. 0.0.0.0:9900 or\n"
         "  # the storage network's address), or edit the line above.\n";
  }
  y += "  # auth_key unset: 'memkv start' generates one in ~/.memkv/auth.key (mode 0600) on first start.\n";
  y += "memory:\n  block_size: 2 MiB\n";
  y += "  max_size: " + FormatSize(in.memory_bytes) + "  # one eighth of this host's RAM\n";
  if (pinned) {
    const uint64_t pages = storage::HugePagesFor(in.memory_bytes);
    y += "  # pinned (" + std::string(in.rdma.device.empty() ? "direct I/O" : "RDMA") + "): 'memkv start' needs " +
         std::to_string(pages) + " free 2 MiB hugepages (sysctl -w vm.nr_hugepages=" + std::to_string(pages) + ")\n";
  }
  if (in.rdma.device.empty()) {
    y += "# rdma: no RDMA device found on this host; clients use TCP.\n";
  } else {
    y += "rdma:\n  device: " + in.rdma.device + "\n";
    if (in.rdma.mtu != 0) y += "  mtu: " + std::to_string(in.rdma.mtu) + "  # the port's active MTU, at most 4096\n";
  }
  y += "storage:\n  mode: " + std::string(in.direct ? "direct" : "file") + "\n";
  y += "  # interval: a put is acknowledged once on the drive and survives kill -9; a power cut loses\n"
       "  # at most the last sync_interval_ms of puts. always: every put waits for the drive's flush.\n"
       "  sync: interval\n  sync_interval_ms: 1000\n";
  y += "  block_size: " + FormatSize(in.block_size_bytes) + "\n  drives:\n";
  for (const std::string& d : in.drives) y += "    - media: " + YamlQuoted(d) + "\n";
  if (!in.encryption_key_file.empty()) {
    y += "  encryption: aes-256-gcm\n  encryption_key_file: " + YamlQuoted(in.encryption_key_file) + "\n";
  }
  return y;
}

// ----------------------------------------------------------------- steps

Result<std::vector<DriveCheck>> ExamineAll(const SetupFlags& flags, Failure* failure) {
  std::vector<DriveCheck> checks;
  std::vector<std::pair<dev_t, ino_t>> seen;
  for (const std::string& path : flags.drives) {
    Result<DriveCheck> c = ExamineDrive(path, flags);
    if (!c.ok()) {
      const StatusCode code = c.status().code();
      *failure = {code == StatusCode::kFailedPrecondition ? int(kExitUnavailable)
                  : code == StatusCode::kIoError          ? int(kExitFailed)
                                                          : int(kExitConfig),
                  c.status().message() +
                      (code == StatusCode::kFailedPrecondition ? "; stop the server or unmount it first" : "")};
      return c.status();
    }
    for (const DriveCheck& earlier : checks) {
      if (earlier.config_path == c->config_path) {
        *failure = {kExitUsage, path + " is given twice"};
        return InvalidArgument(failure->message);
      }
    }
    struct stat st {};
    if (c->exists && ::stat(path.c_str(), &st) == 0) {
      std::pair<dev_t, ino_t> id = c->block_device ? std::pair<dev_t, ino_t>{st.st_rdev, 0}
                                                   : std::pair<dev_t, ino_t>{st.st_dev, st.st_ino};
      if (std::find(seen.begin(), seen.end(), id) != seen.end()) {
        *failure = {kExitUsage, path + " is given twice (maybe under another name)"};
        return InvalidArgument(failure->message);
      }
      seen.push_back(id);
    }
    checks.push_back(std::move(c).value());
  }
  std::vector<std::string> files, devices;
  for (const DriveCheck& c : checks) (c.block_device ? devices : files).push_back(c.path);
  if (!files.empty() && !devices.empty()) {
    *failure = {kExitConfig, "the drives mix block devices (" + devices[0] + ") and files (" + files[0] +
                                 "); storage.mode is direct or file for all of them, so give only one kind"};
    return InvalidArgument(failure->message);
  }
  if (!devices.empty() && flags.file_size_bytes != 0) {
    *failure = {kExitUsage, "--file-size is for file drives; " + devices[0] + " is a block device"};
    return InvalidArgument(failure->message);
  }
  return checks;
}

// Opens the store once: proof that it works, and its figures for the config.
Result<drive::ExtentStoreStats> OpenOnce(const std::vector<std::string>& drives,
                                         const std::optional<drive::MasterKey>& master_key) {
  drive::ExtentStoreOptions o;
  o.drives = drives;
  o.master_key = master_key;
  o.io_buffers = 1;
  MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<drive::ExtentStore> store, drive::ExtentStore::Open(o));
  drive::ExtentStoreStats st = store->Stats();
  if (st.degraded) {
    for (const drive::DriveStats& d : st.drives) {
      if (d.state == drive::DriveState::kOffline) {
        return Unavailable("drive " + std::to_string(d.index) + (d.path.empty() ? "" : " (" + d.path + ")") +
                           " of store " + st.store_uuid.ToString() + " is offline: " + d.reason);
      }
    }
  }
  return st;
}

}  // namespace

int RunSetup(const std::vector<std::string>& args, const Environment& /*env*/, verbs::Provider& rdma_provider) {
  SetupFlags flags;
  if (auto code = ParseSetupFlags(args, &flags)) return *code;

  Failure failure{kExitFailed, ""};
  Result<std::vector<DriveCheck>> examined = ExamineAll(flags, &failure);
  if (!examined.ok()) return Fail(failure);
  const std::vector<DriveCheck>& checks = *examined;
  std::optional<drive::MasterKey> master_key;
  if (!flags.encryption_key_file.empty()) {
    Result<drive::MasterKey> key = drive::ReadMasterKeyFile(flags.encryption_key_file);
    if (!key.ok()) return Fail({kExitConfig, "--encryption-key-file: " + key.status().message()});
    master_key = *key;
  }
  const bool direct = checks[0].block_device;

  // Before anything is written: the RDMA device must exist when named.
  Result<RdmaChoice> rdma = ChooseRdma(flags.rdma_device, rdma_provider);
  if (!rdma.ok()) return Fail({kExitConfig, rdma.status().message()});

  std::vector<std::string> paths;
  for (const DriveCheck& c : checks) paths.push_back(c.path);

  // --idempotent: a store that is already right is kept as it is.
  std::optional<drive::ExtentStoreStats> kept;
  std::string why_not_kept;
  if (flags.idempotent) {
    Status same = SameStore(checks, flags);
    if (same.ok()) {
      Result<drive::ExtentStoreStats> st = OpenOnce(paths, master_key);
      if (st.ok()) {
        kept = *st;
        LOG_INFO << "setup: the drives already hold store " << st->store_uuid.ToString() << " (" << st->keys
                 << " values) with these settings; left alone";
      } else {
        same = st.status();
      }
    }
    if (!kept) why_not_kept = same.message();
  }
  const bool keep = kept.has_value();

  if (!keep) {
    std::string refused;
    for (const DriveCheck& c : checks) {
      if (c.holds == Holds::kNothing) continue;
      if (flags.force) {
        LOG_WARN << "setup: --force: " << c.path << " " << Holding(c) << "; erasing it";
        continue;
      }
      refused += (refused.empty() ? "" : "; ") + c.path + " " + Holding(c);
    }
    if (!refused.empty()) {
      std::string hint;
      if (flags.idempotent) {
        hint = " (--idempotent keeps only a complete store with the same settings: " + why_not_kept + ")";
      } else if (SameStore(checks, flags).ok()) {
        hint = " (they already form store " + checks[0].sb.store_uuid.ToString() +
               " with these settings: --idempotent keeps it)";
      }
      return Fail({kExitFailed, "refusing to format: " + refused + hint + "; pass --force to erase"});
    }
    for (const DriveCheck& c : checks) {
      if (c.holds != Holds::kForeign) continue;
      if (Status s = WipeHead(c); !s.ok()) return Fail({kExitFailed, "wiping " + c.path + ": " + s.message()});
    }
    drive::DriveFormatOptions fo;
    fo.drives = paths;
    fo.block_size_bytes = flags.block_size_bytes;
    fo.file_size_bytes = flags.file_size_bytes;
    fo.journal_area_bytes = flags.journal_area_bytes;
    fo.force = flags.force;
    fo.master_key = master_key;
    LOG_INFO << "setup: formatting " << paths.size() << " drive(s) for storage.mode " << (direct ? "direct" : "file")
             << ", block size " << FormatSize(flags.block_size_bytes);
    if (Status s = drive::ExtentStore::Format(fo); !s.ok()) {
      return Fail({s.code() == StatusCode::kInvalidArgument ? int(kExitConfig) : int(kExitFailed),
                   "format failed: " + s.message()});
    }
  }

  Result<drive::ExtentStoreStats> st = keep ? Result<drive::ExtentStoreStats>(*kept) : OpenOnce(paths, master_key);
  if (!st.ok()) return Fail({kExitFailed, "the store does not open after formatting: " + st.status().message()});

  ConfigInputs in;
  in.address = flags.address;
  if (!flags.encryption_key_file.empty()) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(flags.encryption_key_file, ec);
    in.encryption_key_file = ec ? flags.encryption_key_file : abs.string();
  }
  in.direct = direct;
  in.block_size_bytes = st->block_size_bytes;
  for (const DriveCheck& c : checks) in.drives.push_back(c.config_path);
  in.store_uuid = st->store_uuid.ToString();
  for (const drive::DriveStats& d : st->drives) in.usable_bytes += d.usable_bytes;
  in.rdma = *rdma;
  in.memory_bytes = config::DefaultMemoryPoolBytes(PhysicalMemoryBytes());
  const std::string yaml = RenderConfig(in);
  if (direct || !in.rdma.device.empty()) {
    Result<storage::HugePageCounts> pages = storage::HugePageReader().Read2MiB();
    if (pages.ok() && pages->available() < storage::HugePagesFor(in.memory_bytes)) {
      LOG_WARN << "setup: " << storage::NotEnoughHugePages(in.memory_bytes, *pages).message();
    }
  }

  // The config must be one the loader takes; a failure here is a bug.
  if (Result<config::ServerConfig> parsed = config::ParseServerConfig(yaml, "<setup output>"); !parsed.ok()) {
    return Fail({kExitFailed, "internal error: the generated config does not load: " + parsed.status().message()});
  }
  std::fwrite(yaml.data(), 1, yaml.size(), stdout);
  std::fflush(stdout);
  LOG_INFO << "setup: done: store " << in.store_uuid << ", " << FormatSize(in.usable_bytes)
           << " usable; save the config above as /etc/memkv/config.yaml and run 'memkv start'";
  return kExitOk;
}

}  // namespace memkv::cli
