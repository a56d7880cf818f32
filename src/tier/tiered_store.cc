// TieredStore, part one: construction, the lookups that need no I/O, and
// reporting. The drive paths are in tiered_store_drives.cc.
#include "tier/tiered_store.h"

#include <utility>

namespace memkv::tier {

TieredStore::TieredStore(std::unique_ptr<storage::MemoryStore> memory, std::unique_ptr<drive::ExtentStore> drives,
                         const TieredStoreOptions& options)
    : memory_(std::move(memory)), drives_(std::move(drives)), options_(options), tenants_(std::make_shared<const TenantMap>()) {
  if (drives_ != nullptr) io_ = std::make_unique<IoThreads>(options_.io_threads);
  if (options_.observer) memory_->SetObserver(options_.observer, options_.observed);
}

void TieredStore::SetObserver(storage::StoreObserver observer, storage::StoreEventSet observed) {
  options_.observer = std::move(observer);
  options_.observed = observed;
  memory_->SetObserver(options_.observer, observed);
}

bool TieredStore::Observes(storage::StoreEventKind kind, storage::RemovalReason reason) const {
  return options_.observer && options_.observed.Wants(kind, reason);
}

size_t TieredStore::MatchPrefix(std::span<const std::string_view> keys) {
  size_t matched = 0;
  for (std::string_view key : keys) {
    if (!memory_->Match(key) && (drives_ == nullptr || !drives_->Exists(key))) break;
    ++matched;
  }
  return matched;
}

size_t TieredStore::SweepExpired(size_t max_entries) {
  size_t swept = memory_->SweepExpired(max_entries);
  if (drives_ != nullptr && swept < max_entries) {
    std::vector<drive::RemovedValue> removed = drives_->SweepExpired(max_entries - swept);
    NoteDriveRemovals(removed);
    swept += removed.size();
  }
  return swept;
}

TieredStore::~TieredStore() { io_.reset(); }

bool TieredStore::Exists(std::string_view key) {
  return memory_->Exists(key) || (drives_ != nullptr && drives_->Exists(key));
}

std::optional<uint64_t> TieredStore::ValueSize(std::string_view key) {
  if (std::optional<uint64_t> size = memory_->ValueSize(key)) return size;
  if (drives_ != nullptr) return drives_->ValueSize(key);
  return std::nullopt;
}

void TieredStore::OfferKeys(KeyPage* page) {
  memory_->OfferKeys(page);
  if (drives_ != nullptr) drives_->OfferKeys(page);
}

Result<StoredValue> TieredStore::GetWithoutIo(std::string_view key, storage::ReadCheck check,
                                              std::optional<uint64_t>* drive_size) {
  Result<storage::ReadHandle> pinned = memory_->Get(key, check);
  if (pinned.ok()) return StoredValue::Pinned(std::move(pinned).value());
  if (pinned.status().code() != StatusCode::kNotFound) return pinned.status();
  // The size sizes the read's buffer; the read itself finds the extents.
  if (drives_ != nullptr) {
    if (std::optional<uint64_t> size = drives_->ValueSize(key)) *drive_size = size;
  }
  return NotFound("");  // a miss is answered without a message: none to copy
}

Result<storage::PendingPut> TieredStore::Reserve(uint64_t size, std::string_view key) {
  storage::PendingPut put;
  MEMKV_RETURN_IF_ERROR(Reserve(size, key, &put));
  return put;
}

Status TieredStore::Reserve(uint64_t size, std::string_view key, storage::PendingPut* put) {
  // The drive quota first: a put the drives will take holds its share of
  // the tenant's drive quota before any of its bytes are read.
  QuotaHold drive_hold;
  if (drives_ != nullptr) {
    MEMKV_ASSIGN_OR_RETURN(drive_hold, HoldDriveQuota(key, size));
  }
  MEMKV_RETURN_IF_ERROR(memory_->BeginPut(size, key, storage::QuotaUse::kPut, put));
  put->drive_hold = std::move(drive_hold);
  return Status::Ok();
}

Result<QuotaHold> TieredStore::HoldDriveQuota(std::string_view key, uint64_t size) {
  if (drives_ == nullptr) return QuotaHold();
  const std::shared_ptr<const TenantMap> tenants = Tenants();
  const uint32_t t = tenants->Find(key);
  if (t == TenantMap::kNone) return QuotaHold();
  const TenantLimits& limits = (*tenants)[t];
  Result<QuotaHold> hold = drive_holds_.Hold(t, limits.name, limits.drive_quota_bytes, size);
  return hold;
}

bool TieredStore::SameTenant(std::string_view a, std::string_view b) const {
  const std::shared_ptr<const TenantMap> tenants = Tenants();
  return tenants->Find(a) == tenants->Find(b);
}

void TieredStore::SetTenants(std::shared_ptr<const TenantMap> tenants) {
  if (tenants == nullptr) tenants = std::make_shared<const TenantMap>();
  // Held while both tiers take the map, so TenantUsages sees them agree.
  MutexLock lock(tenants_mu_);
  memory_->SetTenants(tenants);
  if (drives_ != nullptr) drives_->SetTenants(tenants);
  drive_holds_.Reset(tenants->size());
  tenants_ = std::move(tenants);
}

std::shared_ptr<const TenantMap> TieredStore::Tenants() const {
  MutexLock lock(tenants_mu_);
  return tenants_;
}

std::vector<TenantUsage> TieredStore::TenantUsages() const {
  MutexLock lock(tenants_mu_);
  std::vector<TenantUsage> rows = memory_->TenantUsages();
  rows.resize(tenants_->size());
  if (drives_ != nullptr) {
    const std::vector<TenantUsage> on_drives = drives_->TenantUsages();
    for (size_t i = 0; i < rows.size() && i < on_drives.size(); ++i) {
      rows[i].drive_bytes = on_drives[i].drive_bytes;
      rows[i].drive_keys = on_drives[i].drive_keys;
      rows[i].evictions += on_drives[i].evictions;
      rows[i].quota_evictions += on_drives[i].quota_evictions;
      rows[i].quota_refusals += on_drives[i].quota_refusals + drive_holds_.Refusals(static_cast<uint32_t>(i));
    }
  }
  return rows;
}

std::optional<drive::ExtentStoreStats> TieredStore::DrivesStats() const {
  if (drives_ == nullptr) return std::nullopt;
  return drives_->Stats();
}

TierCounters TieredStore::Counters() const {
  return TierCounters{.drive_hits = drive_hits_.load(std::memory_order_relaxed),
                      .promotions = promotions_.load(std::memory_order_relaxed),
                      .drive_evictions = drive_evictions_.load(std::memory_order_relaxed),
                      .write_failures = write_failures_.load(std::memory_order_relaxed),
                      .loop_commits = loop_commits_.load(std::memory_order_relaxed)};
}

}  // namespace memkv::tier
