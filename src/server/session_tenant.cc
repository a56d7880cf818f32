// Session, part five: tenants (docs/tenants.md). A tenant's connection names
// its keys as its clients see them; the server stores each under the
// tenant's prefix and takes the prefix off every key it answers with, so a
// tenant reaches its own keys only. The administrator key's connections see
// stored keys as they are.
#include <string>
#include <utility>

#include "base/log.h"
#include "proto/messages.h"
#include "server/session.h"

namespace memkv::server {

uint64_t Session::MaxKeyBytes() const {
  return tenant_ == nullptr ? proto::kMaxKeyBytes : proto::kMaxKeyBytes - tenant_->prefix.size();
}

Status Session::CheckClientKey(std::string_view key) const {
  MEMKV_RETURN_IF_ERROR(proto::CheckKey(key));
  if (tenant_ != nullptr && key.size() > MaxKeyBytes()) {
    return TooLarge("key of " + std::to_string(key.size()) + " bytes exceeds this credential's limit of " +
                    std::to_string(MaxKeyBytes()) + " bytes (" + std::to_string(proto::kMaxKeyBytes) +
                    " less its tenant's prefix of " + std::to_string(tenant_->prefix.size()) + " bytes)");
  }
  return Status::Ok();
}

std::string_view Session::StoredKey(std::string_view key) {
  if (tenant_ == nullptr) return key;
  std::string& stored = key_scratch_.emplace_back();
  stored.reserve(tenant_->prefix.size() + key.size());
  stored.append(tenant_->prefix).append(key);
  return stored;
}

Status Session::StoreKeys(std::vector<std::string_view>* keys) {
  if (tenant_ == nullptr) return Status::Ok();
  for (size_t i = 0; i < keys->size(); ++i) {
    MEMKV_RETURN_IF_ERROR(CheckClientKey((*keys)[i]).WithContext("item " + std::to_string(i)));
    (*keys)[i] = StoredKey((*keys)[i]);
  }
  return Status::Ok();
}

Status Session::ScopeOptions(PutOptions* options) {
  if (tenant_ == nullptr || options->parent_key.empty()) return Status::Ok();
  if (options->parent_key.size() > MaxKeyBytes()) {
    return TooLarge("parent_key of " + std::to_string(options->parent_key.size()) +
                    " bytes exceeds this credential's key limit of " + std::to_string(MaxKeyBytes()) + " bytes");
  }
  options->parent_key.insert(0, tenant_->prefix);
  return Status::Ok();
}

std::string_view Session::ClientKey(std::string_view stored) const {
  if (tenant_ == nullptr || !stored.starts_with(tenant_->prefix)) return stored;
  return stored.substr(tenant_->prefix.size());
}

Status Session::CheckWritable(std::string_view what) {
  if (tenant_ == nullptr || !tenant_->read_only) return Status::Ok();
  tenant_->counters->read_only_refusals.fetch_add(1, std::memory_order_relaxed);
  return PermissionDenied(std::string(what) + " refused: this connection's credential is read-only (tenants[].read_only)");
}

Status Session::AdmitPut() { return ctx_.fleet == nullptr ? Status::Ok() : ctx_.fleet->AdmitPut(); }

void Session::CountTenantLookups(uint64_t lookups, uint64_t hits, uint64_t bytes) {
  if (tenant_ == nullptr) return;
  TenantCounters& c = *tenant_->counters;
  c.lookups.fetch_add(lookups, std::memory_order_relaxed);
  if (hits > 0) c.hits.fetch_add(hits, std::memory_order_relaxed);
  if (bytes > 0) c.read_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

void Session::CountTenantStored(uint64_t puts, uint64_t bytes) {
  if (tenant_ == nullptr || puts == 0) return;
  TenantCounters& c = *tenant_->counters;
  c.puts.fetch_add(puts, std::memory_order_relaxed);
  c.written_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

bool Session::RecheckCredential(const Credentials& credentials) {
  if (!authenticated() || revoked_) return !revoked_;
  const CredentialKey* now = credentials.Find(key_);
  const bool same_owner =
      now != nullptr && (now->tenant == nullptr) == (tenant_ == nullptr) &&
      (tenant_ == nullptr || (now->tenant->name == tenant_->name && now->tenant->prefix == tenant_->prefix));
  // RDMA set up under a tenant whose RDMA the reload turned off: its queue
  // pairs reach the whole pool, so the connection cannot keep them.
  const bool rdma_withdrawn = same_owner && now->tenant != nullptr && !now->tenant->rdma && !qps_.empty();
  if (same_owner && !rdma_withdrawn) {
    tenant_ = now->tenant;  // the tenant's flags as the reload left them
    return true;
  }
  revoked_ = true;
  LOG_INFO_C("server") << "connection " << peer_ << (tenant_ != nullptr ? " of tenant " + tenant_->name : std::string())
                       << ": credential removed by a reload; closing it"
                       << (rdma_withdrawn ? " (RDMA is no longer enabled for its tenant)" : "");
  return false;
}

bool Session::RevokedAndIdle() const {
  return revoked_ && !closing_ && state_ == ReadState::kHeader && in_.empty() && out_.empty() && !storage_wait_ &&
         get_stream_ == nullptr && put_stream_ == nullptr;
}

}  // namespace memkv::server
