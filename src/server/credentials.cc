#include "server/credentials.h"

#include <algorithm>
#include <cstring>

namespace memkv::server {

uint64_t Credentials::HintWord(std::span<const uint8_t> bytes) {
  uint64_t word = 0;
  std::memcpy(&word, bytes.data(), std::min(bytes.size(), sizeof(word)));
  return word;
}

Result<std::shared_ptr<const Credentials>> Credentials::Create(std::span<const uint8_t> admin_key,
                                                               std::vector<TenantCredential> tenants,
                                                               TenantStats* stats) {
  if (tenants.size() > kMaxTenants) {
    return InvalidArgument(std::to_string(tenants.size()) + " tenants configured; at most " +
                           std::to_string(kMaxTenants) + " are allowed");
  }
  std::shared_ptr<Credentials> c(new Credentials());
  if (stats == nullptr) {
    c->own_stats_ = std::make_unique<TenantStats>();
    stats = c->own_stats_.get();
  }
  // Which tenant (or "the administrator") holds each key so far, for a clear
  // duplicate message that names owners, never key bytes.
  auto add = [&c](std::span<const uint8_t> key, std::shared_ptr<const TenantIdentity> tenant) -> Status {
    if (key.size() != Key32().size()) {
      return InvalidArgument("a key of " + (tenant ? "tenant " + tenant->name : std::string("the administrator")) +
                             " is " + std::to_string(key.size()) + " bytes; keys are 32 bytes");
    }
    if (const CredentialKey* other = c->Find(key); other != nullptr) {
      const std::string owner = other->tenant ? "tenant " + other->tenant->name : "the administrator key";
      return InvalidArgument("the same key is configured for " +
                             (tenant ? "tenant " + tenant->name : std::string("the administrator")) + " and for " +
                             owner + "; each key must be unique");
    }
    CredentialKey entry;
    std::copy(key.begin(), key.end(), entry.key.begin());
    MEMKV_ASSIGN_OR_RETURN(entry.hint, proto::KeyHintOf(key));
    entry.tenant = std::move(tenant);
    c->by_hint_.emplace(HintWord(entry.hint), c->keys_.size());
    c->keys_.push_back(std::move(entry));
    return Status::Ok();
  };
  MEMKV_RETURN_IF_ERROR(add(admin_key, nullptr));
  for (TenantCredential& t : tenants) {
    if (t.keys.empty()) return InvalidArgument("tenant " + t.identity.name + " has no key");
    auto identity = std::make_shared<TenantIdentity>(std::move(t.identity));
    identity->counters = stats->Slot(identity->name);
    for (const std::vector<uint8_t>& key : t.keys) MEMKV_RETURN_IF_ERROR(add(key, identity));
    ++c->tenant_count_;
  }
  return std::shared_ptr<const Credentials>(std::move(c));
}

void Credentials::Candidates(std::span<const uint8_t> client_nonce, std::vector<const CredentialKey*>* out) const {
  out->clear();
  if (client_nonce.size() < proto::kKeyHintSize) return;
  auto [first, last] = by_hint_.equal_range(HintWord(client_nonce.first(proto::kKeyHintSize)));
  for (auto it = first; it != last; ++it) out->push_back(&keys_[it->second]);
  const size_t hinted = out->size();
  for (const CredentialKey& k : keys_) {
    if (std::find(out->begin(), out->begin() + static_cast<std::ptrdiff_t>(hinted), &k) ==
        out->begin() + static_cast<std::ptrdiff_t>(hinted)) {
      out->push_back(&k);
    }
  }
}

const CredentialKey* Credentials::Find(std::span<const uint8_t> key) const {
  if (key.size() != Key32().size()) return nullptr;
  Result<proto::KeyHint> hint = proto::KeyHintOf(key);
  if (!hint.ok()) return nullptr;
  auto [first, last] = by_hint_.equal_range(HintWord(*hint));
  for (auto it = first; it != last; ++it) {
    const CredentialKey& k = keys_[it->second];
    Key32 probe;
    std::copy(key.begin(), key.end(), probe.begin());
    if (TagsEqual(k.key, probe)) return &k;
  }
  return nullptr;
}

}  // namespace memkv::server
