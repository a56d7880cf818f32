// ExtentStore: Format and Open (superblocks, journal replay, merge).
//
// Every online drive holds a full copy of the journal, so any one of them
// can rebuild the index. Open merges all copies it can trust:
//   - A drive that went offline is named by a kDriveOffline record in the
//     journals of the drives that stayed. Its own journal is stale from that
//     moment, so it is not trusted: journals are taken newest first (highest
//     sequence), and a drive marked offline by a trusted journal is stale.
//     A stale drive that is present again is readmitted empty: the live
//     index is checkpointed into its journal first, then into the others'
//     (which drops the mark), so a crash between the two leaves it stale.
//   - Per key the record with the highest sequence wins (Put or Delete).
//   - A winning Put is live only if all its extents are on drives that are
//     present and trusted and that are well formed (ExtentsCoverValue); its
//     units are then marked used in the allocators (newest first, so two
//     records never both hold a unit).
// After a crash the copies can differ in their last batch; the union is
// taken and a checkpoint makes them equal again. Nothing here reads extents.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "base/clock.h"
#include "base/log.h"
#include "base/thread_name.h"
#include "base/units.h"
#include "drive/extent_store_impl.h"

namespace memkv::drive {
namespace {

constexpr uint64_t kDataAlignment = 1 << 20;  // unit 0 starts on a MiB boundary
constexpr uint64_t kMinJournalArea = 1 << 20;
constexpr uint64_t kMaxJournalArea = 1ull << 30;

uint64_t RoundUpTo(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

Result<AlignedBuffer> ReadBlock(const DriveFile& f, uint64_t offset) {
  MEMKV_ASSIGN_OR_RETURN(AlignedBuffer buf, AlignedBuffer::Allocate(kDriveHeaderBytes));
  MEMKV_RETURN_IF_ERROR(f.ReadAt(offset, buf.span()));
  return buf;
}

std::span<uint8_t, kDriveHeaderBytes> Block(AlignedBuffer& b, size_t i = 0) {
  return std::span<uint8_t, kDriveHeaderBytes>(b.data() + i * kDriveHeaderBytes, kDriveHeaderBytes);
}

}  // namespace

// ------------------------------------------------------------------- Format

Status ExtentStore::Format(const DriveFormatOptions& o) {
  if (o.drives.empty()) return InvalidArgument("format: no drives given");
  if (o.drives.size() > 65535) return InvalidArgument("format: more than 65535 drives");
  if (o.block_size_bytes == 0 || o.block_size_bytes % kDriveHeaderBytes != 0 || o.block_size_bytes > (1ull << 30)) {
    return InvalidArgument("format: block size " + std::to_string(o.block_size_bytes) +
                           " must be a multiple of 4 KiB, at most 1 GiB");
  }
  std::vector<DriveFile> files;
  for (const std::string& path : o.drives) {
    MEMKV_ASSIGN_OR_RETURN(DriveFile f, DriveFile::Open(path, {.create_bytes = o.file_size_bytes}));
    if (f.size_bytes() >= kDriveHeaderBytes) {
      MEMKV_ASSIGN_OR_RETURN(AlignedBuffer block, ReadBlock(f, 0));
      auto old = DecodeSuperblock(block.span(), path);
      if (old.status().code() != StatusCode::kNotFound && !o.force) {
        std::string what = old.ok() ? "store " + old->store_uuid.ToString() + " (drive " +
                                          std::to_string(old->drive_index) + " of " +
                                          std::to_string(old->drive_count) + ")"
                                    : "a MemKV superblock (" + old.status().message() + ")";
        return FailedPrecondition("format: " + path + " already holds " + what + "; pass force to overwrite it");
      }
    }
    files.push_back(std::move(f));
  }

  uint64_t total_units = 0;
  uint64_t smallest = UINT64_MAX;
  for (const DriveFile& f : files) {
    total_units += f.size_bytes() / kDriveUnitBytes;
    smallest = std::min(smallest, f.size_bytes());
  }
  uint64_t area = o.journal_area_bytes;
  if (area == 0) {
    // Every journal holds every drive's records, so with several drives the
    // per-unit rule is capped: the two areas take at most 1/8 of a drive.
    const uint64_t per_unit = total_units * kJournalBytesPerUnit;
    const uint64_t capped = std::min(per_unit, smallest / kJournalMaxShareOfDrive / 2 / kDriveHeaderBytes * kDriveHeaderBytes);
    area = std::clamp(RoundUpTo(capped, kMinJournalArea), kMinJournalArea, kMaxJournalArea);
  }
  if (area < 2 * kDriveHeaderBytes || area % kDriveHeaderBytes != 0) {
    return InvalidArgument("format: journal area of " + std::to_string(area) + " bytes must be a multiple of 4 KiB, at least 8 KiB");
  }

  const Uuid store_uuid = Uuid::Random();
  const uint64_t created = o.created_unix_ns != 0
                               ? o.created_unix_ns
                               : uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
  for (size_t i = 0; i < files.size(); ++i) {
    const DriveFile& f = files[i];
    Superblock sb;
    sb.store_uuid = store_uuid;
    sb.drive_uuid = Uuid::Random();
    sb.drive_index = uint32_t(i);
    sb.drive_count = uint32_t(files.size());
    sb.logical_block_bytes = f.logical_block_bytes();
    sb.extent_bytes = o.block_size_bytes;
    sb.unit_bytes = kDriveUnitBytes;
    sb.created_unix_ns = created;
    sb.device_bytes = f.size_bytes();
    sb.journal_offset = kDriveHeaderBytes;
    sb.journal_area_bytes = area;
    sb.data_offset = RoundUpTo(sb.journal_offset + 2 * area, kDataAlignment);
    if (f.size_bytes() < sb.data_offset + o.block_size_bytes) {
      return InvalidArgument("format: " + f.path() + " has " + FormatSize(f.size_bytes()) + "; it needs at least " +
                             FormatSize(sb.data_offset + o.block_size_bytes) + " (journal " + FormatSize(2 * area) +
                             " + one extent of " + FormatSize(o.block_size_bytes) + ")");
    }
    sb.unit_count = std::min((f.size_bytes() - sb.data_offset) / kDriveUnitBytes, kMaxUnitsPerDrive);
    if (o.master_key) {
      sb.encrypted = true;
      sb.encryption_id = Uuid::Random();
      sb.key_check = KeyCheckValue(*o.master_key, sb.encryption_id);
    }

    // The old superblock goes first and the new one last, so a drive whose
    // format was interrupted holds no valid superblock at all.
    MEMKV_ASSIGN_OR_RETURN(AlignedBuffer buf, AlignedBuffer::Allocate(2 * kDriveHeaderBytes));
    std::memset(buf.data(), 0, buf.size());
    MEMKV_RETURN_IF_ERROR(f.WriteAt(0, std::span<const uint8_t>(buf.data(), kDriveHeaderBytes)));
    MEMKV_RETURN_IF_ERROR(f.Sync());
    DriveJournal::EncodeFresh(sb, Block(buf, 0), Block(buf, 1));
    MEMKV_RETURN_IF_ERROR(f.WriteAt(sb.journal_area_offset(0), std::span<const uint8_t>(buf.data(), kDriveHeaderBytes)));
    MEMKV_RETURN_IF_ERROR(f.WriteAt(sb.journal_area_offset(1),
                                    std::span<const uint8_t>(buf.data() + kDriveHeaderBytes, kDriveHeaderBytes)));
    MEMKV_RETURN_IF_ERROR(f.Sync());
    EncodeSuperblock(sb, Block(buf, 0));
    MEMKV_RETURN_IF_ERROR(f.WriteAt(0, std::span<const uint8_t>(buf.data(), kDriveHeaderBytes)));
    MEMKV_RETURN_IF_ERROR(f.Sync());
    LOG_INFO_C("drive") << "format: " << f.path() << ": drive " << i << " of store " << store_uuid.ToString() << ", "
             << FormatSize(sb.unit_count * kDriveUnitBytes) << " of data in 4 KiB units, extents up to "
             << FormatSize(o.block_size_bytes) << ", journal 2 x "
             << FormatSize(area) << (f.direct_io() ? "" : " (buffered I/O)")
             << (o.master_key ? ", encrypted (aes-256-gcm)" : "");
  }
  return Status::Ok();
}

// --------------------------------------------------------------------- Open

namespace {

struct OpenedDrive {
  std::string path;
  DriveFile file;
  Superblock sb;
};

struct Mark {
  uint32_t drive_index;
  Uuid drive_uuid;
};

// Every drive agrees with storage.encryption and the master key; then each
// encrypted drive's open epoch is advanced and made durable, before this
// open writes anything: the nonces of this open (epoch | counter) are new.
Status CheckEncryption(const ExtentStoreOptions& options, std::vector<OpenedDrive>* opened) {
  const bool want = options.master_key.has_value();
  for (const OpenedDrive& o : *opened) {
    if (o.sb.encrypted == want) continue;
    if (want) {
      return FailedPrecondition("drive " + o.path +
                                " was formatted without encryption but storage.encryption is aes-256-gcm; reformat "
                                "it (memkv setup --force; its values are lost) or set storage.encryption: off");
    }
    return FailedPrecondition("drive " + o.path +
                              " was formatted with encryption (aes-256-gcm) but storage.encryption is off; set "
                              "storage.encryption: aes-256-gcm with its storage.encryption_key_file, or reformat it "
                              "(memkv setup --force; its values are lost)");
  }
  if (!want) return Status::Ok();
  for (const OpenedDrive& o : *opened) {
    if (KeyCheckValue(*options.master_key, o.sb.encryption_id) != o.sb.key_check) {
      return FailedPrecondition("drive " + o.path +
                                " was formatted encrypted under another master key than the one in "
                                "storage.encryption_key_file; use the key it was formatted with, or reformat it "
                                "(memkv setup --force; its values are lost)");
    }
    if (o.sb.open_epoch == UINT32_MAX) {
      return FailedPrecondition("drive " + o.path + " has been opened 2^32 - 1 times since its format, the most " +
                                "its nonces allow; reformat it (memkv setup --force)");
    }
  }
  for (OpenedDrive& o : *opened) {
    o.sb.open_epoch++;
    MEMKV_ASSIGN_OR_RETURN(AlignedBuffer buf, AlignedBuffer::Allocate(kDriveHeaderBytes));
    EncodeSuperblock(o.sb, Block(buf, 0));
    Status written = o.file.WriteAt(0, std::span<const uint8_t>(buf.data(), kDriveHeaderBytes));
    if (written.ok()) written = o.file.Sync();
    if (!written.ok()) return written.WithContext("drive " + o.path + ": recording its open epoch");
  }
  return Status::Ok();
}

bool MarkNames(const Mark& m, const Drive& d) {
  return m.drive_index == d.index && (m.drive_uuid.IsZero() || !d.present || m.drive_uuid == d.sb.drive_uuid);
}

}  // namespace

Result<std::unique_ptr<ExtentStore>> ExtentStore::Open(const ExtentStoreOptions& options) {
  const Nanos start = MonotonicNanos();
  if (options.drives.empty()) return InvalidArgument("open: no drives given");
  if (options.io_buffers == 0) return InvalidArgument("open: io_buffers must be at least 1");

  // 1. Superblocks.
  std::vector<OpenedDrive> opened;
  std::vector<std::string> failed;
  for (const std::string& path : options.drives) {
    auto f = DriveFile::Open(path);
    if (!f.ok()) {
      if (f.status().code() == StatusCode::kFailedPrecondition) return f.status();  // in use, or not a drive
      failed.push_back(f.status().message());
      continue;
    }
    auto block = ReadBlock(*f, 0);
    if (!block.ok()) {
      failed.push_back(block.status().message());
      continue;
    }
    auto sb = DecodeSuperblock(block->span(), path);
    if (sb.status().code() == StatusCode::kNotFound) {
      return FailedPrecondition(sb.status().message() + "; format it first (memkv setup)");
    }
    if (sb.status().code() == StatusCode::kUnsupportedVersion) return sb.status();
    if (!sb.ok()) {
      failed.push_back(sb.status().message());
      continue;
    }
    opened.push_back({path, std::move(f).value(), *sb});
  }
  for (const std::string& f : failed) LOG_ERROR_C("drive") << "extent store: " << f << "; that drive is offline";
  if (opened.empty()) {
    std::string all;
    for (const std::string& f : failed) all += (all.empty() ? "" : "; ") + f;
    return Unavailable("open: no usable drive: " + all);
  }
  const Superblock& ref = opened[0].sb;
  for (const OpenedDrive& o : opened) {
    if (o.sb.store_uuid != ref.store_uuid) {
      return FailedPrecondition("open: " + o.path + " belongs to store " + o.sb.store_uuid.ToString() + ", " +
                                opened[0].path + " to store " + ref.store_uuid.ToString());
    }
    if (o.sb.drive_count != ref.drive_count || o.sb.extent_bytes != ref.extent_bytes) {
      return FailedPrecondition("open: " + o.path + " disagrees with " + opened[0].path +
                                " on the drive count or extent size (corrupt superblock?)");
    }
  }

  MEMKV_RETURN_IF_ERROR(CheckEncryption(options, &opened));

  auto impl = std::make_unique<Impl>();
  Impl& s = *impl;
  s.options = options;
  if (options.realtime_clock != nullptr) s.clock = options.realtime_clock;
  s.store_uuid = ref.store_uuid;
  s.block_bytes = ref.extent_bytes;
  s.journal_area_bytes = ref.journal_area_bytes;
  s.drives.resize(ref.drive_count);
  for (uint32_t i = 0; i < ref.drive_count; ++i) {
    s.drives[i].index = i;
    s.drives[i].reason = failed.empty() ? "not among the drives given" : "not among the drives that opened";
  }
  for (OpenedDrive& o : opened) {
    Drive& d = s.drives[o.sb.drive_index];
    if (d.present) {
      return FailedPrecondition("open: " + o.path + " and " + d.path + " are both drive " +
                                std::to_string(o.sb.drive_index) + " of the store");
    }
    d.present = true;
    d.path = o.path;
    d.sb = o.sb;
    d.lbs = o.file.logical_block_bytes();
    d.alloc = ExtentAllocator(o.sb.unit_count);
    d.journal = DriveJournal(d.index, o.sb);
    if (o.file.size_bytes() < o.sb.unit_offset(o.sb.unit_count)) {
      d.reason = "is " + std::to_string(o.file.size_bytes()) + " bytes, smaller than its format (" +
                 std::to_string(o.sb.unit_offset(o.sb.unit_count)) + ")";
    } else {
      d.state = DriveState::kOnline;
      d.reason.clear();
    }
    d.file = std::move(o.file);
  }
  // The codec: AES-256-GCM under the master key, else plain.
  std::vector<CodecDrive> codec_drives(s.drives.size());
  for (const Drive& d : s.drives) {
    codec_drives[d.index] = {.present = d.present, .encryption_id = d.sb.encryption_id, .open_epoch = d.sb.open_epoch};
  }
  s.codec = CreateValueCodec(options.master_key, std::move(codec_drives));

  // 2. The I/O engine, with the staging buffers registered.
  MEMKV_ASSIGN_OR_RETURN(s.staging, AlignedBuffer::Allocate(size_t(options.io_buffers) * s.block_bytes));
  IoEngineOptions io;
  io.kind = options.io;
  io.queue_depth = options.queue_depth;
  for (Drive& d : s.drives) {
    io.fds.push_back(d.present ? d.file.fd() : -1);
    if (d.present && d.state != DriveState::kOffline) {
      MEMKV_RETURN_IF_ERROR(d.file.OpenBufferedWrites());
    }
    io.buffered_fds.push_back(d.present ? d.file.buffered_fd() : -1);
  }
  {
    MutexLock lock(s.buf_mu);  // no other thread yet; taken for the annotations
    for (uint32_t i = 0; i < options.io_buffers; ++i) {
      io.fixed_buffers.push_back(iovec{s.buffer(i), size_t(s.block_bytes)});
      s.free_bufs.push_back(options.io_buffers - 1 - i);
    }
  }
  MEMKV_ASSIGN_OR_RETURN(s.io, CreateIoEngine(io));
  if (options.wrap_engine) s.io = options.wrap_engine(std::move(s.io));

  // 3. Replay every journal, one thread per drive (the copies are read and
  // parsed in parallel; restart time is that of the largest one).
  std::vector<std::optional<Result<ReplayedJournal>>> results(s.drives.size());
  {
    std::vector<std::thread> readers;
    for (Drive& d : s.drives) {
      if (d.state != DriveState::kOnline) continue;
      readers.emplace_back([&s, &d, &results] {
        SetThreadName("memkv-drive");
        results[d.index] = d.journal.Replay(*s.io);
      });
    }
    for (std::thread& t : readers) t.join();
  }
  std::map<uint32_t, ReplayedJournal> replayed;
  std::vector<uint32_t> readmit;
  uint64_t max_sequence = 0;
  uint64_t max_generation = 0;
  for (Drive& d : s.drives) {
    if (!results[d.index]) continue;
    Result<ReplayedJournal>& r = *results[d.index];
    if (r.status().code() == StatusCode::kUnsupportedVersion) return r.status().WithContext(d.path);
    if (r.status().code() == StatusCode::kCorruption) {
      LOG_WARN_C("drive") << "extent store: " << d.path << ": journal unreadable (" << r.status().message()
               << "); the drive is readmitted empty";
      readmit.push_back(d.index);
      continue;
    }
    if (!r.ok()) {
      d.state = DriveState::kOffline;
      d.reason = r.status().message();
      LOG_ERROR_C("drive") << "extent store: " << d.path << ": " << d.reason << "; that drive is offline";
      continue;
    }
    max_sequence = std::max(max_sequence, r->base_sequence);
    max_generation = std::max(max_generation, r->base_generation);
    for (const JournalRecord& rec : r->records) {
      max_sequence = std::max(max_sequence, rec.sequence + 1);
      max_generation = std::max(max_generation, rec.generation + 1);
    }
    replayed.emplace(d.index, std::move(r).value());
  }

  // 4. Which journals to trust: newest first; a drive marked offline by a
  // trusted journal is stale.
  auto last_sequence = [](const ReplayedJournal& j) { return j.records.empty() ? 0 : j.records.back().sequence; };
  std::vector<uint32_t> order;
  for (auto& [idx, j] : replayed) order.push_back(idx);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return last_sequence(replayed[a]) > last_sequence(replayed[b]);
  });
  std::vector<uint32_t> trusted;
  std::vector<Mark> marks;
  for (uint32_t idx : order) {
    const Drive& d = s.drives[idx];
    bool stale = std::any_of(marks.begin(), marks.end(), [&](const Mark& m) { return MarkNames(m, d); });
    if (stale) {
      LOG_WARN_C("drive") << "extent store: " << d.path << " was offline and missed updates; it is readmitted empty";
      readmit.push_back(idx);
      continue;
    }
    trusted.push_back(idx);
    for (const JournalRecord& rec : replayed[idx].records) {
      if (rec.type == RecordType::kDriveOffline) marks.push_back({rec.drive_index, rec.drive_uuid});
    }
  }
  for (uint32_t idx : readmit) s.drives[idx].journal.Reset();

  // Copies that went through the same appends are equal; after a crash in
  // the middle of one they differ in its tail, and the union is taken.
  bool diverged = false;
  for (uint32_t idx : trusted) {
    const ReplayedJournal& a = replayed[idx];
    const ReplayedJournal& b = replayed[trusted[0]];
    if (a.records.size() != b.records.size() || last_sequence(a) != last_sequence(b)) diverged = true;
  }

  // 5. Winners per key across the trusted journals (one copy is enough when
  // they agree). Position in the journal (checkpoint in LRU order, then
  // later writes) rebuilds the LRU list.
  struct Winner {
    JournalRecord* rec;  // its key and extents are moved into the index at the end
    size_t position;
  };
  std::unordered_map<std::string_view, Winner> winners;
  if (!trusted.empty()) winners.reserve(replayed[trusted[0]].records.size());
  for (uint32_t idx : trusted) {
    if (!diverged && idx != trusted[0]) break;
    std::vector<JournalRecord>& records = replayed[idx].records;
    for (size_t pos = 0; pos < records.size(); ++pos) {
      JournalRecord& rec = records[pos];
      if (rec.type == RecordType::kDriveOffline) continue;
      auto [it, inserted] = winners.try_emplace(rec.key, Winner{&rec, pos});
      if (!inserted && rec.sequence > it->second.rec->sequence) it->second = Winner{&rec, pos};
    }
  }
  auto usable = [&](uint32_t drive) {
    return drive < s.drives.size() && s.drives[drive].state == DriveState::kOnline &&
           std::find(readmit.begin(), readmit.end(), drive) == readmit.end();
  };
  std::vector<Winner> live;
  size_t dropped = 0;
  for (auto& [key, w] : winners) {
    const JournalRecord* rec = w.rec;
    if (rec->type != RecordType::kPut) continue;
    // A value carries the seals its codec keeps (an encrypted store's: one per segment).
    const size_t seals = s.codec->SealCount(rec->extents, rec->value_bytes);
    bool ok = ExtentsCoverValue(rec->extents, rec->value_bytes, s.block_bytes) && rec->seals.size() == seals &&
              std::all_of(rec->extents.begin(), rec->extents.end(), [&](const ExtentRef& e) { return usable(e.drive); });
    if (ok) live.push_back(w);
    else dropped++;
  }
  // Newest first claims its units; a record with a unit already claimed (or
  // out of range) is older and dead (its units were reused).
  std::sort(live.begin(), live.end(), [](const Winner& a, const Winner& b) { return a.rec->sequence > b.rec->sequence; });
  std::vector<Winner> adopted;
  for (const Winner& w : live) {
    const JournalRecord* rec = w.rec;
    std::vector<ExtentRef> claimed;
    bool ok = true;
    for (const ExtentRef& e : rec->extents) {
      if (!s.drives[e.drive].alloc.MarkUsed(e.unit, e.units)) {
        ok = false;
        break;
      }
      claimed.push_back(e);
    }
    if (!ok) {
      for (const ExtentRef& e : claimed) s.drives[e.drive].alloc.Unmark(e.unit, e.units);
      dropped++;
      continue;
    }
    adopted.push_back(w);
  }
  for (Drive& d : s.drives) d.alloc.Seal();
  size_t values = 0;
  {
    // Not shared yet: the lock costs nothing and keeps the index's accesses checkable.
    MutexLock lock(s.mu);
    s.index.reserve(adopted.size());
    // Coldest first to the LRU front: the last written ends up most recently used.
    std::sort(adopted.begin(), adopted.end(), [](const Winner& a, const Winner& b) { return a.position < b.position; });
    winners.clear();  // its keys point into the records, whose keys move now
    for (const Winner& w : adopted) {
      JournalRecord& rec = *w.rec;
      auto e = std::make_shared<Entry>();
      e->key = std::move(rec.key);
      e->sequence = rec.sequence;
      e->generation = rec.generation;
      e->value_bytes = rec.value_bytes;
      e->value_checksum = rec.value_checksum;
      e->extents = std::move(rec.extents);
      e->attrs = std::move(rec.attrs);
      e->seals = std::move(rec.seals);
      s.LinkLocked(std::move(e));
    }
    s.next_sequence = std::max<uint64_t>(max_sequence, 1);
    s.next_generation = std::max<uint64_t>(max_generation, 1);
    values = s.index.size();
  }

  // 6. Bring the journals back in step when needed.
  bool unmarked = false;
  for (Drive& d : s.drives) {
    if (d.state != DriveState::kOffline) continue;
    d.marked_offline = std::any_of(marks.begin(), marks.end(), [&](const Mark& m) { return MarkNames(m, d); });
    if (!d.marked_offline) unmarked = true;
  }
  if (!readmit.empty() || diverged || unmarked) {
    LOG_INFO_C("drive") << "extent store: rewriting the journals (" << (readmit.empty() ? "" : "readmitted drives, ")
             << (diverged ? "copies differ after a crash, " : "") << (unmarked ? "offline drives to record" : "")
             << ")";
    MEMKV_RETURN_IF_ERROR(s.CheckpointAll(readmit));
  }

  for (Drive& d : s.drives) d.journal_used = d.journal.used_bytes();
  s.open_nanos = uint64_t(MonotonicNanos() - start);
  size_t online = size_t(std::count_if(s.drives.begin(), s.drives.end(),
                                       [](const Drive& d) { return d.state != DriveState::kOffline; }));
  LOG_INFO_C("drive") << "extent store " << s.store_uuid.ToString() << ": " << values << " values on " << online << " of "
           << s.drives.size() << " drives (" << s.io->name() << "), " << dropped << " dropped, opened in "
           << s.open_nanos / 1000000 << " ms";
  if (options.sync == SyncMode::kInterval && options.sync_interval_ms > 0) {
    ExtentStore::Impl* raw = impl.get();
    impl->flusher = std::thread([raw] {
      SetThreadName("memkv-drive");
      raw->RunFlusher();
    });
  }
  auto store = std::unique_ptr<ExtentStore>(new ExtentStore(std::move(impl)));
  // Values whose TTL ran out while the store was closed: their room back now.
  const size_t expired = store->SweepExpired(SIZE_MAX).size();
  if (expired > 0) LOG_INFO_C("drive") << "extent store: " << expired << " expired values deleted at open";
  return store;
}

}  // namespace memkv::drive
