// TieredStore, part two: what needs the drives. The *Later functions queue
// the work on the I/O threads and post the completion back to the caller's
// inbox; the functions below them block and run only on the I/O threads.
#include <algorithm>
#include <atomic>
#include <utility>

#include "tier/tiered_store.h"

namespace memkv::tier {
namespace {

// A DRAM-full eviction round per attempt; a put that still finds no room
// after this many rounds fails with the drives' own message.
constexpr int kMaxRoomAttempts = 4;

}  // namespace

void TieredStore::RunOnDrives(size_t parts, std::function<void(size_t)> part, const ReplyTo& reply,
                              CompletionInbox::Closure finish) {
  struct Fanout {
    std::function<void(size_t)> part;
    std::atomic<size_t> left;
    ReplyTo reply;
    CompletionInbox::Closure finish;
  };
  auto fanout = std::make_shared<Fanout>();
  fanout->part = std::move(part);
  fanout->left.store(parts, std::memory_order_relaxed);
  fanout->reply = reply;
  fanout->finish = std::move(finish);
  for (size_t i = 0; i < parts; ++i) {
    io_->Submit([fanout, i] {
      fanout->part(i);
      if (fanout->left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        fanout->reply.inbox->Post(fanout->reply.owner, std::move(fanout->finish));
      }
    });
  }
}

void TieredStore::CommitLater(storage::PendingPut put, std::string key, uint64_t checksum, const ReplyTo& reply,
                              StatusDone done) {
  struct Commit {
    PutCommit put;
    Status status;
  };
  auto commit = std::make_shared<Commit>();
  commit->put = PutCommit{std::move(put), std::move(key), checksum};
  RunOnDrives(
      1, [this, commit](size_t) { commit->status = WriteThrough(std::move(commit->put.put), commit->put.key, commit->put.checksum); },
      reply, [commit, done = std::move(done)]() mutable { done(std::move(commit->status)); });
}

void TieredStore::CommitManyLater(std::vector<PutCommit> puts, bool together, const ReplyTo& reply,
                                  StatusesDone done) {
  struct Batch {
    std::vector<PutCommit> puts;
    std::vector<Status> statuses;
  };
  auto batch = std::make_shared<Batch>();
  batch->statuses.resize(puts.size());
  batch->puts = std::move(puts);
  if (together) {
    RunOnDrives(
        1, [this, batch](size_t) { batch->statuses = WriteThroughMany(std::move(batch->puts)); }, reply,
        [batch, done = std::move(done)]() mutable { done(std::move(batch->statuses)); });
    return;
  }
  RunOnDrives(
      batch->puts.size(),
      [this, batch](size_t i) {
        PutCommit& p = batch->puts[i];
        batch->statuses[i] = WriteThrough(std::move(p.put), p.key, p.checksum);
      },
      reply, [batch, done = std::move(done)]() mutable { done(std::move(batch->statuses)); });
}

void TieredStore::GetLater(std::string key, uint64_t size, ReadNeed need, const ReplyTo& reply, ValueDone done) {
  struct Read {
    std::string key;
    Result<StoredValue> value = NotFound("");
  };
  auto read = std::make_shared<Read>();
  read->key = std::move(key);
  RunOnDrives(
      1, [this, read, size, need](size_t) { read->value = ReadFromDrives(read->key, size, need); }, reply,
      [read, done = std::move(done)]() mutable { done(std::move(read->value)); });
}

void TieredStore::GetManyLater(std::vector<Result<StoredValue>> values, std::vector<DriveRead> reads,
                               const ReplyTo& reply, ValuesDone done) {
  struct Batch {
    std::vector<Result<StoredValue>> values;
    std::vector<DriveRead> reads;
  };
  auto batch = std::make_shared<Batch>();
  batch->values = std::move(values);
  batch->reads = std::move(reads);
  RunOnDrives(
      batch->reads.size(),
      [this, batch](size_t j) {
        const DriveRead& r = batch->reads[j];
        batch->values[r.index] = ReadFromDrives(r.key, r.size, ReadNeed::kBytes);
      },
      reply, [batch, done = std::move(done)]() mutable { done(std::move(batch->values)); });
}

void TieredStore::DeleteLater(std::string key, const ReplyTo& reply, StatusDone done) {
  struct Removal {
    std::string key;
    Status status;
  };
  auto removal = std::make_shared<Removal>();
  removal->key = std::move(key);
  RunOnDrives(
      1, [this, removal](size_t) { removal->status = DeleteFromBoth(removal->key); }, reply,
      [removal, done = std::move(done)]() mutable { done(std::move(removal->status)); });
}

std::mutex& TieredStore::StripeFor(std::string_view key) {
  return stripes_[std::hash<std::string_view>{}(key) % stripes_.size()];
}

Status TieredStore::WithDriveRoom(uint64_t size, const std::function<Status()>& attempt) {
  const uint64_t block = drives_->block_size_bytes();
  const uint64_t extents = std::max<uint64_t>(1, (size + block - 1) / block);
  Status s;
  for (int round = 0; round < kMaxRoomAttempts; ++round) {
    s = attempt();
    if (s.code() != StatusCode::kResourceExhausted || !EvictionCanHelp(extents)) break;
    // Values DRAM holds are hot (their reads never reach the drives' LRU):
    // evict them from the drives last. Ask for the bytes this put needs.
    Result<std::vector<std::string>> evicted = drives_->EvictColdest(
        std::max<uint64_t>(1, size), [this](std::string_view k) { return memory_->Exists(k); });
    if (!evicted.ok()) break;
    drive_evictions_.fetch_add(evicted->size(), std::memory_order_relaxed);
  }
  if (!s.ok()) write_failures_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

Status TieredStore::WriteThrough(storage::PendingPut put, const std::string& key, uint64_t checksum) {
  std::lock_guard<std::mutex> lock(StripeFor(key));
  MEMKV_RETURN_IF_ERROR(WithDriveRoom(put.size(), [&] { return drives_->PutIov(key, put.iov(), checksum); }));
  return memory_->CommitPut(std::move(put), key, checksum);
}

// Evicting makes room only on drives that take new extents (not full after
// ENOSPC, not offline), and only for a value that fits them at all.
bool TieredStore::EvictionCanHelp(uint64_t extents) const {
  const drive::ExtentStoreStats stats = drives_->Stats();
  uint64_t slots = 0;
  for (const drive::DriveStats& d : stats.drives) {
    if (d.state == drive::DriveState::kOnline) slots += d.slots_total;
  }
  return extents <= slots;
}

Result<StoredValue> TieredStore::ReadFromDrives(const std::string& key, uint64_t size, ReadNeed need) {
  std::lock_guard<std::mutex> lock(StripeFor(key));
  Result<StoredValue> value = ReadOnce(key, size, need);
  if (value.ok() || value.status().code() != StatusCode::kTooLarge) return value;
  // A put of the key ran between the index lookup and this lock, and its
  // value no longer fits the buffer sized for the old one. Under the lock
  // the size holds still: one more lookup, one more read.
  Result<drive::ValueInfo> now = drives_->Stat(key);
  if (!now.ok()) return now.status();
  return ReadOnce(key, now->size_bytes, need);
}

// One read into a buffer of `size` bytes: TooLarge when the value on the
// drives is of another size now (so a shorter value is never published with
// stale bytes after it).
Result<StoredValue> TieredStore::ReadOnce(const std::string& key, uint64_t size, ReadNeed need) {
  const auto resized = [&](const drive::ValueInfo& read) {
    return TooLarge("get '" + key.substr(0, 64) + "': the value changed from " + std::to_string(size) + " to " +
                    std::to_string(read.size_bytes) + " bytes while it was being read");
  };
  if (StreamsPut(size) && need == ReadNeed::kDramPin) {
    return ResourceExhausted("value of " + std::to_string(size) +
                             " bytes is on a drive and over a quarter of the DRAM pool, too large to stage there "
                             "for RDMA; it is read over TCP");
  }
  if ((options_.promote_on_read && !StreamsPut(size)) || need == ReadNeed::kDramPin) {
    Status no_room;
    Result<storage::PendingPut> put = memory_->BeginPut(size);
    if (put.ok()) {
      MEMKV_ASSIGN_OR_RETURN(drive::ValueInfo read, drives_->GetIov(key, put->iov()));
      if (read.size_bytes != size) return resized(read);
      MEMKV_RETURN_IF_ERROR(memory_->CommitPut(std::move(put).value(), key, read.checksum));
      promotions_.fetch_add(1, std::memory_order_relaxed);
      Result<storage::ReadHandle> pinned = memory_->Get(key);
      if (pinned.ok()) {
        drive_hits_.fetch_add(1, std::memory_order_relaxed);
        return StoredValue::Pinned(std::move(pinned).value());
      }
      // Evicted again by other puts before it could be pinned; the drives
      // still hold it.
      no_room = pinned.status();
    } else {
      no_room = put.status();
    }
    if (need == ReadNeed::kDramPin) {
      return ResourceExhausted("value of " + std::to_string(size) +
                               " bytes is on a drive and the DRAM pool has no room to stage it for RDMA: " +
                               no_room.message());
    }
  }
  if (size > kStreamGetBytes) {
    MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<drive::ExtentReader> reader, drives_->BeginGet(key));
    auto stream = std::shared_ptr<ValueStream>(new ValueStream(key, reader->size()));
    stream->checksum_ = reader->checksum();
    stream->reader_ = std::move(reader);
    drive_hits_.fetch_add(1, std::memory_order_relaxed);
    return StoredValue::Streamed(std::move(stream));
  }
  std::vector<uint8_t> bytes(size);
  const iovec one{bytes.data(), bytes.size()};
  MEMKV_ASSIGN_OR_RETURN(drive::ValueInfo read, drives_->GetIov(key, std::span<const iovec>(&one, 1)));
  if (read.size_bytes != size) return resized(read);
  drive_hits_.fetch_add(1, std::memory_order_relaxed);
  return StoredValue::Owned(std::move(bytes), read.checksum);
}

Status TieredStore::DeleteFromBoth(const std::string& key) {
  std::lock_guard<std::mutex> lock(StripeFor(key));
  Status on_drive = drives_->Delete(key);
  if (!on_drive.ok() && on_drive.code() != StatusCode::kNotFound) return on_drive;  // still readable
  Status in_dram = memory_->Delete(key);
  return on_drive.ok() ? Status::Ok() : in_dram;
}

std::vector<Status> TieredStore::WriteThroughMany(std::vector<PutCommit> puts) {
  std::vector<Status> statuses(puts.size());
  std::vector<bool> needs_room(puts.size(), false);
  {
    // The keys' stripes, each locked once, in address order (no deadlock
    // with another batch or a single put).
    std::vector<std::mutex*> stripes;
    for (const PutCommit& p : puts) stripes.push_back(&StripeFor(p.key));
    std::sort(stripes.begin(), stripes.end());
    stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
    std::vector<std::unique_lock<std::mutex>> locks;
    locks.reserve(stripes.size());
    for (std::mutex* m : stripes) locks.emplace_back(*m);

    std::vector<drive::ExtentStore::IovPut> writes;
    writes.reserve(puts.size());
    for (const PutCommit& p : puts) writes.push_back({p.key, p.put.iov(), p.checksum});
    std::vector<Status> written = drives_->PutManyIov(writes);
    for (size_t i = 0; i < puts.size(); ++i) {
      if (written[i].ok()) {
        statuses[i] = memory_->CommitPut(std::move(puts[i].put), puts[i].key, puts[i].checksum);
      } else if (written[i].code() == StatusCode::kResourceExhausted) {
        needs_room[i] = true;  // below, alone, evicting for room as a single put does
      } else {
        statuses[i] = std::move(written[i]);
        write_failures_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  for (size_t i = 0; i < puts.size(); ++i) {
    if (needs_room[i]) statuses[i] = WriteThrough(std::move(puts[i].put), puts[i].key, puts[i].checksum);
  }
  return statuses;
}

}  // namespace memkv::tier
