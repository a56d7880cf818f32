// ExtentStore: the commit queue, journal appends and checkpoints.
//
// Group commit (as in leveldb's writer queue): each operation enqueues itself
// and waits; the thread whose operation is at the front becomes the leader,
// takes a batch from the front (at most one operation per key, so that a
// batch never has to order two changes of one key), and for the whole batch:
//   1. notes every drive that received extents of a Put in the batch,
//   2. decides each operation against the index (a Delete of an absent key
//      is NotFound; a Put whose drive went offline fails) and assigns
//      sequence numbers,
//   3. appends the records to the journal of every online drive, then
//      fdatasyncs those drives and the drives of step 1, all in one I/O
//      batch: one flush per drive makes both the extents and the records
//      durable,
//   4. applies the records to the index.
// The extents are not flushed before their record is written: after a crash
// in between, a record may name extents that never reached the drive. The
// record's checksum of the whole value, checked on every read, catches that,
// and the value is then absent, never wrong; that put had not been
// acknowledged. The key's previous value is gone then too (docs/storage.md).
// Only then are the batch's operations acknowledged. Because the leader
// applies before it hands over, a checkpoint (which runs in the leader) sees
// every record ever journaled in the index.
#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "base/errno_text.h"
#include "base/log.h"
#include "drive/extent_store_impl.h"

namespace memkv::drive {
namespace {

constexpr size_t kMaxBatchOps = 256;
// The longest a leader waits for staged puts (WaitForStaging), whatever a
// flush takes.
constexpr Nanos kMaxStagingWaitNanos = 1'000'000;
constexpr int kMaxDepth = 4;  // nesting of checkpoint <-> append on failures

JournalRecord OfflineRecordLocked(ExtentStore::Impl& s, uint32_t drive) MEMKV_REQUIRES(s.mu) {
  JournalRecord r;
  r.type = RecordType::kDriveOffline;
  r.sequence = s.next_sequence++;
  r.drive_index = drive;
  r.drive_uuid = s.drives[drive].sb.drive_uuid;  // zero for a drive that never opened
  return r;
}

bool HasKey(CommitOp::Kind k) { return k == CommitOp::Kind::kPut || k == CommitOp::Kind::kDelete; }

// The put record of an index entry, with its sequence (0 for one not yet
// assigned).
JournalRecord PutRecordOf(const Entry& e) {
  JournalRecord r;
  r.type = RecordType::kPut;
  r.sequence = e.sequence;
  r.key = e.key;
  r.generation = e.generation;
  r.value_bytes = e.value_bytes;
  r.value_checksum = e.value_checksum;
  r.extents = e.extents;
  r.attrs = e.attrs;
  r.seals = e.seals;
  return r;
}

}  // namespace

bool ExtentStore::Impl::BeginStaging(size_t n) {
  if (n == 0) return false;
  MutexLock lock(commit_mu);
  const bool busy = staged_puts > 0 || !commit_queue.empty() || last_batch_ops > 1;
  staged_puts += n;
  return busy;
}

void ExtentStore::Impl::EndStaging(size_t n) {
  MutexLock lock(commit_mu);
  staged_puts -= n;
  if (leader_waiting) staging_cv.notify_one();
}

void ExtentStore::Impl::WaitForStaging(MutexLock& lock) {
  if (staged_puts == 0 || commit_queue.front()->kind != CommitOp::Kind::kPut) return;
  // As long as a flush takes, at most: a put that joins later still waits
  // less than the flush its own commit would cost.
  const Nanos budget = options.staged_wait_ns >= 0
                           ? options.staged_wait_ns
                           : std::min(last_flush.load(std::memory_order_relaxed), kMaxStagingWaitNanos);
  if (budget <= 0) return;
  commit_waits.fetch_add(1, std::memory_order_relaxed);
  leader_waiting = true;
  lock.WaitFor(staging_cv, std::chrono::nanoseconds(budget), [&]() MEMKV_REQUIRES(commit_mu) {
    return staged_puts == 0 || commit_queue.size() >= kMaxBatchOps;
  });
  leader_waiting = false;
}

void ExtentStore::Impl::Commit(std::span<CommitOp* const> ops) {
  MutexLock lock(commit_mu);
  bool joined = false;
  for (CommitOp* op : ops) {
    commit_queue.push_back(op);
    if (op->staged) {
      op->staged = false;
      --staged_puts;
      joined = true;
    }
  }
  if (joined && leader_waiting) staging_cv.notify_one();
  auto all_done = [&] { return std::all_of(ops.begin(), ops.end(), [](const CommitOp* o) { return o->done; }); };
  auto mine = [&](const CommitOp* o) { return std::find(ops.begin(), ops.end(), o) != ops.end(); };
  for (;;) {
    lock.Wait(commit_cv, [&]() MEMKV_REQUIRES(commit_mu) { return all_done() || mine(commit_queue.front()); });
    if (all_done()) return;
    WaitForStaging(lock);
    std::vector<CommitOp*> batch;
    std::set<std::string_view> keys;
    for (CommitOp* op : commit_queue) {
      if (batch.size() >= kMaxBatchOps) break;
      if (op->kind == CommitOp::Kind::kCheckpoint) {
        if (batch.empty()) batch.push_back(op);
        break;
      }
      if (HasKey(op->kind) && !keys.insert(op->key).second) break;
      batch.push_back(op);
    }
    last_batch_ops = batch.size();
    lock.Unlock();
    ProcessBatch(batch);
    lock.Lock();
    for (size_t i = 0; i < batch.size(); ++i) {
      commit_queue.front()->done = true;
      commit_queue.pop_front();
    }
    commit_cv.notify_all();
  }
}

void ExtentStore::Impl::ProcessBatch(std::span<CommitOp*> batch) {
  if (batch.size() == 1 && batch[0]->kind == CommitOp::Kind::kCheckpoint) {
    batch[0]->status = CheckpointAll({});
    return;
  }
  // 1. The drives whose new extents the journal's flush must cover.
  std::vector<uint32_t> data_drives;
  for (const CommitOp* op : batch) {
    if (op->kind != CommitOp::Kind::kPut) continue;
    for (const ExtentRef& e : op->extents) data_drives.push_back(e.drive);
  }
  std::sort(data_drives.begin(), data_drives.end());
  data_drives.erase(std::unique(data_drives.begin(), data_drives.end()), data_drives.end());

  // A put's record and index entry, built before the lock is taken: what
  // runs under it is only the decisions, the sequence numbers and the links.
  std::vector<JournalRecord> put_records(batch.size());
  std::vector<std::shared_ptr<Entry>> entries(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const CommitOp& op = *batch[i];
    if (op.kind != CommitOp::Kind::kPut) continue;
    auto e = std::make_shared<Entry>();
    e->key = std::string(op.key);
    e->generation = op.generation;
    e->value_bytes = op.value_bytes;
    e->value_checksum = op.value_checksum;
    e->extents = op.extents;
    e->attrs = op.attrs;
    e->seals = op.seals;
    put_records[i] = PutRecordOf(*e);
    entries[i] = std::move(e);
  }

  // 2. Decide, and assign sequence numbers.
  std::vector<JournalRecord> records;
  std::vector<bool> has_record(batch.size(), false);
  {
    MutexLock lock(mu);
    for (size_t i = 0; i < batch.size(); ++i) {
      CommitOp& op = *batch[i];
      JournalRecord r;
      switch (op.kind) {
        case CommitOp::Kind::kPut: {
          auto down = std::find_if(op.extents.begin(), op.extents.end(), [&](const ExtentRef& e) {
            return drives[e.drive].state == DriveState::kOffline;
          });
          if (down != op.extents.end()) {
            const Drive& d = drives[down->drive];
            op.status = IoError("put " + KeyForLog(op.key) + ": " + DriveName(d) + " went offline: " + d.reason);
            op.drive_failed = true;
            continue;
          }
          r = std::move(put_records[i]);
          break;
        }
        case CommitOp::Kind::kDelete: {
          auto it = index.find(op.key);
          if (it == index.end() || (op.expect_generation != 0 && it->second->generation != op.expect_generation)) {
            op.status = NotFound("key " + KeyForLog(op.key) + " not present");
            continue;
          }
          r.type = RecordType::kDelete;
          r.key = std::string(op.key);
          break;
        }
        case CommitOp::Kind::kOffline:
          if (drives[op.drive].marked_offline) continue;  // already durable
          r = OfflineRecordLocked(*this, op.drive);
          records.push_back(std::move(r));
          has_record[i] = true;
          continue;
        case CommitOp::Kind::kCheckpoint:
          continue;  // batched alone, above
      }
      r.sequence = next_sequence++;
      op.sequence = r.sequence;
      records.push_back(std::move(r));
      has_record[i] = true;
    }
  }

  // 3. Journal.
  Status journaled = records.empty() ? Status::Ok() : AppendToJournals(std::move(records), 0, data_drives);

  // 4. Apply.
  MutexLock lock(mu);
  if (journaled.ok()) counters.journal_commits++;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!has_record[i]) continue;
    CommitOp& op = *batch[i];
    if (!journaled.ok()) {
      op.status = journaled;
      continue;
    }
    switch (op.kind) {
      case CommitOp::Kind::kPut: {
        auto down = std::find_if(op.extents.begin(), op.extents.end(), [&](const ExtentRef& e) {
          return drives[e.drive].state == DriveState::kOffline;
        });
        if (down != op.extents.end()) {
          // The record is durable, but a later offline record supersedes it.
          const Drive& d = drives[down->drive];
          op.status = IoError("put " + KeyForLog(op.key) + ": " + DriveName(d) + " went offline: " + d.reason);
          op.drive_failed = true;
          continue;
        }
        auto old = index.find(op.key);
        if (old != index.end()) UnlinkLocked(old->second.get());
        entries[i]->sequence = op.sequence;
        LinkLocked(std::move(entries[i]));
        op.adopted = true;
        op.status = Status::Ok();
        break;
      }
      case CommitOp::Kind::kDelete: {
        auto it = index.find(op.key);
        if (it != index.end() && (op.expect_generation == 0 || it->second->generation == op.expect_generation)) {
          UnlinkLocked(it->second.get());
        }
        op.status = Status::Ok();
        break;
      }
      default:
        op.status = Status::Ok();
        break;
    }
  }
}

void ExtentStore::Impl::MarkJournaledLocked(uint32_t drive) {
  Drive& d = drives[drive];
  d.marked_offline = true;
  std::vector<ExtentRef> release;
  for (const ExtentRef& e : d.orphans) {
    if (drives[e.drive].state != DriveState::kOffline) release.push_back(e);  // nothing to give back there
  }
  FreeUnitsLocked(release);
  d.orphans.clear();
}

Status ExtentStore::Impl::AppendToJournals(std::vector<JournalRecord> records, int depth,
                                           std::span<const uint32_t> data_drives) {
  bool checkpointed = false;
  for (;;) {
    std::vector<uint32_t> targets;
    {
      MutexLock lock(mu);
      for (const Drive& d : drives) {
        if (d.state != DriveState::kOffline && d.journal.appendable()) targets.push_back(d.index);
      }
    }
    if (targets.empty()) return Unavailable("no online drive left to write the journal to");
    std::vector<IoOp> writes;
    Status prepared;
    for (uint32_t t : targets) {
      IoOp op;
      prepared = drives[t].journal.PrepareAppend(records, &op);
      if (!prepared.ok()) break;
      op.buffered = true;
      writes.push_back(op);
    }
    if (prepared.code() == StatusCode::kResourceExhausted && !checkpointed && depth < kMaxDepth) {
      // The active area is full: checkpoint into the other one, then append there.
      MEMKV_RETURN_IF_ERROR(CheckpointAll({}, depth + 1));
      checkpointed = true;
      continue;
    }
    if (prepared.code() == StatusCode::kResourceExhausted) {
      return ResourceExhausted("the journal is full: the live index and this batch do not fit one journal area (" +
                               std::to_string(drives[targets[0]].journal.area_bytes()) +
                               " bytes); evict values or format with a larger journal");
    }
    MEMKV_RETURN_IF_ERROR(prepared);
    io->Run(writes);
    std::vector<uint32_t> written;
    std::vector<std::pair<uint32_t, std::string>> failed;
    for (const IoOp& op : writes) {
      if (op.ok()) written.push_back(op.drive);
      else failed.emplace_back(op.drive, "journal write failed: " + ErrnoName(op.error()));
    }
    std::vector<uint32_t> to_sync = written;
    for (uint32_t d : data_drives) {
      if (std::find(to_sync.begin(), to_sync.end(), d) == to_sync.end()) to_sync.push_back(d);
    }
    // kInterval: written is enough to acknowledge; the flusher makes it durable.
    std::vector<uint32_t> sync_failed;
    if (options.sync == SyncMode::kAlways) {
      sync_failed = SyncDrives(to_sync);
    } else {
      unflushed.store(true, std::memory_order_release);
    }
    for (uint32_t d : sync_failed) {
      if (std::find(written.begin(), written.end(), d) == written.end()) failed.emplace_back(d, "fdatasync failed");
    }
    data_drives = {};  // flushed; a retry below only appends offline records
    std::vector<uint32_t> durable;
    for (uint32_t d : written) {
      if (std::find(sync_failed.begin(), sync_failed.end(), d) != sync_failed.end()) {
        failed.emplace_back(d, "journal fdatasync failed");
      } else {
        durable.push_back(d);
        drives[d].journal.FinishAppend();
      }
    }
    std::vector<JournalRecord> more;
    {
      MutexLock lock(mu);
      for (uint32_t d : durable) drives[d].journal_used = drives[d].journal.used_bytes();
      if (!durable.empty()) {
        for (const JournalRecord& r : records) {
          if (r.type == RecordType::kDriveOffline) MarkJournaledLocked(r.drive_index);
        }
      }
      for (auto& [d, why] : failed) {
        counters.io_errors++;
        if (MarkOfflineLocked(d, why)) more.push_back(OfflineRecordLocked(*this, d));
      }
    }
    if (durable.empty()) {
      return IoError("journal write failed on every online drive: " +
                     (failed.empty() ? std::string("none left") : failed[0].second));
    }
    if (more.empty()) return Status::Ok();
    // The batch is durable on the drives that are left; now they must also
    // say that the failed drives' journals are stale.
    records = std::move(more);
  }
}

std::vector<JournalRecord> ExtentStore::Impl::LiveRecordsLocked() {
  std::vector<JournalRecord> out;
  out.reserve(index.size() + drives.size());
  for (const Drive& d : drives) {
    if (d.state == DriveState::kOffline) out.push_back(OfflineRecordLocked(*this, d.index));
  }
  // Coldest first: replay rebuilds the LRU list in journal order. Each record
  // keeps its sequence: a checkpoint taken in the middle of a batch is
  // followed by that batch's records, whose sequences must stay the higher
  // (a Delete of a value the checkpoint still holds must win at replay).
  policies.eviction().lru().ForEachColdestFirst([&](storage::policy::PolicyEntry& p) {
    out.push_back(PutRecordOf(static_cast<const Entry&>(p)));
    return true;
  });
  return out;
}

Status ExtentStore::Impl::CheckpointAll(const std::vector<uint32_t>& first, int depth) {
  std::vector<JournalRecord> records;
  uint64_t base_sequence = 0;
  uint64_t base_generation = 0;
  std::vector<uint32_t> groups[2];
  {
    MutexLock lock(mu);
    records = LiveRecordsLocked();
    base_sequence = next_sequence;
    base_generation = next_generation;
    for (const Drive& d : drives) {
      if (d.state == DriveState::kOffline) continue;
      bool early = std::find(first.begin(), first.end(), d.index) != first.end();
      groups[early ? 0 : 1].push_back(d.index);
    }
  }
  if (groups[0].empty() && groups[1].empty()) return Unavailable("no online drive left to checkpoint the journal to");

  std::vector<std::pair<uint32_t, std::string>> failed;
  size_t done_drives = 0;
  // Readmitted drives first: until their journals hold the checkpoint, the
  // other drives must keep saying they are stale.
  for (const std::vector<uint32_t>& group : groups) {
    if (group.empty()) continue;
    std::vector<IoOp> record_writes;
    std::vector<IoOp> header_writes;
    for (uint32_t d : group) {
      std::vector<IoOp> rw;
      IoOp hw;
      MEMKV_RETURN_IF_ERROR(drives[d].journal.PrepareCheckpoint(records, base_sequence, base_generation, &rw, &hw));
      record_writes.insert(record_writes.end(), rw.begin(), rw.end());
      header_writes.push_back(hw);
    }
    std::vector<uint32_t> alive = group;
    auto drop = [&](uint32_t d, std::string why) {
      if (std::find(alive.begin(), alive.end(), d) == alive.end()) return;
      alive.erase(std::find(alive.begin(), alive.end(), d));
      failed.emplace_back(d, std::move(why));
    };
    io->Run(record_writes);
    for (const IoOp& op : record_writes) {
      if (!op.ok()) drop(op.drive, "checkpoint write failed: " + ErrnoName(op.error()));
    }
    for (uint32_t d : SyncDrives(alive)) drop(d, "checkpoint fdatasync failed");
    std::vector<IoOp> headers;
    for (const IoOp& op : header_writes) {
      if (std::find(alive.begin(), alive.end(), op.drive) != alive.end()) headers.push_back(op);
    }
    io->Run(headers);
    for (const IoOp& op : headers) {
      if (!op.ok()) drop(op.drive, "checkpoint header write failed: " + ErrnoName(op.error()));
    }
    for (uint32_t d : SyncDrives(alive)) drop(d, "checkpoint header fdatasync failed");
    for (uint32_t d : alive) drives[d].journal.FinishCheckpoint();
    {
      MutexLock lock(mu);
      for (uint32_t d : alive) drives[d].journal_used = drives[d].journal.used_bytes();
    }
    done_drives += alive.size();
  }

  std::vector<JournalRecord> more;
  {
    MutexLock lock(mu);
    if (done_drives > 0) {
      counters.checkpoints++;
      for (const JournalRecord& r : records) {
        if (r.type == RecordType::kDriveOffline) MarkJournaledLocked(r.drive_index);
      }
    }
    for (auto& [d, why] : failed) {
      counters.io_errors++;
      if (MarkOfflineLocked(d, why)) more.push_back(OfflineRecordLocked(*this, d));
    }
  }
  if (done_drives == 0) return IoError("checkpoint failed on every online drive: " + failed[0].second);
  if (!more.empty()) {
    if (depth >= kMaxDepth) return IoError("checkpoint: drives kept failing: " + failed[0].second);
    return AppendToJournals(std::move(more), depth + 1);
  }
  LOG_DEBUG_C("drive") << "extent store: checkpointed " << records.size() << " records";
  return Status::Ok();
}

}  // namespace memkv::drive
