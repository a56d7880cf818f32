// Session, part two: what each opcode does to the store.
#include <cstring>
#include <limits>
#include <string>

#include "base/checksum.h"
#include "base/clock.h"
#include "base/log.h"
#include "proto/messages.h"
#include "server/session.h"

namespace memkv::server {
namespace {

// Slots and pins one connection may hold at once: enough for a full pipeline
// of puts and gets, bounded so one client cannot pin the whole pool.
constexpr size_t kMaxGrantsPerConnection = 2 * proto::kMaxInflightPerConnection;

Status GrantRoom(size_t held) {
  if (held < kMaxGrantsPerConnection) return Status::Ok();
  return ResourceExhausted("this connection already holds " + std::to_string(held) +
                           " RDMA slots and pins; commit or release some first");
}

}  // namespace

// Value-size rule shared by Put, BatchPut items and RdmaPut; Ok or the reason.
Status CheckValueSize(uint64_t size, uint64_t limit) {
  if (size > limit) {
    return TooLarge("value of " + std::to_string(size) + " bytes exceeds this server's limit of " +
                    std::to_string(limit) + " bytes (memory.max_value_size)");
  }
  return Status::Ok();
}

void Session::HandleConnect() {
  Tag tag;
  std::memcpy(tag.data(), cur_raw_.data() + proto::kFieldsSize, proto::kTagSize);
  // Which configured key signed it: the one the nonce's key hint names,
  // else (an older client's nonce has no hint) each in turn.
  std::shared_ptr<const Credentials> credentials = ctx_.credentials->Current();
  std::vector<const CredentialKey*> candidates;
  credentials->Candidates(std::span<const uint8_t>(meta_).first(proto::kNonceSize), &candidates);
  const CredentialKey* signer = nullptr;
  std::unique_ptr<HmacSha256> key_mac;
  for (const CredentialKey* candidate : candidates) {
    Result<std::unique_ptr<HmacSha256>> mac = HmacSha256::Create(candidate->key);
    if (!mac.ok()) {
      Fail(mac.status());
      return;
    }
    if (TagsEqual(proto::ConnectTag(**mac, cur_raw_.data(), meta_, {}), tag)) {
      signer = candidate;
      key_mac = std::move(mac).value();
      break;
    }
  }
  if (signer == nullptr) {
    ctx_.metrics->auth_failures.Add(1);
    Fail(AuthFailed("Connect tag does not verify: the client's auth key differs from the server's (from each of "
                    "its keys: a wrong key, or one a reload removed)"));
    return;
  }
  if (signer->tenant != nullptr) {
    Status admitted = AdmitTenantConnection(*signer->tenant);
    if (!admitted.ok()) {
      Fail(admitted);
      return;
    }
  }
  proto::ConnectResponse response;
  response.max_value_bytes = ctx_.max_value_bytes;
  if (signer->tenant != nullptr) {
    // The tenant's keys are stored under its prefix: the client keeps its
    // own keys within what is left of the limit.
    response.max_key_bytes = static_cast<uint32_t>(proto::kMaxKeyBytes - signer->tenant->prefix.size());
  }
  Status s = RandomBytes(response.server_nonce.data(), response.server_nonce.size());
  std::array<uint8_t, proto::kNonceSize> client_nonce{};
  std::memcpy(client_nonce.data(), meta_.data(), proto::kNonceSize);
  Result<proto::SessionKeys> keys = s.ok() ? proto::DeriveSessionKeys(signer->key, client_nonce,
                                                                      response.server_nonce)
                                           : Result<proto::SessionKeys>(s);
  Result<std::unique_ptr<proto::FrameAuth>> auth =
      keys.ok() ? proto::FrameAuth::Create(keys->server_to_client, keys->client_to_server)
                : Result<std::unique_ptr<proto::FrameAuth>>(keys.status());
  if (!auth.ok()) {
    Fail(auth.status());
    return;
  }
  std::string meta = proto::EncodeConnectResponse(response);
  bool has_offer = false;
  proto::RdmaOffer offer;
  Status offer_ok = proto::DecodeRdmaOffer(std::span<const uint8_t>(meta_).subspan(proto::kNonceSize),
                                           &has_offer, &offer);
  if (!offer_ok.ok()) {
    ctx_.metrics->protocol_errors.Add(1);
    Fail(offer_ok);
    return;
  }
  if (has_offer) {
    proto::RdmaAnswer answer;
    if (ctx_.rdma == nullptr) {
      answer.result = proto::RdmaAnswerResult::kUnavailable;
      answer.message = "this server has no RDMA device configured; it serves inline-bulk TCP only";
    } else if (signer->tenant != nullptr && !signer->tenant->rdma) {
      // One-sided access reaches the whole registered pool, not only the
      // tenant's prefix (docs/tenants.md, "RDMA and tenants").
      answer.result = proto::RdmaAnswerResult::kRefused;
      answer.message = "RDMA is not enabled for this credential (tenants[].rdma): one-sided RDMA access reaches "
                       "the whole registered pool, so a tenant uses TCP unless the administrator allows it";
    } else {
      answer = ctx_.rdma->Accept(offer, peer_, &qps_);
    }
    auto& counter = answer.result == proto::RdmaAnswerResult::kAccepted ? ctx_.metrics->rdma_connections
                                                                          : ctx_.metrics->rdma_refused;
    counter.Add();
    meta += proto::EncodeRdmaAnswer(answer);
  }
  RespondConnect(std::move(meta), client_nonce, *key_mac);
  auth_ = std::move(auth).value();
  key_ = signer->key;
  tenant_ = signer->tenant;
  if (tenant_ != nullptr) tenant_->counters->connections.fetch_add(1, std::memory_order_relaxed);
  if (ctx_.limits != nullptr) ctx_.limits->Authenticated();
}

namespace {

uint64_t ChecksumOf(std::span<const iovec> iov) {
  ChecksumStream hash;
  for (const iovec& v : iov) hash.Update(v.iov_base, v.iov_len);
  return hash.Digest();
}

}  // namespace

void Session::HandleRdmaPut(Request& request) { GrantSlot(request.puts.front(), /*spare=*/false); }

void Session::HandleRdmaSpare(Request& request) { GrantSlot(request.puts.front(), /*spare=*/true); }

void Session::GrantSlot(PutItem& item, bool spare) {
  proto::RdmaGrant grant;
  grant.token = next_token_++;
  grant.value_len = item.size;
  grant.checksum = item.checksum;
  grant.segments = GrantSegments(item.room.iov());
  Grant& g = grants_[grant.token];
  g.put = std::move(item.room);
  g.key = std::string(item.key);
  g.spare = spare;
  g.checksum = item.checksum;
  g.options = std::move(item.options);
  if (spare) {
    // Held while the connection lasts (kMaxRdmaSpares per connection, at
    // most kMaxRdmaSpareBytes each): a client that stops putting may keep
    // one, as nothing tells it when to give it back.
    ++spares_;
    g.expires = std::numeric_limits<Nanos>::max();
  } else {
    g.lease_ns = RdmaGrantLease(ctx_.rdma_grant_lease_ns, item.size);
    g.expires = MonotonicNanos() + g.lease_ns;
  }
  Respond(StatusCode::kOk, proto::EncodeRdmaGrant(grant));
}

void Session::HandleRdmaCommit(Request& request) {
  auto it = grants_.find(request.token);
  if (it == grants_.end() || it->second.key.empty()) {  // unknown, or a pin
    RespondError(NotFound("no RDMA slot with token " + std::to_string(request.token) + " on this connection"));
    return;
  }
  if (it->second.spare) {
    RespondError(FailedPrecondition("RDMA slot " + std::to_string(request.token) +
                                    " is a spare: RdmaCommitTo names the key it is published under"));
    return;
  }
  Grant g = std::move(it->second);
  grants_.erase(it);
  CommitSlot(std::move(g));
}

void Session::HandleRdmaCommitTo(Request& request) {
  auto it = grants_.find(request.token);
  if (it == grants_.end() || !it->second.spare) {
    RespondError(NotFound("no spare RDMA slot with token " + std::to_string(request.token) + " on this connection"));
    return;
  }
  Grant g = std::move(it->second);
  grants_.erase(it);
  --spares_;
  PutItem& item = request.puts.front();
  Status admitted = item.status;
  if (admitted.ok() && item.size != g.put.size()) {
    admitted = InvalidArgument("a value of " + std::to_string(item.size) + " bytes was committed to spare slot " +
                               std::to_string(request.token) + " of " + std::to_string(g.put.size()) + " bytes");
  }
  if (admitted.ok() && !ctx_.store->SameTenant(g.key, item.key)) {
    // The slot holds the quotas of the key it was reserved under.
    admitted = FailedPrecondition("spare RDMA slot " + std::to_string(request.token) +
                                  " holds another tenant's quota than this key's; put it with RdmaPut");
  }
  if (admitted.ok() && ctx_.fleet != nullptr) admitted = ctx_.fleet->AdmitPut();
  if (!admitted.ok()) {
    RespondError(admitted);
    return;
  }
  g.key.assign(item.key);
  g.checksum = item.checksum;
  g.options = std::move(item.options);
  CommitSlot(std::move(g));
}

void Session::CommitSlot(Grant g) {
  // RC delivered every byte the client's WRITEs carried, but the bytes are
  // checked anyway: a value is stored only if it is what the client hashed.
  const uint64_t landed = ChecksumOf(g.put.iov());
  if (landed != g.checksum) {
    ctx_.metrics->rdma_commit_checksum_failures.Add(1);
    RespondError(Corruption("the " + std::to_string(g.put.size()) +
                          " bytes written by RDMA do not match their checksum; the put was dropped"));
    return;
  }
  const uint64_t size = g.put.size();
  Await(ctx_.store->Commit(std::move(g.put), g.key, g.checksum, g.options, reply_,
                           [this, size, key = g.key, queued = FleetState::QueuedPut(ctx_.fleet, size)](Status committed) mutable {
    queued.Release();  // before the answer, as CommitPut does
    if (committed.ok()) {
      ctx_.metrics->rdma_put_bytes.Add(size);
      ctx_.metrics->op(cur_.opcode).value_bytes.Add(size);
      CountStored(key, size);
    }
    RespondError(committed);
  }));
}

void Session::HandleRdmaGet(Request& request) {
  Status room = GrantRoom(grants_.size());
  if (!room.ok()) {
    RespondError(room);
    return;
  }
  const std::string_view key = request.key;
  // The grant's segments are addresses in the registered pool: a value on a
  // drive is staged in DRAM first (ReadNeed::kDramPin).
  Await(ctx_.store->Get(key, tier::ReadNeed::kDramPin, reply_, [this, key](Result<tier::StoredValue> value) {
    CountLookup(key, value.ok(), value.ok() ? value->size() : 0, /*fetch=*/true);
    if (value.ok()) {
      GrantPin(value->TakePin());
    } else if (value.status().code() == StatusCode::kNotFound) {
      Respond(StatusCode::kNotFound, "");
    } else {
      RespondError(value.status());
    }
  }));
}

void Session::GrantPin(storage::ReadHandle handle) {
  proto::RdmaGrant grant;
  grant.token = next_token_++;
  grant.value_len = handle.size();
  grant.checksum = handle.checksum();
  grant.segments = GrantSegments(handle.iov());
  ctx_.metrics->rdma_get_bytes.Add(handle.size());
  ctx_.metrics->op(cur_.opcode).value_bytes.Add(handle.size());
  Grant& g = grants_[grant.token];
  g.lease_ns = RdmaGrantLease(ctx_.rdma_grant_lease_ns, handle.size());
  g.pin = std::move(handle);
  g.expires = MonotonicNanos() + g.lease_ns;
  Respond(StatusCode::kOk, proto::EncodeRdmaGrant(grant));
}

void Session::HandleRdmaRelease(Request& request) {
  auto it = grants_.find(request.token);
  if (it == grants_.end()) {
    RespondError(NotFound("no RDMA slot or pin with token " + std::to_string(request.token) + " on this connection"));
    return;
  }
  if (it->second.spare) --spares_;
  grants_.erase(it);
  RespondError(Status::Ok());
}

bool Session::CheckGrantLeases(Nanos now) {
  for (const auto& [token, g] : grants_) {
    if (now > g.expires) {
      ctx_.metrics->rdma_leases_expired.Add(1);
      LOG_WARN_EVERY_C("server", 10) << "closing " << peer_ << ": it held RDMA " << (g.key.empty() ? "pin" : "slot") << " "
               << token << " past its " << g.lease_ns / 1'000'000'000
               << " s lease (client gone or stuck mid-transfer)";
      return false;
    }
  }
  return true;
}

// The pipeline (request.h): the rule of the frame's opcode, then the
// request decoded and scoped, its rule applied, room reserved for its
// values, and the handler.
void Session::DispatchAuthenticated() {
  const OpRule* rule = FindRule(cur_.opcode);
  if (rule != nullptr && rule->fleet && ctx_.fleet == nullptr) rule = nullptr;  // a server without an identity
  if (rule == nullptr) {
    RefuseUnknown();
    return;
  }
  if (cur_.payload_len != 0 && !rule->carries_payload()) {
    ctx_.metrics->protocol_errors.Add(1);
    Fail(ProtocolError(proto::OpcodeName(cur_.opcode) + " carries no payload, got payload_len " +
                       std::to_string(cur_.payload_len)));
    return;
  }
  req_.Clear();
  Status admitted = Admit(*rule);
  if (!admitted.ok()) {
    if (rule->carries_payload()) {
      // The payload is read and dropped, which keeps the stream in sync.
      PayloadSink sink;
      sink.frame_error = std::move(admitted);
      StartPayload(std::move(sink));
    } else {
      RespondError(admitted);
    }
    return;
  }
  (this->*rule->handler)(req_);
}

void Session::RefuseUnknown() {
  ctx_.metrics->protocol_errors.Add(1);
  if (cur_.opcode == static_cast<uint8_t>(proto::Opcode::kConnect)) {
    RespondError(ProtocolError("Connect sent twice on one connection"));
    return;
  }
  // Unknown opcode in a well-formed, authenticated frame: answer it and
  // stay in sync by consuming its payload.
  PayloadSink sink;
  sink.frame_error = ProtocolError("unknown opcode " + proto::OpcodeName(cur_.opcode) +
                                   "; this server speaks protocol version " +
                                   std::to_string(proto::kProtocolVersion));
  StartPayload(std::move(sink));
}

Status Session::Admit(const OpRule& rule) {
  if (rule.rdma && qps_.empty()) {
    return FailedPrecondition(proto::OpcodeName(cur_.opcode) +
                              " needs RDMA, which this connection did not set up at Connect");
  }
  if (ctx_.identities != nullptr && ctx_.identities->require() && tenant_ != nullptr && identity_segment_.empty() &&
      rule.shape != Shape::kNothing && rule.shape != Shape::kMeta && rule.shape != Shape::kToken) {
    return FailedPrecondition(std::string(rule.verb) +
                              " refused: this server's identities.require asks each tenant connection for its cache "
                              "identity first (the client's identity_* options)");
  }
  MEMKV_RETURN_IF_ERROR(DecodeRequest(rule, meta_, cur_, Scope(), &req_));
  if (rule.access == Access::kWrite && tenant_ != nullptr && tenant_->read_only) {
    tenant_->counters->read_only_refusals.fetch_add(1, std::memory_order_relaxed);
    return PermissionDenied(std::string(rule.verb) +
                            " refused: this connection's credential is read-only (tenants[].read_only)");
  }
  if (!rule.is_put()) return Status::Ok();
  for (PutItem& item : req_.puts) {
    if (item.status.ok()) item.status = CheckValueSize(item.size, ctx_.max_value_bytes);
    // A spare is admitted when a put is committed into it (RdmaCommitTo), so
    // that the fleet's shed counts are puts.
    if (item.status.ok() && ctx_.fleet != nullptr && rule.opcode != proto::Opcode::kRdmaSpare) {
      item.status = ctx_.fleet->AdmitPut();
    }
    if (item.status.ok()) item.status = ReserveRoom(rule, item);
  }
  // A put of one value is refused whole; a batch answers each item.
  const bool single = rule.shape == Shape::kPut || rule.shape == Shape::kRdmaPut || rule.shape == Shape::kRdmaPutWith;
  return single ? req_.puts.front().status : Status::Ok();
}

// Room before the first byte: the pool space a value lands in, or for a
// value the drives take in pieces its share of the drive quota (the stream's
// drive space is allocated when it begins); each holds the owner's quotas.
Status Session::ReserveRoom(const OpRule& rule, PutItem& item) {
  if (rule.rdma) {
    MEMKV_RETURN_IF_ERROR(GrantRoom(grants_.size()));
    if (rule.opcode == proto::Opcode::kRdmaSpare) MEMKV_RETURN_IF_ERROR(SpareRoom(item.size));
    if (ctx_.store->StreamsPut(item.size)) {
      // ResourceExhausted: the client sends the same put inline.
      return ResourceExhausted("a value of " + std::to_string(item.size) +
                               " bytes, over a quarter of the DRAM pool, goes to the drives in pieces over TCP, not "
                               "through the pool an RDMA WRITE lands in");
    }
  } else if (rule.shape == Shape::kPut && ctx_.store->StreamsPut(item.size)) {
    MEMKV_ASSIGN_OR_RETURN(item.stream_hold, ctx_.store->HoldDriveQuota(item.key, item.size));
    item.streamed = true;
    return Status::Ok();
  }
  return ctx_.store->Reserve(item.size, item.key, &item.room);
}

Status Session::SpareRoom(uint64_t size) const {
  if (spares_ >= proto::kMaxRdmaSpares) {
    return FailedPrecondition("this connection holds " + std::to_string(spares_) +
                              " spare RDMA slots already, the most it may (the one a put writes and the next)");
  }
  if (size == 0 || size > proto::kMaxRdmaSpareBytes) {
    return InvalidArgument("a spare RDMA slot of " + std::to_string(size) + " bytes: spares hold 1 to " +
                           std::to_string(proto::kMaxRdmaSpareBytes) + " bytes");
  }
  return Status::Ok();
}

void Session::HandlePing(Request&) { Respond(StatusCode::kOk, ""); }

void Session::HandlePut(Request& request) {
  PutItem& put = request.puts.front();
  if (put.streamed) {
    BeginStreamPut(std::string(put.key), std::move(put.stream_hold));
    return;
  }
  PayloadSink sink;
  sink.items = TakeSpareItems();
  SinkItem(put, &sink.items.emplace_back());
  StartPayload(std::move(sink));
}

void Session::HandleBatchPut(Request& request) {
  PayloadSink sink;
  sink.batch = true;
  sink.with_messages = request.rule->shape == Shape::kPutItemsWith;
  sink.items = TakeSpareItems();
  sink.items.reserve(request.puts.size());
  for (PutItem& put : request.puts) SinkItem(put, &sink.items.emplace_back());
  StartPayload(std::move(sink));
}

void Session::SinkItem(PutItem& put, PayloadSink::Item* item) {
  item->key.assign(put.key);
  item->size = put.size;
  item->checksum = put.checksum;
  item->put = std::move(put.room);
  item->options = std::move(put.options);
  item->status = std::move(put.status);
}

void Session::HandleServerInfo(Request&) { Respond(StatusCode::kOk, proto::EncodeServerInfo(ctx_.fleet->Info())); }

void Session::HandleExists(Request& request) {
  const bool found = ctx_.store->Exists(request.key);
  CountLookup(request.key, found);
  Respond(found ? StatusCode::kOk : StatusCode::kNotFound, "");
}

void Session::HandleStat(Request& request) {
  std::optional<uint64_t> size = ctx_.store->ValueSize(request.key);
  if (!size) {
    Respond(StatusCode::kNotFound, "");
    return;
  }
  Respond(StatusCode::kOk, proto::EncodeStatResponse(*size));
}

void Session::HandleBatchExists(Request& request) {
  std::vector<StatusCode> statuses;
  statuses.reserve(request.keys.size());
  std::vector<KeyCounts> counts;
  for (std::string_view key : request.keys) {
    const bool found = ctx_.store->Exists(key);
    statuses.push_back(found ? StatusCode::kOk : StatusCode::kNotFound);
    counts.push_back({key, {1, found ? 1u : 0u}});
    CountTenantLookups(1, found ? 1 : 0, 0, 0);
  }
  if (ctx_.namespaces != nullptr) ctx_.namespaces->CountMany(counts);
  Respond(StatusCode::kOk, proto::EncodeStatusList(statuses));
}

void Session::HandleMatchPrefix(Request& request) {
  const std::vector<std::string_view>& keys = request.keys;
  const size_t matched = ctx_.store->MatchPrefix(keys);
  CountTenantLookups(keys.size(), matched, 0, 0);
  // Matched over requested blocks: the leading `matched` keys are hits.
  if (ctx_.namespaces != nullptr) {
    std::vector<KeyCounts> counts;
    counts.reserve(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) counts.push_back({keys[i], {1, i < matched ? 1u : 0u}});
    ctx_.namespaces->CountMany(counts);
  }
  Respond(StatusCode::kOk, proto::EncodeMatchPrefixResponse(static_cast<uint32_t>(matched)));
}

void Session::HandleList(Request& request) {
  const KeyScope& scope = request.scope;
  KeyPage page(request.list.prefix, request.list.after, request.list.limit, scope.min_stored_key_bytes());
  ctx_.store->OfferKeys(&page);
  const std::vector<std::string> keys = page.Take();
  std::vector<std::string_view> views;
  views.reserve(keys.size());
  for (const std::string& k : keys) views.push_back(scope.ClientKey(k));
  Respond(StatusCode::kOk, proto::EncodeListResponse(views, page.more()));
}

}  // namespace memkv::server
