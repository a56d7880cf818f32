// memkv drive list | inspect | verify: offline maintenance of a stopped
// server's drives (docs/cli.md, "memkv drive").
//
// Two passes. First each drive is opened read-only, as DriveFile does it:
// a shared flock (a running server holds it exclusively, so "in use" is
// found here and nothing is touched) and O_EXCL on block devices (refused
// while mounted). Its superblock says what it is, and for verify its
// journal is replayed (DriveJournal over a pread engine) to learn every key
// the store may hold: the library has no key listing. Then those files are
// closed and the store is opened with ExtentStore::Open, which is what
// `memkv start` does: it replays the journals again and, after a crash,
// brings their copies back in step. Figures come from Stats(); verify reads
// each live value back through Get (which checks the whole value against
// the checksum of its journal record) and compares that checksum again.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "base/clock.h"
#include "base/errno_text.h"
#include "base/json.h"
#include "base/log.h"
#include "base/units.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "config/server_config.h"
#include "drive/aligned_buffer.h"
#include "drive/drive_file.h"
#include "drive/drive_journal.h"
#include "drive/extent_store.h"
#include "drive/format.h"
#include "drive/io_engine.h"

namespace memkv::cli {
namespace {

using drive::DriveStats;
using drive::ExtentStoreStats;
using drive::Superblock;

constexpr const char* kDriveUsage = R"(Usage: memkv drive <list|inspect|verify> [--config PATH | --drives PATH...] [--json]

Offline maintenance of a stopped server's drives. A drive in use by a running
server (or mounted) is refused: stop the server first.

  list      one row per drive: path, index, uuid, state, raw/usable/used
            capacity, format version
  inspect   the store and each drive's superblock, journal use and capacity
  verify    reads every value back and checks its checksums; a report of
            values ok, bad (checksum mismatch) and unreadable, bytes scanned
            and time

Options:
  --config PATH      take the drives from storage.drives of this server config
                     (default /etc/memkv/config.yaml when it exists)
  --drives PATH...   the drives themselves, in any order
  --json             one JSON object on standard output instead of text
  --allow-degraded   inspect or verify a store although some of its drives are
                     missing or unreadable; like 'memkv start', this records
                     them offline in the journals of the others, and a drive
                     recorded offline comes back empty

Exit codes: 0 ok, 2 usage error, 3 nothing to examine (config invalid,
storage.mode memory, or the drives are not one complete store), 4 a drive is
in use (stop the server), 6 the store cannot be opened, or verify found bad or
unreadable values or an offline drive.
)";

constexpr const char* kSystemConfig = "/etc/memkv/config.yaml";

enum class Action { kList, kInspect, kVerify };

struct DriveFlags {
  Action action = Action::kList;
  std::string config_path;
  std::vector<std::string> drives;
  bool json = false;
  bool allow_degraded = false;
};

int Usage(const std::string& what) {
  std::fprintf(stderr, "memkv drive: %s; see 'memkv drive --help'\n", what.c_str());
  return kExitUsage;
}

std::optional<int> ParseDriveFlags(const std::vector<std::string>& raw_args, DriveFlags* flags) {
  Result<std::vector<std::string>> expanded = ExpandOptions(raw_args, kDriveOptions);
  if (!expanded.ok()) return Usage(expanded.status().message());
  const std::vector<std::string>& args = *expanded;
  if (args.empty()) return Usage("name an action: list, inspect or verify");
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kDriveUsage, stdout);
    return kExitOk;
  }
  if (args[0] == "list") flags->action = Action::kList;
  else if (args[0] == "inspect") flags->action = Action::kInspect;
  else if (args[0] == "verify") flags->action = Action::kVerify;
  else return Usage("unknown action '" + args[0] + "' (list, inspect, verify)");
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == kEndOfOptions) {  // drives named after "--" may begin with '-'
      flags->drives.insert(flags->drives.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (IsHelp(a)) {
      std::fputs(kDriveUsage, stdout);
      return kExitOk;
    }
    if (a == "--json") {
      flags->json = true;
    } else if (a == "--allow-degraded") {
      flags->allow_degraded = true;
    } else if (a == "--drives") {
      // ExpandOptions: at least one path follows (the first may be "--drives=-x").
      flags->drives.push_back(args[++i]);
      while (i + 1 < args.size() && !LooksLikeOption(args[i + 1])) flags->drives.push_back(args[++i]);
    } else if (a == "--config") {
      flags->config_path = args[++i];
    } else {
      return Usage("unknown option '" + a + "'");
    }
  }
  if (!flags->config_path.empty() && !flags->drives.empty()) return Usage("give --config or --drives, not both");
  return std::nullopt;
}

// A failed drive command: the exit code and the line that says what to do.
struct Failure {
  int code = kExitOk;
  std::string message;
};

// The drives to examine: --drives, else storage.drives of the config (and
// its master key when storage.encryption is on).
Result<std::vector<std::string>> ResolveDrives(const DriveFlags& flags, Failure* failure,
                                               std::optional<drive::MasterKey>* master_key) {
  if (!flags.drives.empty()) return flags.drives;
  std::string path = flags.config_path;
  if (path.empty() && ::access(kSystemConfig, F_OK) == 0) path = kSystemConfig;
  if (path.empty()) {
    *failure = {kExitUsage, "name the drives: --drives PATH... or --config PATH (there is no " +
                                std::string(kSystemConfig) + ")"};
    return InvalidArgument(failure->message);
  }
  Result<config::ServerConfig> config = config::LoadServerConfigFile(path);
  if (!config.ok()) {
    *failure = {kExitConfig, "invalid configuration: " + config.status().message()};
    return config.status();
  }
  if (config->storage.drives.empty()) {
    *failure = {kExitConfig, path + " has storage.mode " + std::string(config::StorageModeName(config->storage.mode)) +
                                 " and no storage.drives: nothing to examine"};
    return InvalidArgument(failure->message);
  }
  if (config->storage.encryption != config::StorageEncryption::kOff) {
    Result<drive::MasterKey> key = drive::ReadMasterKeyFile(config->storage.encryption_key_file);
    if (!key.ok()) {
      *failure = {kExitConfig, key.status().message()};
      return key.status();
    }
    *master_key = *key;
  }
  std::vector<std::string> drives;
  for (const config::DriveConfig& d : config->storage.drives) drives.push_back(d.media);
  return drives;
}

// ------------------------------------------------------------ first pass

// What one drive is, read without the store.
struct Peek {
  std::string path;
  std::string state;   // "formatted", or why it is not: missing, unreadable, unformatted, unsupported, damaged
  std::string reason;
  bool has_sb = false;
  Superblock sb;
  uint64_t raw_bytes = 0;
};

// The keys of every Put record in the drive's journal (a superset of the
// live values: replaced and deleted keys are there too).
void CollectKeys(const drive::DriveFile& f, const Superblock& sb, std::set<std::string>* keys) {
  std::unique_ptr<drive::IoEngine> engine = drive::CreateSyncIoEngine({f.fd()});
  drive::DriveJournal journal(0, sb);
  Result<drive::ReplayedJournal> r = journal.Replay(*engine);
  if (!r.ok()) {
    LOG_WARN << "drive: " << f.path() << ": journal not readable (" << r.status().message() << ")";
    return;
  }
  for (const drive::JournalRecord& rec : r->records) {
    if (rec.type == drive::RecordType::kPut) keys->insert(rec.key);
  }
}

Result<Peek> PeekDrive(const std::string& path, std::set<std::string>* keys) {
  Peek p;
  p.path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    p.state = errno == ENOENT ? "missing" : "unreadable";
    p.reason = "stat: " + ErrnoName(errno);
    return p;
  }
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    p.state = "unreadable";
    p.reason = "neither a regular file nor a block device";
    return p;
  }
  Result<drive::DriveFile> f = drive::DriveFile::Open(path, {.writable = false});
  if (f.status().code() == StatusCode::kFailedPrecondition) return f.status();  // in use, or not a drive
  if (!f.ok()) {
    p.state = "unreadable";
    p.reason = f.status().message();
    return p;
  }
  p.raw_bytes = f->size_bytes();
  Result<drive::AlignedBuffer> block = drive::AlignedBuffer::Allocate(drive::kDriveHeaderBytes);
  if (!block.ok()) return block.status();
  Status read = p.raw_bytes < drive::kDriveHeaderBytes ? NotFound("") : f->ReadAt(0, block->span());
  Result<Superblock> sb = read.ok() ? drive::DecodeSuperblock(block->span(), path) : Result<Superblock>(read);
  if (sb.ok()) {
    p.state = "formatted";
    p.has_sb = true;
    p.sb = *sb;
    if (keys != nullptr) CollectKeys(*f, p.sb, keys);
    return p;
  }
  switch (sb.status().code()) {
    case StatusCode::kNotFound: p.state = "unformatted"; break;
    case StatusCode::kUnsupportedVersion: p.state = "unsupported"; break;
    case StatusCode::kCorruption: p.state = "damaged"; break;
    default: p.state = "unreadable"; break;
  }
  p.reason = sb.status().message().empty() ? "no MemKV superblock" : sb.status().message();
  return p;
}

// Ok when the drives given are exactly the drives of one store. Opening a
// store with a drive missing is not harmless: Open records the absent drive
// offline in the others' journals, and it comes back empty. A maintenance
// tool must not do that because of a typo in --drives.
Status CompleteStore(const std::vector<Peek>& peeks) {
  const Peek* first = nullptr;
  std::set<uint32_t> indexes;
  for (const Peek& p : peeks) {
    if (!p.has_sb) return FailedPrecondition(p.path + " is " + p.state + " (" + p.reason + ")");
    if (first == nullptr) first = &p;
    if (p.sb.store_uuid != first->sb.store_uuid) {
      return FailedPrecondition(p.path + " belongs to store " + p.sb.store_uuid.ToString() + ", " + first->path +
                                " to store " + first->sb.store_uuid.ToString());
    }
    if (!indexes.insert(p.sb.drive_index).second) {
      return FailedPrecondition(p.path + " is drive " + std::to_string(p.sb.drive_index) + " a second time");
    }
  }
  if (first != nullptr && indexes.size() != first->sb.drive_count) {
    std::string absent;
    for (uint32_t i = 0; i < first->sb.drive_count; ++i) {
      if (indexes.count(i) == 0) absent += (absent.empty() ? "" : ", ") + std::to_string(i);
    }
    return FailedPrecondition("store " + first->sb.store_uuid.ToString() + " has " +
                              std::to_string(first->sb.drive_count) + " drives and drive(s) " + absent +
                              " are not among those given");
  }
  return Status::Ok();
}

// --------------------------------------------------------------- output

constexpr auto Human = &FormatSizeRounded;

// Keys are bytes: printable ASCII as is, the rest as \xNN.
std::string PrintableKey(std::string_view key) {
  std::string out;
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += char(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string Iso8601(uint64_t unix_ns) {
  std::time_t t = std::time_t(unix_ns / 1000000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}


// Row of `list`, merged from the first pass and (when the store opened) Stats.
struct Row {
  std::string path;
  std::string index = "-";
  std::string uuid = "-";
  std::string state;
  std::string reason;
  uint64_t raw = 0, usable = 0, used = 0;
  std::string version = "-";
};

std::vector<Row> Rows(const std::vector<Peek>& peeks, const ExtentStoreStats* st) {
  std::vector<Row> rows;
  for (const Peek& p : peeks) {
    Row r;
    r.path = p.path;
    r.state = p.state;
    r.reason = p.reason;
    r.raw = p.raw_bytes;
    if (p.has_sb) {
      r.index = std::to_string(p.sb.drive_index);
      r.uuid = p.sb.drive_uuid.ToString();
      r.usable = p.sb.unit_count * p.sb.unit_bytes;
      r.version = std::to_string(p.sb.format_version);
    }
    rows.push_back(r);
  }
  if (st == nullptr) {
    // Drives of the stores seen that were not given.
    std::set<std::pair<std::string, uint32_t>> present;
    std::vector<const Superblock*> stores;
    for (const Peek& p : peeks) {
      if (!p.has_sb) continue;
      present.insert({p.sb.store_uuid.ToString(), p.sb.drive_index});
      bool seen = std::any_of(stores.begin(), stores.end(),
                              [&](const Superblock* sb) { return sb->store_uuid == p.sb.store_uuid; });
      if (!seen) stores.push_back(&p.sb);
    }
    for (const Superblock* sb : stores) {
      const std::string store = sb->store_uuid.ToString();
      for (uint32_t i = 0; i < sb->drive_count; ++i) {
        if (present.count({store, i}) != 0) continue;
        Row r;
        r.path = "-";
        r.index = std::to_string(i);
        r.state = "not-given";
        r.reason = "drive " + r.index + " of store " + store + " is not among the drives given";
        rows.push_back(r);
      }
    }
    return rows;
  }
  for (const DriveStats& d : st->drives) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return !d.path.empty() && r.path == d.path; });
    if (it == rows.end()) {  // a drive of the store that was not given
      Row r;
      r.path = d.path.empty() ? "-" : d.path;
      r.index = std::to_string(d.index);
      rows.push_back(r);
      it = rows.end() - 1;
    }
    it->state = std::string(drive::DriveStateName(d.state));
    it->reason = d.reason;
    if (d.raw_bytes != 0) it->raw = d.raw_bytes;
    if (d.usable_bytes != 0) it->usable = d.usable_bytes;
    it->used = d.used_bytes;
  }
  return rows;
}

std::string RenderListText(const std::vector<Row>& rows, const ExtentStoreStats* st) {
  std::string out;
  if (st != nullptr) {
    out += "store " + st->store_uuid.ToString() + ": " + std::to_string(st->drives.size()) + " drive(s), block size " +
           FormatSize(st->block_size_bytes) + ", " + std::to_string(st->keys) + " values (" + Human(st->value_bytes) +
           ")" + (st->degraded ? ", DEGRADED" : "") + "\n";
  }
  std::vector<std::vector<std::string>> cells = {{"PATH", "INDEX", "UUID", "STATE", "RAW", "USABLE", "USED", "FORMAT"}};
  for (const Row& r : rows) {
    cells.push_back({r.path, r.index, r.uuid, r.state, Human(r.raw), Human(r.usable), Human(r.used),
                     r.version == "-" ? "-" : "v" + r.version});
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& row : cells) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : cells) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  for (const Row& r : rows) {
    if (!r.reason.empty()) out += r.path + ": " + r.state + ": " + r.reason + "\n";
  }
  return out;
}

std::string RenderListJson(const std::vector<Row>& rows, const ExtentStoreStats* st, const std::string& open_error) {
  std::string out = "{\n  \"store_uuid\": " + (st ? JsonQuote(st->store_uuid.ToString()) : "null") + ",\n";
  out += "  \"store_error\": " + (open_error.empty() ? "null" : JsonQuote(open_error)) + ",\n";
  out += "  \"drives\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    out += (i ? ",\n" : "\n") + std::string("    {\"path\": ") + JsonQuote(r.path) +
           ", \"index\": " + (r.index == "-" ? "null" : r.index) +
           ", \"uuid\": " + (r.uuid == "-" ? "null" : JsonQuote(r.uuid)) + ", \"state\": " + JsonQuote(r.state) +
           ", \"reason\": " + JsonQuote(r.reason) + ", \"raw_bytes\": " + std::to_string(r.raw) +
           ", \"usable_bytes\": " + std::to_string(r.usable) + ", \"used_bytes\": " + std::to_string(r.used) +
           ", \"format_version\": " + (r.version == "-" ? "null" : r.version) + "}";
  }
  return out + "\n  ]\n}\n";
}

const Peek* PeekFor(const std::vector<Peek>& peeks, const std::string& path) {
  for (const Peek& p : peeks) {
    if (!path.empty() && p.path == path) return &p;
  }
  return nullptr;
}

std::string RenderInspectText(const std::vector<Peek>& peeks, const ExtentStoreStats& st) {
  char line[512];
  std::string out;
  auto field = [&](const char* name, const std::string& value) {
    std::snprintf(line, sizeof(line), "  %-18s %s\n", name, value.c_str());
    out += line;
  };
  size_t online = 0;
  for (const DriveStats& d : st.drives) online += d.state != drive::DriveState::kOffline;
  out += "store " + st.store_uuid.ToString() + "\n";
  field("block size", FormatSize(st.block_size_bytes));
  field("drives", std::to_string(st.drives.size()) + " (" + std::to_string(online) + " online)" +
                      (st.degraded ? ", DEGRADED" : ""));
  field("values", std::to_string(st.keys) + " (" + Human(st.value_bytes) + ")");
  field("io engine", st.io_engine);
  field("opened in", std::to_string(st.open_nanos / 1000000) + " ms (journal replay)");
  for (const DriveStats& d : st.drives) {
    out += "drive " + std::to_string(d.index) + ": " + (d.path.empty() ? "(not given)" : d.path) + "\n";
    field("state", std::string(drive::DriveStateName(d.state)) + (d.reason.empty() ? "" : ": " + d.reason));
    const Peek* p = PeekFor(peeks, d.path);
    if (p != nullptr && p->has_sb) {
      const Superblock& sb = p->sb;
      field("drive uuid", sb.drive_uuid.ToString());
      field("format version", std::to_string(sb.format_version) + " (this memkv writes " +
                                  std::to_string(drive::kDriveFormatVersion) + ")");
      field("drive", std::to_string(sb.drive_index) + " of " + std::to_string(sb.drive_count));
      field("logical block", std::to_string(sb.logical_block_bytes) + " B");
      field("extent / unit", "up to " + FormatSize(sb.extent_bytes) + " / " + std::to_string(sb.unit_bytes) + " B");
      field("created", Iso8601(sb.created_unix_ns));
      field("device size", Human(d.raw_bytes) + " (" + std::to_string(sb.device_bytes) + " B at format)");
      field("journal", "2 areas of " + Human(sb.journal_area_bytes) + " at offset " +
                           std::to_string(sb.journal_offset));
      field("data", "offset " + std::to_string(sb.data_offset) + ", " + std::to_string(sb.unit_count) + " units");
    }
    if (d.journal_area_bytes != 0) {
      char pct[32];
      std::snprintf(pct, sizeof(pct), "%.1f%%", 100.0 * double(d.journal_used_bytes) / double(d.journal_area_bytes));
      field("journal used", Human(d.journal_used_bytes) + " of " + Human(d.journal_area_bytes) + " (" + pct + ")");
    }
    field("capacity", "raw " + Human(d.raw_bytes) + ", usable " + Human(d.usable_bytes) + ", used " +
                          Human(d.used_bytes));
    char frag[32];
    std::snprintf(frag, sizeof(frag), "%.1f%%", 100.0 * d.fragmentation());
    field("free", Human(d.free_bytes) + " in " + std::to_string(d.free_runs) + " run(s), longest " +
                      Human(d.largest_free_bytes) + ", fragmentation " + frag);
    field("value bytes", Human(d.value_bytes));
  }
  return out;
}

std::string RenderInspectJson(const std::vector<Peek>& peeks, const ExtentStoreStats& st) {
  auto n = [](uint64_t v) { return std::to_string(v); };
  std::string out = "{\n  \"store_uuid\": " + JsonQuote(st.store_uuid.ToString()) + ",\n";
  out += "  \"block_size_bytes\": " + n(st.block_size_bytes) + ",\n";
  out += "  \"degraded\": " + std::string(st.degraded ? "true" : "false") + ",\n";
  out += "  \"keys\": " + n(st.keys) + ",\n  \"value_bytes\": " + n(st.value_bytes) + ",\n";
  out += "  \"io_engine\": " + JsonQuote(st.io_engine) + ",\n  \"open_nanos\": " + n(st.open_nanos) + ",\n";
  out += "  \"drives\": [";
  for (size_t i = 0; i < st.drives.size(); ++i) {
    const DriveStats& d = st.drives[i];
    char frag[32];
    std::snprintf(frag, sizeof(frag), "%.4f", d.fragmentation());
    out += std::string(i ? ",\n" : "\n") + "    {\"index\": " + n(d.index) +
           ", \"path\": " + (d.path.empty() ? "null" : JsonQuote(d.path)) +
           ", \"state\": " + JsonQuote(drive::DriveStateName(d.state)) + ", \"reason\": " + JsonQuote(d.reason) +
           ",\n     \"raw_bytes\": " + n(d.raw_bytes) + ", \"usable_bytes\": " + n(d.usable_bytes) +
           ", \"used_bytes\": " + n(d.used_bytes) + ", \"value_bytes\": " + n(d.value_bytes) +
           ", \"free_bytes\": " + n(d.free_bytes) + ", \"largest_free_bytes\": " + n(d.largest_free_bytes) +
           ", \"free_runs\": " + n(d.free_runs) + ", \"fragmentation\": " + frag +
           ",\n     \"slots_total\": " + n(d.slots_total) + ", \"slots_free\": " + n(d.slots_free) +
           ", \"journal_used_bytes\": " + n(d.journal_used_bytes) +
           ", \"journal_area_bytes\": " + n(d.journal_area_bytes);
    const Peek* p = PeekFor(peeks, d.path);
    if (p != nullptr && p->has_sb) {
      const Superblock& sb = p->sb;
      out += ",\n     \"superblock\": {\"format_version\": " + n(sb.format_version) +
             ", \"store_uuid\": " + JsonQuote(sb.store_uuid.ToString()) +
             ", \"drive_uuid\": " + JsonQuote(sb.drive_uuid.ToString()) + ", \"drive_index\": " + n(sb.drive_index) +
             ", \"drive_count\": " + n(sb.drive_count) + ", \"logical_block_bytes\": " + n(sb.logical_block_bytes) +
             ", \"extent_bytes\": " + n(sb.extent_bytes) + ", \"unit_bytes\": " + n(sb.unit_bytes) +
             ", \"created_unix_ns\": " + n(sb.created_unix_ns) + ", \"device_bytes\": " + n(sb.device_bytes) +
             ", \"journal_offset\": " + n(sb.journal_offset) + ", \"journal_area_bytes\": " +
             n(sb.journal_area_bytes) + ", \"data_offset\": " + n(sb.data_offset) +
             ", \"unit_count\": " + n(sb.unit_count) + "}";
    }
    out += "}";
  }
  return out + "\n  ]\n}\n";
}

// ---------------------------------------------------------------- verify

struct BadValue {
  std::string key;
  uint64_t size_bytes = 0;
  std::string problem;  // "bad" or "unreadable"
  std::string detail;
};

struct VerifyReport {
  uint64_t values = 0;
  uint64_t ok = 0;
  uint64_t bad = 0;
  uint64_t unreadable = 0;
  uint64_t bytes_scanned = 0;
  uint64_t nanos = 0;
  std::vector<BadValue> problems;
  std::vector<std::string> offline;  // "drive 1 (/path): reason"
};

// Reads every live value back. A Get that fails is "bad" when the store
// counted a checksum failure for it (torn, stale or rotten extent) and
// "unreadable" otherwise (an I/O error took its drive offline).
VerifyReport Verify(drive::ExtentStore& store, const std::set<std::string>& candidates) {
  VerifyReport r;
  const Nanos start = MonotonicNanos();
  const bool progress = ::isatty(STDERR_FILENO) == 1;
  Nanos last_progress = start;
  uint64_t seen = 0;
  for (const std::string& key : candidates) {
    ++seen;
    Result<drive::ValueInfo> info = store.Stat(key);
    if (!info.ok()) continue;  // replaced or deleted: not a live value
    ++r.values;
    const ExtentStoreStats before = store.Stats();
    Result<std::vector<uint8_t>> value = store.Get(key);
    if (value.ok()) {
      r.bytes_scanned += value->size();
      if (Checksum(value->data(), value->size()) == info->checksum) {
        ++r.ok;
      } else {
        ++r.bad;
        r.problems.push_back({key, info->size_bytes, "bad", "value checksum differs from its journal record"});
      }
    } else {
      const ExtentStoreStats after = store.Stats();
      const bool checksum = after.checksum_failures > before.checksum_failures;
      if (checksum) r.bytes_scanned += info->size_bytes;  // read in full, then found bad
      (checksum ? r.bad : r.unreadable)++;
      r.problems.push_back({key, info->size_bytes, checksum ? "bad" : "unreadable", value.status().message()});
    }
    if (progress && MonotonicNanos() - last_progress > 1000000000) {
      last_progress = MonotonicNanos();
      std::fprintf(stderr, "\rverify: %llu of %zu keys, %s read", (unsigned long long)seen, candidates.size(),
                   Human(r.bytes_scanned).c_str());
    }
  }
  if (progress && last_progress != start) std::fputs("\n", stderr);
  r.nanos = uint64_t(MonotonicNanos() - start);
  for (const DriveStats& d : store.Stats().drives) {
    if (d.state != drive::DriveState::kOffline) continue;
    r.offline.push_back("drive " + std::to_string(d.index) + (d.path.empty() ? "" : " (" + d.path + ")") + ": " +
                        d.reason);
  }
  return r;
}

bool Passed(const VerifyReport& r) { return r.bad == 0 && r.unreadable == 0 && r.offline.empty(); }

std::string RenderVerifyText(const VerifyReport& r, const ExtentStoreStats& st) {
  char line[256];
  const double secs = double(r.nanos) / 1e9;
  std::string out = "verify store " + st.store_uuid.ToString() + ": " + std::to_string(st.drives.size()) +
                    " drive(s), " + std::to_string(r.values) + " values\n";
  std::snprintf(line, sizeof(line),
                "  values ok          %llu\n  values bad         %llu\n  values unreadable  %llu\n"
                "  bytes scanned      %s in %.2f s (%s/s)\n",
                (unsigned long long)r.ok, (unsigned long long)r.bad, (unsigned long long)r.unreadable,
                Human(r.bytes_scanned).c_str(), secs, Human(secs > 0 ? uint64_t(double(r.bytes_scanned) / secs) : 0).c_str());
  out += line;
  for (const std::string& o : r.offline) out += "  offline " + o + "\n";
  for (const BadValue& b : r.problems) {
    out += "  " + b.problem + ": key \"" + PrintableKey(b.key) + "\" (" + Human(b.size_bytes) + "): " + b.detail + "\n";
  }
  if (Passed(r)) {
    out += "result: ok\n";
  } else {
    out += "result: FAILED (" + std::to_string(r.bad) + " bad, " + std::to_string(r.unreadable) + " unreadable, " +
           std::to_string(r.offline.size()) + " drive(s) offline)\n";
  }
  return out;
}

std::string RenderVerifyJson(const VerifyReport& r, const ExtentStoreStats& st) {
  auto n = [](uint64_t v) { return std::to_string(v); };
  std::string out = "{\n  \"store_uuid\": " + JsonQuote(st.store_uuid.ToString()) + ",\n";
  out += "  \"values\": " + n(r.values) + ",\n  \"ok\": " + n(r.ok) + ",\n  \"bad\": " + n(r.bad) +
         ",\n  \"unreadable\": " + n(r.unreadable) + ",\n  \"bytes_scanned\": " + n(r.bytes_scanned) +
         ",\n  \"nanos\": " + n(r.nanos) + ",\n  \"offline\": [";
  for (size_t i = 0; i < r.offline.size(); ++i) out += (i ? ", " : "") + JsonQuote(r.offline[i]);
  out += "],\n  \"problems\": [";
  for (size_t i = 0; i < r.problems.size(); ++i) {
    const BadValue& b = r.problems[i];
    out += std::string(i ? ",\n" : "\n") + "    {\"key\": " + JsonQuote(PrintableKey(b.key)) +
           ", \"size_bytes\": " + n(b.size_bytes) + ", \"problem\": " + JsonQuote(b.problem) +
           ", \"detail\": " + JsonQuote(b.detail) + "}";
  }
  out += std::string(r.problems.empty() ? "" : "\n  ") + "],\n  \"result\": " + JsonQuote(Passed(r) ? "ok" : "failed") +
         "\n}\n";
  return out;
}

void Print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

int RunDrive(const std::vector<std::string>& args, const Environment& /*env*/) {
  DriveFlags flags;
  if (auto code = ParseDriveFlags(args, &flags)) return *code;
  const char* name = flags.action == Action::kList ? "list" : flags.action == Action::kInspect ? "inspect" : "verify";
  auto fail = [name](const Failure& f) {
    std::fprintf(stderr, "memkv drive %s: %s\n", name, f.message.c_str());
    return f.code;
  };

  Failure failure;
  std::optional<drive::MasterKey> master_key;
  Result<std::vector<std::string>> drives = ResolveDrives(flags, &failure, &master_key);
  if (!drives.ok()) return failure.code == kExitUsage ? Usage(failure.message) : fail(failure);

  // First pass: read-only; a drive held by a running server stops us here.
  std::vector<Peek> peeks;
  std::set<std::string> keys;
  for (const std::string& path : *drives) {
    Result<Peek> p = PeekDrive(path, flags.action == Action::kVerify ? &keys : nullptr);
    if (!p.ok()) {
      return fail({p.status().code() == StatusCode::kFailedPrecondition ? int(kExitUnavailable) : int(kExitFailed),
                   p.status().message() + "; 'memkv drive' works on a stopped server: stop it first"});
    }
    peeks.push_back(std::move(p).value());
  }

  // Second pass: the store, as `memkv start` opens it, but only when all of
  // its drives are here (CompleteStore says why).
  Status complete = CompleteStore(peeks);
  Result<std::unique_ptr<drive::ExtentStore>> store = complete;
  if (complete.ok() || (flags.allow_degraded && flags.action != Action::kList)) {
    drive::ExtentStoreOptions o;
    o.drives = *drives;
    o.io_buffers = 8;
    o.master_key = master_key;
    store = drive::ExtentStore::Open(o);
    if (!store.ok() && store.status().message().find("in use by another") != std::string::npos) {
      return fail({kExitUnavailable, store.status().message() + "; stop the server first"});  // started meanwhile
    }
  } else if (flags.action != Action::kList) {
    return fail({kExitConfig, complete.message() + "; give every drive of the store (or --config), or pass "
                                                   "--allow-degraded to open it without the others"});
  }

  if (flags.action == Action::kList) {
    const std::string error = store.ok() ? "" : store.status().message();
    const ExtentStoreStats st = store.ok() ? (*store)->Stats() : ExtentStoreStats{};
    const ExtentStoreStats* stp = store.ok() ? &st : nullptr;
    std::vector<Row> rows = Rows(peeks, stp);
    Print(flags.json ? RenderListJson(rows, stp, error) : RenderListText(rows, stp));
    if (!error.empty() && !flags.json) {
      std::fprintf(stderr, "memkv drive list: store not opened (figures from the superblocks only): %s\n",
                   error.c_str());
    }
    return kExitOk;
  }
  if (!store.ok()) {
    return fail({kExitFailed, "the store does not open: " + store.status().message()});
  }
  if (flags.action == Action::kInspect) {
    const ExtentStoreStats st = (*store)->Stats();
    Print(flags.json ? RenderInspectJson(peeks, st) : RenderInspectText(peeks, st));
    return kExitOk;
  }
  const ExtentStoreStats st = (*store)->Stats();
  VerifyReport report = Verify(**store, keys);
  if (report.values != st.keys) {
    LOG_WARN << "drive verify: the store holds " << st.keys << " values, the journals named " << report.values;
  }
  Print(flags.json ? RenderVerifyJson(report, st) : RenderVerifyText(report, st));
  return Passed(report) ? kExitOk : kExitFailed;
}

}  // namespace memkv::cli
