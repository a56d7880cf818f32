// TieredStore, part two: what needs the drives. The *Later functions queue
// the work on the I/O threads and post the completion back to the caller's
// inbox; the functions below them block and run only on the I/O threads.
#include <algorithm>
#include <atomic>
#include <optional>
#include <unordered_set>
#include <utility>

#include "storage/policy/ttl/expiry_index.h"
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

void TieredStore::CommitLater(PutCommit put, const ReplyTo& reply, StatusDone done) {
  struct Commit {
    PutCommit put;
    Status status;
  };
  auto commit = std::make_shared<Commit>();
  commit->put = std::move(put);
  RunOnDrives(
      1, [this, commit](size_t) { commit->status = WriteThrough(std::move(commit->put)); }, reply,
      [commit, done = std::move(done)]() mutable { done(std::move(commit->status)); });
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
        batch->statuses[i] = WriteThrough(std::move(batch->puts[i]));
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

uint64_t TieredStore::OwnDriveHold(uint32_t t, const QuotaHold& hold) const {
  return t != TenantMap::kNone && drive_holds_.Counts(t, hold) ? hold.bytes() : 0;
}

Status TieredStore::MakeTenantDriveRoom(std::string_view key, uint32_t t, uint64_t size, uint64_t own_held,
                                        bool* evicted) {
  *evicted = false;
  if (t == TenantMap::kNone) return Status::Ok();
  // Room for this put and for what the tenant's other puts in flight hold:
  // together they never pass the quota.
  const uint64_t others = drive_holds_.Others(t, own_held);
  Result<std::vector<drive::RemovedValue>> own = drives_->EvictForTenantQuota(
      key, size + others, [this](std::string_view k) { return memory_->Exists(k); });
  if (!own.ok()) return own.status();
  *evicted = !own->empty();
  drive_evictions_.fetch_add(own->size(), std::memory_order_relaxed);
  NoteDriveRemovals(*own);
  return Status::Ok();
}

Status TieredStore::WithDriveRoom(std::string_view key, uint64_t size, const QuotaHold& hold,
                                  const std::function<Status()>& attempt) {
  const uint64_t block = drives_->block_size_bytes();
  const uint64_t extents = std::max<uint64_t>(1, (size + block - 1) / block);
  const uint32_t t = Tenants()->Find(key);
  const uint64_t own_held = OwnDriveHold(t, hold);
  bool own_evicted = false;
  Status s = MakeTenantDriveRoom(key, t, size, own_held, &own_evicted);
  if (!s.ok()) {
    write_failures_.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  for (int round = 0; round < kMaxRoomAttempts; ++round) {
    s = attempt();
    if (s.code() != StatusCode::kResourceExhausted) break;
    // Another put of the tenant may have taken the quota meanwhile: its
    // own values again, before anyone else's.
    Status own = MakeTenantDriveRoom(key, t, size, own_held, &own_evicted);
    if (!own.ok()) {
      s = own;
      break;
    }
    if (own_evicted) continue;
    if (!EvictionCanHelp(extents)) break;
    // Values DRAM holds are hot (their reads never reach the drives' LRU):
    // evict them from the drives last. Ask for the bytes this put needs.
    Result<std::vector<drive::RemovedValue>> evicted = drives_->EvictColdestValues(
        std::max<uint64_t>(1, size), [this](std::string_view k) { return memory_->Exists(k); });
    if (!evicted.ok()) break;
    drive_evictions_.fetch_add(evicted->size(), std::memory_order_relaxed);
    NoteDriveRemovals(*evicted);
  }
  if (!s.ok()) write_failures_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

Status TieredStore::WriteThrough(PutCommit commit) {
  const std::string& key = commit.key;
  storage::PendingPut& put = commit.put;
  const KeyLocks::Held held = key_locks_.Lock(key);
  // A pin DRAM will refuse must not reach the drives either.
  MEMKV_RETURN_IF_ERROR(memory_->CheckPinRoom(key, put.size(), commit.options));
  const std::optional<uint64_t> replaced = ReplacedOnDrives(key);
  const drive::ValueAttrs attrs = DriveAttrs(commit.options);
  MEMKV_RETURN_IF_ERROR(
      WithDriveRoom(key, put.size(), put.drive_hold,
                    [&] { return drives_->PutIov(key, put.iov(), commit.checksum, &attrs); }));
  put.drive_hold.Release();  // the tenant's drive bytes count it now
  NoteDrivePut(key, put.size(), commit.options, replaced);
  return PublishWritten(std::move(put), key, commit.checksum, commit.options);
}

Status TieredStore::PublishWritten(storage::PendingPut put, const std::string& key, uint64_t checksum,
                                   const PutOptions& options) {
  Status published = memory_->CommitPut(std::move(put), key, checksum, options);
  if (published.code() != StatusCode::kResourceExhausted) return published;
  // The drives hold the value now; DRAM refused it (the tenant's DRAM quota
  // filled meanwhile): the put is stored, served from the drives, and DRAM
  // must not keep an older copy.
  (void)memory_->Delete(key);
  return Status::Ok();
}

std::vector<Status> TieredStore::PublishWrittenMany(std::vector<PutCommit>& puts, std::span<const size_t> which) {
  std::vector<storage::MemoryStore::Commit> commits;
  commits.reserve(which.size());
  for (size_t i : which) commits.push_back({&puts[i].put, puts[i].key, puts[i].checksum, &puts[i].options});
  std::vector<Status> published = memory_->CommitPuts(commits);
  for (size_t j = 0; j < which.size(); ++j) {
    if (published[j].code() != StatusCode::kResourceExhausted) continue;
    (void)memory_->Delete(puts[which[j]].key);  // as PublishWritten
    published[j] = Status::Ok();
  }
  return published;
}

drive::ValueAttrs TieredStore::DriveAttrs(const PutOptions& options) const {
  drive::ValueAttrs attrs;
  attrs.ttl_ms = memory_->AppliedTtlMs(options);
  attrs.expires_at_ms = storage::policy::ExpiryAfter(memory_->realtime_clock().NowMillis(), attrs.ttl_ms);
  attrs.retention = options.retention;
  attrs.hash_kind = options.hash_kind;
  attrs.parent_key = options.parent_key;
  attrs.block_hash = options.block_hash;
  attrs.parent_hash = options.parent_hash;
  return attrs;
}

PutOptions TieredStore::OptionsFromDrive(const drive::ValueAttrs& attrs) const {
  PutOptions options;
  options.retention = attrs.retention;
  options.ttl_ms = attrs.ttl_ms;
  if (attrs.expires_at_ms != 0 && attrs.retention != Retention::kPinned) {
    // What is left of it; at least 1 ms (a lookup found it unexpired).
    const int64_t left = attrs.expires_at_ms - memory_->realtime_clock().NowMillis();
    options.ttl_ms = uint64_t(std::max<int64_t>(left, 1));
  }
  options.hash_kind = attrs.hash_kind;
  options.parent_key = attrs.parent_key;
  options.block_hash = attrs.block_hash;
  options.parent_hash = attrs.parent_hash;
  return options;
}

std::optional<uint64_t> TieredStore::ReplacedOnDrives(std::string_view key) const {
  if (!Observes(storage::StoreEventKind::kRemoved, storage::RemovalReason::kReplaced)) return std::nullopt;
  return drives_->ValueSize(key);
}

void TieredStore::NoteDriveRemovals(const std::vector<drive::RemovedValue>& removed) {
  if (!options_.observer) return;
  for (const drive::RemovedValue& r : removed) {
    const PutOptions options = OptionsFromDrive(r.attrs);
    NoteDriveEvent(storage::StoreEventKind::kRemoved,
                   r.expired ? storage::RemovalReason::kExpired : storage::RemovalReason::kEvicted, r.key,
                   r.size_bytes, &options);
  }
}

void TieredStore::NoteDriveEvent(storage::StoreEventKind kind, storage::RemovalReason reason, std::string_view key,
                                 uint64_t size, const PutOptions* options) {
  if (!Observes(kind, reason)) return;
  storage::StoreEvent event;
  event.kind = kind;
  event.medium = storage::StoreMedium::kDrive;
  event.reason = reason;
  event.key.assign(key);
  event.value_size = size;
  if (options != nullptr) {
    event.block_hash = options->block_hash;
    event.parent_hash = options->parent_hash;
    event.hash_kind = options->hash_kind;
    event.retention = options->retention;
  }
  event.seq = drive_event_seq_.fetch_add(1, std::memory_order_relaxed) + 1;
  options_.observer(event);
}

void TieredStore::NoteDrivePut(std::string_view key, uint64_t size, const PutOptions& options,
                               std::optional<uint64_t> replaced_size) {
  if (replaced_size) {
    NoteDriveEvent(storage::StoreEventKind::kRemoved, storage::RemovalReason::kReplaced, key, *replaced_size, nullptr);
  }
  NoteDriveEvent(storage::StoreEventKind::kStored, storage::RemovalReason::kNone, key, size, &options);
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
  const KeyLocks::Held held = key_locks_.Lock(key);
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
    // Within the tenant's DRAM quota (its own coldest values make room),
    // or not promoted: a get does not fail for the quota.
    Result<storage::PendingPut> put = memory_->BeginPut(size, key, storage::QuotaUse::kPromotion);
    if (put.ok()) {
      MEMKV_ASSIGN_OR_RETURN(drive::ValueInfo read, drives_->GetIov(key, put->iov()));
      if (read.size_bytes != size) return resized(read);
      PutOptions options = OptionsFromDrive(read.attrs);
      // A pin the DRAM cap has no room for is promoted as a normal value
      // (its drive copy stays pinned): a get must not fail for it.
      if (!memory_->CheckPinRoom(key, size, options).ok()) options.retention = Retention::kNormal;
      Status published = memory_->CommitPut(std::move(put).value(), key, read.checksum, options);
      if (!published.ok() && published.code() != StatusCode::kResourceExhausted) return published;
      Result<storage::ReadHandle> pinned = published.ok() ? memory_->Get(key) : Result<storage::ReadHandle>(published);
      if (published.ok()) promotions_.fetch_add(1, std::memory_order_relaxed);
      if (pinned.ok()) {
        drive_hits_.fetch_add(1, std::memory_order_relaxed);
        return StoredValue::Pinned(std::move(pinned).value());
      }
      // Evicted again by other puts before it could be pinned, or refused
      // at the tenant's quota meanwhile; the drives still hold it.
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
  const KeyLocks::Held held = key_locks_.Lock(key);
  const std::optional<uint64_t> size = Observes(storage::StoreEventKind::kRemoved, storage::RemovalReason::kDeleted)
                                            ? drives_->ValueSize(key)
                                            : std::nullopt;
  Status on_drive = drives_->Delete(key);
  if (!on_drive.ok() && on_drive.code() != StatusCode::kNotFound) return on_drive;  // still readable
  if (on_drive.ok()) {
    NoteDriveEvent(storage::StoreEventKind::kRemoved, storage::RemovalReason::kDeleted, key, size.value_or(0), nullptr);
  }
  Status in_dram = memory_->Delete(key);
  return on_drive.ok() ? Status::Ok() : in_dram;
}

std::vector<Status> TieredStore::WriteThroughMany(std::vector<PutCommit> puts) {
  std::vector<Status> statuses(puts.size());
  std::vector<bool> needs_room(puts.size(), false);
  {
    // The keys' locks, all at once (no deadlock with another batch or a
    // single put).
    std::vector<std::string_view> names;
    names.reserve(puts.size());
    for (const PutCommit& p : puts) names.push_back(p.key);
    const KeyLocks::Held held = key_locks_.LockAll(names);

    std::vector<drive::ExtentStore::IovPut> writes;
    writes.reserve(puts.size());
    std::vector<size_t> sent;  // puts[sent[j]] is writes[j]
    std::vector<std::optional<uint64_t>> replaced;
    std::vector<drive::ValueAttrs> attrs;
    attrs.reserve(puts.size());  // never reallocated: writes point into it
    // Room in each tenant's drive quota for what the batch adds to it.
    const std::shared_ptr<const TenantMap> tenants = Tenants();
    std::vector<uint64_t> batch_bytes(tenants->size(), 0);
    std::vector<uint64_t> batch_held(tenants->size(), 0);  // what the batch's puts hold of each quota
    for (const PutCommit& p : puts) {
      const uint32_t t = tenants->Find(p.key);
      if (t != TenantMap::kNone) batch_held[t] += OwnDriveHold(t, p.put.drive_hold);
    }
    for (size_t i = 0; i < puts.size(); ++i) {
      const PutCommit& p = puts[i];
      statuses[i] = memory_->CheckPinRoom(p.key, p.put.size(), p.options);
      if (!statuses[i].ok()) continue;
      if (const uint32_t t = tenants->Find(p.key); t != TenantMap::kNone) {
        batch_bytes[t] += p.put.size();
        bool evicted = false;
        statuses[i] = MakeTenantDriveRoom(p.key, t, batch_bytes[t], batch_held[t], &evicted);
        if (!statuses[i].ok()) {
          batch_bytes[t] -= p.put.size();
          write_failures_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
      }
      sent.push_back(i);
      attrs.push_back(DriveAttrs(p.options));
      writes.push_back({p.key, p.put.iov(), p.checksum, &attrs.back()});
      replaced.push_back(ReplacedOnDrives(p.key));
    }
    std::vector<Status> written = drives_->PutManyIov(writes);
    std::vector<size_t> publish;  // the puts the drives hold now, published in DRAM together
    for (size_t j = 0; j < sent.size(); ++j) {
      const size_t i = sent[j];
      if (written[j].ok()) {
        NoteDrivePut(puts[i].key, puts[i].put.size(), puts[i].options, replaced[j]);
        publish.push_back(i);
      } else if (written[j].code() == StatusCode::kResourceExhausted) {
        needs_room[i] = true;  // below, alone, evicting for room as a single put does
      } else {
        statuses[i] = std::move(written[j]);
        write_failures_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    std::vector<Status> published = PublishWrittenMany(puts, publish);
    for (size_t j = 0; j < publish.size(); ++j) statuses[publish[j]] = std::move(published[j]);
  }
  for (size_t i = 0; i < puts.size(); ++i) {
    if (needs_room[i]) statuses[i] = WriteThrough(std::move(puts[i]));
  }
  return statuses;
}

std::vector<std::pair<uint64_t, CompletionInbox::Closure>> TieredStore::FinishTurn(TurnCommits& turn) {
  std::vector<PutCommit> puts = std::move(turn.puts_);
  std::vector<TurnCommits::Waiter> waiters = std::move(turn.waiters_);
  std::shared_ptr<CompletionInbox> inbox = std::move(turn.inbox_);
  turn.puts_.clear();
  turn.waiters_.clear();
  if (puts.empty() || drives_->sync_mode() == drive::SyncMode::kInterval) {
    return WriteTurn(std::move(puts), std::move(waiters));
  }
  // The flush on this thread while flushes are fast: no hand-off to an I/O
  // thread and back, two wake-ups a turn. After a slow one, or while one
  // runs long, the I/O threads take the turns until flushes are fast again
  // (their commits' flushes are timed too).
  if (options_.flush_on_loop_ns > 0 && drives_->FlushesWithin(options_.flush_on_loop_ns)) {
    loop_commits_.fetch_add(1, std::memory_order_relaxed);
    return WriteTurn(std::move(puts), std::move(waiters));
  }
  struct Job {
    std::vector<PutCommit> puts;
    std::vector<TurnCommits::Waiter> waiters;
    std::shared_ptr<CompletionInbox> inbox;
  };
  auto job = std::make_shared<Job>(Job{std::move(puts), std::move(waiters), std::move(inbox)});
  io_->Submit([this, job] { job->inbox->PostMany(WriteTurn(std::move(job->puts), std::move(job->waiters))); });
  return {};
}

std::vector<std::pair<uint64_t, CompletionInbox::Closure>> TieredStore::WriteTurn(
    std::vector<PutCommit> puts, std::vector<TurnCommits::Waiter> waiters) {
  std::vector<std::pair<uint64_t, CompletionInbox::Closure>> done;
  if (puts.size() == 1 && waiters.size() == 1 && waiters[0].one) {  // a turn of one put: no batch to build
    Status status = WriteThrough(std::move(puts[0]));
    done.emplace_back(waiters[0].owner, [one = std::move(waiters[0].one), s = std::move(status)]() mutable {
      one(std::move(s));
    });
    return done;
  }
  // Runs of distinct keys, each one drive commit, in order: a key deferred
  // twice in one turn ends with its later value.
  std::vector<Status> statuses;
  statuses.reserve(puts.size());
  std::unordered_set<std::string_view> keys;
  size_t begin = 0;
  for (size_t i = 0; i <= puts.size(); ++i) {
    if (i < puts.size() && keys.insert(puts[i].key).second) continue;
    keys.clear();
    if (i == begin) break;  // nothing deferred
    std::vector<PutCommit> run(std::make_move_iterator(puts.begin() + ptrdiff_t(begin)),
                               std::make_move_iterator(puts.begin() + ptrdiff_t(i)));
    for (Status& s : WriteThroughMany(std::move(run))) statuses.push_back(std::move(s));
    begin = i;
    if (i < puts.size()) keys.insert(puts[i].key);
  }
  done.reserve(waiters.size());
  for (TurnCommits::Waiter& w : waiters) {
    if (w.one) {
      done.emplace_back(w.owner, [one = std::move(w.one), s = std::move(statuses[w.first])]() mutable {
        one(std::move(s));
      });
      continue;
    }
    std::vector<Status> mine(std::make_move_iterator(statuses.begin() + ptrdiff_t(w.first)),
                             std::make_move_iterator(statuses.begin() + ptrdiff_t(w.first + w.count)));
    done.emplace_back(w.owner, [many = std::move(w.many), mine = std::move(mine)]() mutable {
      many(std::move(mine));
    });
  }
  return done;
}

}  // namespace memkv::tier
