// Session, part five: tenants (docs/tenants.md). The pipeline scopes every
// key a request names to the connection's owner (request.h, KeyScope); here
// are the tenant's counters and what a reload does to its connections.
#include <string>
#include <utility>

#include "base/log.h"
#include "proto/messages.h"
#include "server/session.h"

namespace memkv::server {

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
