// The request pipeline's types (memkv::server). Every authenticated frame
// goes through one pipeline (Session::DispatchAuthenticated, session_ops.cc):
//
//   decode the meta by the opcode's shape, naming every key it holds;
//   scope each key to the connection's owner (KeyScope): the administrator
//     names stored keys as they are, a tenant names its keys without its
//     prefix and reaches nothing outside it;
//   apply the opcode's rule (OpRule, the table in request_rules.cc): the
//     right it needs (read or write), RDMA, the fleet's admission of puts,
//     the value-size limit, and the room a put's value takes (pool space
//     and the owner's quota, reserved before its first payload byte is read);
//   then the handler, which receives the Request: stored keys and the owner.
//
// Handlers and the stores never scope a key themselves. Adding an opcode is
// a row in the table and a handler.
#ifndef MEMKV_SERVER_REQUEST_H_
#define MEMKV_SERVER_REQUEST_H_

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/status.h"
#include "proto/frame.h"
#include "proto/messages.h"
#include "server/credentials.h"
#include "storage/memory_store.h"

namespace memkv::server {

class Session;
struct Request;

// What an opcode's meta holds, and so how its keys are found.
enum class Shape : uint8_t {
  kNothing,       // no key (Ping, ServerInfo)
  kKey,           // the meta is one key (Get, Delete, Exists, Stat, RdmaGet)
  kPut,           // the meta is the key; the payload is its value (Put)
  kKeyList,       // a key list (BatchGet, BatchExists, MatchPrefix)
  kPutItems,      // BatchPut's items: each a key, its value's size and checksum
  kPutItemsWith,  // BatchPutWith's items, each with its put options
  kRdmaPut,       // RdmaPut: key, size, checksum
  kRdmaPutWith,   // RdmaPutWith: the same and put options
  kRdmaCommitTo,  // RdmaCommitTo: a spare slot's token, then RdmaPutWith's fields
  kList,          // List: a prefix and a cursor, each a key's beginning
  kToken,         // RdmaCommit / RdmaRelease: a grant's token
  kMeta,          // the meta is the handler's alone, no key (Identify, Report)
};

// The right an opcode needs of the connection's credential.
enum class Access : uint8_t {
  kRead,   // every credential
  kWrite,  // not a read-only tenant's (tenants[].read_only)
};

// One row of the rules table: everything the pipeline checks before the
// handler runs.
struct OpRule {
  proto::Opcode opcode;
  const char* verb;  // how refusals name the request: "put", "batch put", ...
  Shape shape;
  Access access;
  bool rdma = false;   // needs the queue pairs the connection set up at Connect
  bool fleet = false;  // served only by a server with a fleet identity (else: unknown opcode)
  void (Session::*handler)(Request&) = nullptr;

  // Puts: the value-size limit, the fleet's admission (draining, busy) and
  // room reserved for each value before its bytes are read.
  bool is_put() const {
    return shape == Shape::kPut || shape == Shape::kPutItems || shape == Shape::kPutItemsWith ||
           shape == Shape::kRdmaPut || shape == Shape::kRdmaPutWith;
  }
  // A payload follows the meta (the values of the puts sent inline).
  bool carries_payload() const {
    return shape == Shape::kPut || shape == Shape::kPutItems || shape == Shape::kPutItemsWith;
  }
};

// The rule for `opcode`; null for an opcode the server does not know.
const OpRule* FindRule(uint8_t opcode);
// Every row, in opcode order (tests walk them).
std::span<const OpRule> AllRules();

// A connection's view of the key space: the administrator's (every key as
// stored) or a tenant's (its keys under its prefix), and within either, a
// cache identity's (its keys under "@<tag>/", docs/client-library.md). The
// one place a key is scoped: stored forms are kept in the request's scratch
// until the next one.
class KeyScope {
 public:
  // `identity`: the connection's "@<tag>/" segment; empty: none.
  explicit KeyScope(const TenantIdentity* tenant = nullptr, std::string_view identity = {})
      : tenant_(tenant), identity_(identity) {}

  const TenantIdentity* owner() const { return tenant_; }
  // proto::kMaxKeyBytes less the tenant's prefix and the identity's segment.
  uint64_t max_key_bytes() const;
  // Ok, or why `key` cannot be named with this credential.
  Status Check(std::string_view key) const;
  // Checks `*key` and replaces it with its stored form (in `scratch`).
  Status Scope(std::string_view* key, std::deque<std::string>* scratch) const;
  // The beginning of keys (a List prefix or cursor: may be empty), scoped.
  Status ScopeBeginning(std::string_view* beginning, std::deque<std::string>* scratch) const;
  // A put's parent_key is a key too: in its stored form.
  Status ScopeOptions(PutOptions* options) const;
  // The key as the client names it (the prefix and segment taken off).
  std::string_view ClientKey(std::string_view stored) const;
  // The shortest stored key the connection may see: a tenant never sees its
  // bare prefix (an administrator's key of that name), which it cannot name.
  size_t min_stored_key_bytes() const;

 private:
  size_t prefix_bytes() const { return (tenant_ == nullptr ? 0 : tenant_->prefix.size()) + identity_.size(); }
  std::string_view Stored(std::string_view key, std::deque<std::string>* scratch) const;

  const TenantIdentity* tenant_;
  std::string_view identity_;
};

// One put of a request: a value the client sends inline or by RDMA.
struct PutItem {
  std::string_view key;  // stored form
  uint64_t size = 0;
  uint64_t checksum = 0;
  PutOptions options;    // parent_key in its stored form
  Status status;         // not Ok: refused (the item's bytes are read and dropped)
  // The room the pipeline reserved for it: pool space (with its holds of
  // the owner's quotas), or for a value the drives take in pieces
  // (`streamed`) its hold of the owner's drive quota.
  storage::PendingPut room;
  bool streamed = false;
  QuotaHold stream_hold;
};

// A decoded, scoped request, as the handler receives it.
struct Request {
  const OpRule* rule = nullptr;
  KeyScope scope;                         // the connection's view; scope.owner() null: the administrator
  std::string_view key;                   // kKey
  std::vector<std::string_view> keys;     // kKeyList
  std::vector<PutItem> puts;              // kPut (one), kPutItems(With), kRdmaPut(With), kRdmaCommitTo (one)
  proto::ListRequest list;                // kList: prefix and cursor scoped
  uint64_t token = 0;                     // kToken, kRdmaCommitTo
  std::span<const uint8_t> meta;          // kMeta
  std::deque<std::string> scratch;        // stored forms of the keys above

  void Clear();
};

// Decodes `meta` (and the header's payload fields) by `rule.shape` and
// scopes every key it names. A put item's own problems (its key, its
// parent_key) go into its status; Ok or why the whole request is refused.
Status DecodeRequest(const OpRule& rule, std::span<const uint8_t> meta, const proto::FrameHeader& header,
                     const KeyScope& scope, Request* request);

}  // namespace memkv::server

#endif  // MEMKV_SERVER_REQUEST_H_
