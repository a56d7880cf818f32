// The rules table and the request decoder (request.h): each opcode's shape,
// the right it needs and its handler, and the one place where keys are
// scoped to the connection's owner.
#include <array>
#include <string>
#include <utility>

#include "server/request.h"
#include "server/session.h"

namespace memkv::server {

using proto::Opcode;

// Sorted by opcode. Connect is not here: it is the handshake, read before
// any rule applies (Session::HandleConnect), and refused once authenticated.
std::span<const OpRule> AllRules() {
  static constexpr std::array<OpRule, 22> kRules = {{
      {Opcode::kPing, "ping", Shape::kNothing, Access::kRead, false, false, &Session::HandlePing},
      {Opcode::kPut, "put", Shape::kPut, Access::kWrite, false, false, &Session::HandlePut},
      {Opcode::kGet, "get", Shape::kKey, Access::kRead, false, false, &Session::HandleGet},
      {Opcode::kDelete, "delete", Shape::kKey, Access::kWrite, false, false, &Session::HandleDelete},
      {Opcode::kExists, "exists", Shape::kKey, Access::kRead, false, false, &Session::HandleExists},
      {Opcode::kBatchPut, "batch put", Shape::kPutItems, Access::kWrite, false, false, &Session::HandleBatchPut},
      {Opcode::kBatchGet, "batch get", Shape::kKeyList, Access::kRead, false, false, &Session::HandleBatchGet},
      {Opcode::kBatchExists, "batch exists", Shape::kKeyList, Access::kRead, false, false,
       &Session::HandleBatchExists},
      {Opcode::kList, "list", Shape::kList, Access::kRead, false, false, &Session::HandleList},
      {Opcode::kStat, "stat", Shape::kKey, Access::kRead, false, false, &Session::HandleStat},
      {Opcode::kMatchPrefix, "match prefix", Shape::kKeyList, Access::kRead, false, false,
       &Session::HandleMatchPrefix},
      {Opcode::kBatchPutWith, "batch put", Shape::kPutItemsWith, Access::kWrite, false, false,
       &Session::HandleBatchPut},
      {Opcode::kServerInfo, "server info", Shape::kNothing, Access::kRead, false, true, &Session::HandleServerInfo},
      {Opcode::kIdentify, "identify", Shape::kMeta, Access::kRead, false, false, &Session::HandleIdentify},
      {Opcode::kReport, "report", Shape::kMeta, Access::kRead, false, false, &Session::HandleReport},
      {Opcode::kRdmaPut, "RdmaPut", Shape::kRdmaPut, Access::kWrite, true, false, &Session::HandleRdmaPut},
      {Opcode::kRdmaCommit, "RdmaCommit", Shape::kToken, Access::kRead, true, false, &Session::HandleRdmaCommit},
      {Opcode::kRdmaGet, "RdmaGet", Shape::kKey, Access::kRead, true, false, &Session::HandleRdmaGet},
      {Opcode::kRdmaRelease, "RdmaRelease", Shape::kToken, Access::kRead, true, false, &Session::HandleRdmaRelease},
      {Opcode::kRdmaPutWith, "RdmaPutWith", Shape::kRdmaPutWith, Access::kWrite, true, false,
       &Session::HandleRdmaPut},
      {Opcode::kRdmaSpare, "RdmaSpare", Shape::kRdmaPut, Access::kWrite, true, false, &Session::HandleRdmaSpare},
      {Opcode::kRdmaCommitTo, "RdmaCommitTo", Shape::kRdmaCommitTo, Access::kWrite, true, false,
       &Session::HandleRdmaCommitTo},
  }};
  return kRules;
}

const OpRule* FindRule(uint8_t opcode) {
  for (const OpRule& rule : AllRules()) {
    if (static_cast<uint8_t>(rule.opcode) == opcode) return &rule;
  }
  return nullptr;
}

void Request::Clear() {
  rule = nullptr;
  scope = KeyScope();
  key = {};
  keys.clear();
  puts.clear();
  list = proto::ListRequest();
  token = 0;
  meta = {};
  scratch.clear();
}

uint64_t KeyScope::max_key_bytes() const { return proto::kMaxKeyBytes - prefix_bytes(); }

size_t KeyScope::min_stored_key_bytes() const { return prefix_bytes() == 0 ? 0 : prefix_bytes() + 1; }

Status KeyScope::Check(std::string_view key) const {
  MEMKV_RETURN_IF_ERROR(proto::CheckKey(key));
  if (prefix_bytes() > 0 && key.size() > max_key_bytes()) {
    std::string less;
    if (tenant_ != nullptr) less += " less its tenant's prefix of " + std::to_string(tenant_->prefix.size()) + " bytes";
    if (!identity_.empty()) {
      less += std::string(tenant_ != nullptr ? " and" : " less") + " its cache identity's " +
              std::to_string(identity_.size()) + " bytes";
    }
    return TooLarge("key of " + std::to_string(key.size()) + " bytes exceeds this connection's limit of " +
                    std::to_string(max_key_bytes()) + " bytes (" + std::to_string(proto::kMaxKeyBytes) + less + ")");
  }
  return Status::Ok();
}

std::string_view KeyScope::Stored(std::string_view key, std::deque<std::string>* scratch) const {
  std::string& stored = scratch->emplace_back();
  stored.reserve(prefix_bytes() + key.size());
  if (tenant_ != nullptr) stored.append(tenant_->prefix);
  stored.append(identity_).append(key);
  return stored;
}

Status KeyScope::Scope(std::string_view* key, std::deque<std::string>* scratch) const {
  MEMKV_RETURN_IF_ERROR(Check(*key));
  if (prefix_bytes() > 0) *key = Stored(*key, scratch);
  return Status::Ok();
}

Status KeyScope::ScopeBeginning(std::string_view* beginning, std::deque<std::string>* scratch) const {
  if (prefix_bytes() == 0) return Status::Ok();
  if (beginning->size() > max_key_bytes()) {
    return TooLarge("list prefix or cursor of " + std::to_string(beginning->size()) +
                    " bytes exceeds this connection's key limit of " + std::to_string(max_key_bytes()) + " bytes");
  }
  *beginning = Stored(*beginning, scratch);
  return Status::Ok();
}

Status KeyScope::ScopeOptions(PutOptions* options) const {
  if (prefix_bytes() == 0 || options->parent_key.empty()) return Status::Ok();
  if (options->parent_key.size() > max_key_bytes()) {
    return TooLarge("parent_key of " + std::to_string(options->parent_key.size()) +
                    " bytes exceeds this connection's key limit of " + std::to_string(max_key_bytes()) + " bytes");
  }
  options->parent_key.insert(0, identity_);
  if (tenant_ != nullptr) options->parent_key.insert(0, tenant_->prefix);
  return Status::Ok();
}

std::string_view KeyScope::ClientKey(std::string_view stored) const {
  if (tenant_ != nullptr) {
    if (!stored.starts_with(tenant_->prefix)) return stored;
    stored.remove_prefix(tenant_->prefix.size());
  }
  if (!identity_.empty() && stored.starts_with(identity_)) stored.remove_prefix(identity_.size());
  return stored;
}

namespace {

std::string_view AsView(std::span<const uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// One put item appended to the request's, scoped: its key and parent_key;
// problems go to its status. Built where it stays (its room is reserved
// there later), not moved in.
PutItem& ScopedItem(const proto::PutItem& in, PutOptions options, const KeyScope& scope, Request* request) {
  PutItem& item = request->puts.emplace_back();
  item.key = in.key;
  item.size = in.value_len;
  item.checksum = in.checksum;
  item.options = std::move(options);
  item.status = scope.Scope(&item.key, &request->scratch);
  if (item.status.ok()) item.status = scope.ScopeOptions(&item.options);
  return item;
}

}  // namespace

Status DecodeRequest(const OpRule& rule, std::span<const uint8_t> meta, const proto::FrameHeader& header,
                     const KeyScope& scope, Request* request) {
  request->rule = &rule;
  request->scope = scope;
  switch (rule.shape) {
    case Shape::kNothing: return Status::Ok();
    case Shape::kKey:
      request->key = AsView(meta);
      return scope.Scope(&request->key, &request->scratch);
    case Shape::kPut: {
      const proto::PutItem in{AsView(meta), header.payload_len, header.payload_checksum};
      return ScopedItem(in, PutOptions(), scope, request).status;  // a single put is refused whole
    }
    case Shape::kKeyList: {
      MEMKV_RETURN_IF_ERROR(proto::DecodeKeyList(meta, &request->keys));
      for (size_t i = 0; i < request->keys.size(); ++i) {
        if (Status scoped = scope.Scope(&request->keys[i], &request->scratch); !scoped.ok()) {
          return scoped.WithContext("item " + std::to_string(i));
        }
      }
      return Status::Ok();
    }
    case Shape::kPutItems:
    case Shape::kPutItemsWith: {
      std::vector<proto::PutItem> items;
      std::vector<PutOptions> options;
      MEMKV_RETURN_IF_ERROR(rule.shape == Shape::kPutItems
                                ? proto::DecodeBatchPutRequest(meta, header.payload_len, &items)
                                : proto::DecodeBatchPutWithRequest(meta, header.payload_len, &items, &options));
      request->puts.reserve(items.size());
      for (size_t i = 0; i < items.size(); ++i) {
        ScopedItem(items[i], i < options.size() ? std::move(options[i]) : PutOptions(), scope, request);
      }
      return Status::Ok();
    }
    case Shape::kRdmaPut:
    case Shape::kRdmaPutWith: {
      proto::PutItem in;
      PutOptions options;
      MEMKV_RETURN_IF_ERROR(
          rule.shape == Shape::kRdmaPut
              ? proto::DecodeRdmaPutRequest(meta, &in.key, &in.value_len, &in.checksum)
              : proto::DecodeRdmaPutWithRequest(meta, &in.key, &in.value_len, &in.checksum, &options));
      return ScopedItem(in, std::move(options), scope, request).status;
    }
    case Shape::kRdmaCommitTo: {
      proto::PutItem in;
      PutOptions options;
      MEMKV_RETURN_IF_ERROR(proto::DecodeRdmaCommitToRequest(meta, &request->token, &in.key, &in.value_len,
                                                             &in.checksum, &options));
      // The handler answers a key refused here: the slot goes either way.
      ScopedItem(in, std::move(options), scope, request);
      return Status::Ok();
    }
    case Shape::kList: {
      MEMKV_RETURN_IF_ERROR(proto::DecodeListRequest(meta, &request->list));
      MEMKV_RETURN_IF_ERROR(scope.ScopeBeginning(&request->list.prefix, &request->scratch));
      // An empty cursor stays empty: from the first key.
      if (request->list.after.empty()) return Status::Ok();
      return scope.ScopeBeginning(&request->list.after, &request->scratch);
    }
    case Shape::kToken: return proto::DecodeToken(meta, &request->token);
    case Shape::kMeta:
      request->meta = meta;
      return Status::Ok();
  }
  return Internal("opcode " + proto::OpcodeName(static_cast<uint8_t>(rule.opcode)) + " has no shape");
}

}  // namespace memkv::server
