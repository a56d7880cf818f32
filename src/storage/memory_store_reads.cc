// MemoryStore: reads. Get pins a value and checks its bytes (now, or later
// through ReadHandle::CheckLater); a mismatch drops it. See memory_store.h.
#include <cstring>
#include <utility>

#include "base/checksum.h"
#include "base/log.h"
#include "base/units.h"
#include "storage/memory_store_impl.h"

namespace memkv::storage {

Result<ReadHandle> MemoryStore::Get(std::string_view key, ReadCheck check) {
  Impl& s = *impl_;
  std::shared_ptr<StoreEntry> entry;
  {
    Impl::EventScope scope(s);
    auto it = s.FindLiveLocked(key);
    if (it == s.index.end()) {
      s.misses.fetch_add(1, std::memory_order_relaxed);
      return NotFound("Get: key " + KeyForLog(key) + " not present");
    }
    entry = it->second;
    s.PinLocked(entry.get());
    // Only a pin's TTL reads the time: no clock read for the others.
    s.policies.OnTouch(*entry, entry->retention_pinned() ? s.realtime->NowMillis() : 0);
  }

  if (check == ReadCheck::kNow) {
    // The pin keeps the bytes ours while we hash them unlocked.
    Status checked = CheckPinned(entry);
    if (!checked.ok()) {
      Unpin(entry);
      s.misses.fetch_add(1, std::memory_order_relaxed);
      return NotFound("Get: key " + KeyForLog(key) + " dropped: checksum mismatch");
    }
  }
  s.hits.fetch_add(1, std::memory_order_relaxed);
  ReadHandle handle;
  handle.store_ = this;
  handle.entry_ = std::move(entry);
  handle.unchecked_ = check == ReadCheck::kLater;
  return handle;
}

Status MemoryStore::CheckPinnedLater(const std::shared_ptr<StoreEntry>& entry) {
  Impl& s = *impl_;
  if (s.read_check_interval > 0) {
    const Nanos at = entry->checked_at.load(std::memory_order_relaxed);
    if (at != StoreEntry::kNeverChecked && s.clock->NowNanos() - at < s.read_check_interval) {
      s.later_checks_skipped.fetch_add(1, std::memory_order_relaxed);
      return Status::Ok();
    }
  }
  s.later_checks.fetch_add(1, std::memory_order_relaxed);
  return CheckPinned(entry);
}

Status MemoryStore::CheckPinned(const std::shared_ptr<StoreEntry>& entry) {
  Impl& s = *impl_;
  const uint64_t actual = ChecksumIov(entry->iov);
  if (actual == entry->checksum) {
    if (s.read_check_interval > 0) entry->checked_at.store(s.clock->NowNanos(), std::memory_order_relaxed);
    return Status::Ok();
  }
  {
    Impl::EventScope scope(s);
    // A concurrent overwrite or delete may already have replaced it; then
    // the index holds a different value that is not ours to drop.
    if (entry->state == EntryState::kLinked) s.UnlinkLocked(s.index.find(entry->key), RemovalReason::kChecksum);
  }
  s.checksum_failures.fetch_add(1, std::memory_order_relaxed);
  LOG_WARN_C("memory") << "MemoryStore: checksum mismatch on key " << KeyForLog(entry->key) << " ("
                       << FormatSize(entry->size()) << "): stored " << std::hex << entry->checksum << ", computed "
                       << actual << std::dec << "; value dropped";
  return Corruption("key " + KeyForLog(entry->key) + ": checksum mismatch, value dropped");
}


void MemoryStore::Unpin(const std::shared_ptr<StoreEntry>& entry) {
  MutexLock lock(impl_->mu);
  impl_->UnpinLocked(entry.get());
}


// ---------------------------------------------------------------------------
// ReadHandle

ReadHandle::ReadHandle(ReadHandle&& other) noexcept
    : store_(std::exchange(other.store_, nullptr)),
      entry_(std::move(other.entry_)),
      unchecked_(std::exchange(other.unchecked_, false)) {}

ReadHandle& ReadHandle::operator=(ReadHandle&& other) noexcept {
  if (this != &other) {
    if (store_ != nullptr) store_->Unpin(entry_);
    store_ = std::exchange(other.store_, nullptr);
    entry_ = std::move(other.entry_);
    unchecked_ = std::exchange(other.unchecked_, false);
  }
  return *this;
}

Status ReadHandle::CheckLater() {
  if (!unchecked_ || store_ == nullptr) return Status::Ok();
  unchecked_ = false;
  return store_->CheckPinnedLater(entry_);
}

ReadHandle::~ReadHandle() {
  if (store_ != nullptr) store_->Unpin(entry_);
}

uint64_t ReadHandle::size() const { return entry_ ? entry_->size() : 0; }
uint64_t ReadHandle::checksum() const { return entry_ ? entry_->checksum : 0; }
std::span<const iovec> ReadHandle::iov() const {
  return entry_ ? std::span<const iovec>(entry_->iov) : std::span<const iovec>();
}

void ReadHandle::CopyTo(void* dst) const {
  auto* out = static_cast<uint8_t*>(dst);
  for (const iovec& v : iov()) {
    std::memcpy(out, v.iov_base, v.iov_len);
    out += v.iov_len;
  }
}

}  // namespace memkv::storage
