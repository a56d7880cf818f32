// Session, part five: tenants (docs/tenants.md). The pipeline scopes every
// key a request names to the connection's owner (request.h, KeyScope); here
// are the tenant's counters and what a reload does to its connections.
#include <string>
#include <utility>

#include "base/log.h"
#include "memkv/identity.h"
#include "proto/messages.h"
#include "server/session.h"

namespace memkv::server {

IdentityCounters* Session::IdentityRow() {
  if (identity_row_ == nullptr && ctx_.identities != nullptr) {
    identity_row_ = ctx_.identities->Unidentified(tenant_ != nullptr ? std::string_view(tenant_->name) : "");
  }
  return identity_row_;
}

void Session::CountTenantLookups(uint64_t lookups, uint64_t hits, uint64_t bytes, uint64_t fetched) {
  if (IdentityCounters* row = IdentityRow()) row->CountLookups(lookups, hits, fetched, bytes);
  if (tenant_ == nullptr) return;
  TenantCounters& c = *tenant_->counters;
  c.lookups.fetch_add(lookups, std::memory_order_relaxed);
  if (hits > 0) c.hits.fetch_add(hits, std::memory_order_relaxed);
  if (bytes > 0) c.read_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

void Session::CountTenantStored(uint64_t puts, uint64_t bytes) {
  if (IdentityRow() != nullptr) identity_row_->CountStored(puts, bytes);
  if (tenant_ == nullptr || puts == 0) return;
  TenantCounters& c = *tenant_->counters;
  c.puts.fetch_add(puts, std::memory_order_relaxed);
  c.written_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

// Identify: the connection's cache identity, checked against
// identities.accept; from here on its keys are stored under "@<tag>/".
void Session::HandleIdentify(Request& request) {
  if (request.meta.size() > proto::kMaxIdentityMeta) {
    RespondError(TooLarge("cache identity of " + std::to_string(request.meta.size()) + " bytes; allowed: at most " +
                          std::to_string(proto::kMaxIdentityMeta)));
    return;
  }
  Result<CacheIdentity> identity =
      CacheIdentity::Parse({reinterpret_cast<const char*>(request.meta.data()), request.meta.size()});
  // A refusal closes the connection: requests pipelined behind it must not
  // run outside the identity's keys.
  if (!identity.ok()) {
    Fail(identity.status());
    return;
  }
  const std::string tag = identity->Tag();
  const std::string segment = "@" + tag + "/";
  if (!identity_segment_.empty() && identity_segment_ != segment) {
    Fail(FailedPrecondition("this connection already sent cache identity " +
                                    identity_segment_.substr(1, tag.size()) +
                                    "; allowed: one identity per connection (open another for " + tag + ")"));
    return;
  }
  const std::string_view tenant = tenant_ != nullptr ? std::string_view(tenant_->name) : "";
  if (ctx_.identities != nullptr) {
    Result<IdentityCounters*> row = ctx_.identities->Admit(tenant, *identity, tag);
    if (!row.ok()) {
      LOG_WARN_EVERY_C("server", 10) << "connection " << peer_ << ": " << row.status().message();
      Fail(row.status());
      return;
    }
    identity_row_ = *row;
  }
  identity_segment_ = segment;
  Respond(StatusCode::kOk, proto::EncodeIdentifyResponse({tag, std::string(tenant)}));
}

void Session::ObserveIdentityLatency(uint64_t nanos) {
  using proto::Opcode;
  switch (static_cast<Opcode>(cur_.opcode)) {
    case Opcode::kGet:
    case Opcode::kBatchGet:
    case Opcode::kRdmaGet:
      if (IdentityCounters* row = IdentityRow()) row->load.Observe(nanos);
      return;
    case Opcode::kPut:
    case Opcode::kBatchPut:
    case Opcode::kBatchPutWith:
    case Opcode::kRdmaCommit:
    case Opcode::kRdmaCommitTo:
      if (IdentityCounters* row = IdentityRow()) row->store.Observe(nanos);
      return;
    default: return;
  }
}

// Report: what the client counted that the server cannot see.
void Session::HandleReport(Request& request) {
  proto::ClientReport report;
  Status s = proto::DecodeClientReport(request.meta, &report);
  if (!s.ok()) {
    RespondError(s);
    return;
  }
  if (IdentityCounters* row = IdentityRow()) {
    row->fetched_in_time.fetch_add(report.fetched_in_time, std::memory_order_relaxed);
    row->fetched_late.fetch_add(report.fetched_late, std::memory_order_relaxed);
    row->stores_shed.fetch_add(report.stores_shed, std::memory_order_relaxed);
  }
  Respond(StatusCode::kOk, "");
}

// A tenant's connections open at once are bounded, so that one tenant cannot
// take every connection network.max_connections admits and lock the others
// out. The count is the tenant's slot in TenantStats: a reload that keeps
// the tenant keeps it, and a lowered limit refuses new connections until
// enough of the open ones close.
Status Session::AdmitTenantConnection(const TenantIdentity& tenant) {
  std::atomic<uint64_t>& open = tenant.counters->open_connections;
  uint64_t now = open.load(std::memory_order_relaxed);
  do {
    if (tenant.max_connections != 0 && now >= tenant.max_connections) {
      tenant.counters->connections_refused.fetch_add(1, std::memory_order_relaxed);
      return ResourceExhausted("tenant '" + tenant.name + "' has " + std::to_string(now) +
                               " connections open, its limit (tenants[].max_connections " +
                               std::to_string(tenant.max_connections) + "); close one or raise the limit");
    }
  } while (!open.compare_exchange_weak(now, now + 1, std::memory_order_relaxed));
  open_of_tenant_ = &open;
  return Status::Ok();
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
