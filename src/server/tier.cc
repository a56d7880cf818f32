#include "server/tier.h"

#include <algorithm>
#include <utility>

#include "base/log.h"

namespace memkv {
namespace {

// A DRAM-full eviction round per attempt; a put that still finds no room
// after this many rounds fails with the drives' own message.
constexpr int kMaxRoomAttempts = 4;

FetchedValue FromHandle(ReadHandle handle) {
  FetchedValue v;
  v.in_dram = true;
  v.size = handle.size();
  v.checksum = handle.checksum();
  v.handle = std::move(handle);
  return v;
}

}  // namespace

Tier::Tier(MemoryStore* memory, ExtentStore* drives, const TierOptions& options)
    : memory_(memory), drives_(drives), options_(options) {
  if (drives_ == nullptr) return;
  const int n = std::max(1, options_.io_threads);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
}

Tier::~Tier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void Tier::Submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void Tier::Loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and every queued job has run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

std::mutex& Tier::StripeFor(std::string_view key) {
  return stripes_[std::hash<std::string_view>{}(key) % stripes_.size()];
}

bool Tier::Exists(std::string_view key) {
  return memory_->Exists(key) || (drives_ != nullptr && drives_->Exists(key));
}

std::optional<uint64_t> Tier::ValueSize(std::string_view key) {
  if (std::optional<uint64_t> size = memory_->ValueSize(key)) return size;
  if (drives_ != nullptr) return drives_->ValueSize(key);
  return std::nullopt;
}

void Tier::OfferKeys(KeyPage* page) {
  memory_->OfferKeys(page);
  if (drives_ != nullptr) drives_->OfferKeys(page);
}

bool Tier::OnDriveOnly(std::string_view key) {
  return drives_ != nullptr && !memory_->Exists(key) && drives_->Exists(key);
}

Status Tier::WriteThrough(PendingPut put, const std::string& key, uint64_t checksum) {
  std::lock_guard<std::mutex> lock(StripeFor(key));
  const uint64_t block = drives_->block_size_bytes();
  const uint64_t extents = std::max<uint64_t>(1, (put.size() + block - 1) / block);
  Status s;
  for (int attempt = 0; attempt < kMaxRoomAttempts; ++attempt) {
    s = drives_->PutIov(key, put.iov(), checksum);
    if (s.code() != StatusCode::kResourceExhausted || !EvictionCanHelp(extents)) break;
    // Values DRAM holds are hot (their reads never reach the drives' LRU):
    // evict them from the drives last. Ask for the bytes this put needs.
    Result<std::vector<std::string>> evicted = drives_->EvictColdest(
        std::max<uint64_t>(1, put.size()), [this](std::string_view k) { return memory_->Exists(k); });
    if (!evicted.ok()) break;
    drive_evictions_.fetch_add(evicted->size(), std::memory_order_relaxed);
  }
  if (!s.ok()) {
    write_failures_.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  return memory_->CommitPut(std::move(put), key, checksum);
}

// Evicting makes room only on drives that take new extents (not full after
// ENOSPC, not offline), and only for a value that fits them at all.
bool Tier::EvictionCanHelp(uint64_t extents) const {
  const ExtentStoreStats stats = drives_->Stats();
  uint64_t slots = 0;
  for (const DriveStats& d : stats.drives) {
    if (d.state == DriveState::kOnline) slots += d.slots_total;
  }
  return extents <= slots;
}

Result<FetchedValue> Tier::Fetch(const std::string& key, bool need_dram) {
  std::lock_guard<std::mutex> lock(StripeFor(key));
  // Another request may have promoted it while this one waited.
  if (Result<ReadHandle> h = memory_->Get(key); h.ok()) return FromHandle(std::move(h).value());
  MEMKV_ASSIGN_OR_RETURN(ValueInfo info, drives_->Stat(key));
  if (options_.promote_on_read || need_dram) {
    Result<PendingPut> put = memory_->BeginPut(info.size_bytes);
    if (put.ok()) {
      MEMKV_ASSIGN_OR_RETURN(ValueInfo read, drives_->GetIov(key, put->iov()));
      drive_hits_.fetch_add(1, std::memory_order_relaxed);
      MEMKV_RETURN_IF_ERROR(memory_->CommitPut(std::move(put).value(), key, read.checksum));
      promotions_.fetch_add(1, std::memory_order_relaxed);
      MEMKV_ASSIGN_OR_RETURN(ReadHandle h, memory_->Get(key));
      return FromHandle(std::move(h));
    }
    if (need_dram) {
      return ResourceExhausted("value of " + std::to_string(info.size_bytes) +
                               " bytes is on a drive and the DRAM pool has no room to stage it for RDMA: " +
                               put.status().message());
    }
  }
  FetchedValue v;
  v.bytes.resize(info.size_bytes);
  const iovec one{v.bytes.data(), v.bytes.size()};
  MEMKV_ASSIGN_OR_RETURN(ValueInfo read, drives_->GetIov(key, std::span<const iovec>(&one, 1)));
  drive_hits_.fetch_add(1, std::memory_order_relaxed);
  v.size = read.size_bytes;
  v.checksum = read.checksum;
  return v;
}

Status Tier::Delete(const std::string& key) {
  std::lock_guard<std::mutex> lock(StripeFor(key));
  Status on_drive = drives_->Delete(key);
  if (!on_drive.ok() && on_drive.code() != StatusCode::kNotFound) return on_drive;  // still readable
  Status in_dram = memory_->Delete(key);
  return on_drive.ok() ? Status::Ok() : in_dram;
}

TierCounters Tier::Counters() const {
  return TierCounters{.drive_hits = drive_hits_.load(std::memory_order_relaxed),
                      .promotions = promotions_.load(std::memory_order_relaxed),
                      .drive_evictions = drive_evictions_.load(std::memory_order_relaxed),
                      .write_failures = write_failures_.load(std::memory_order_relaxed)};
}

}  // namespace memkv
