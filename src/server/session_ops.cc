// Session, part two: what each opcode does to the store.
#include <cstring>
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

std::string_view AsView(const std::vector<uint8_t>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
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

bool Session::RequireRdma() {
  if (!qps_.empty()) return true;
  RespondError(FailedPrecondition(proto::OpcodeName(cur_.opcode) +
                                  " needs RDMA, which this connection did not set up at Connect"));
  return false;
}

namespace {

uint64_t ChecksumOf(std::span<const iovec> iov) {
  ChecksumStream hash;
  for (const iovec& v : iov) hash.Update(v.iov_base, v.iov_len);
  return hash.Digest();
}

}  // namespace

void Session::HandleRdmaPut() {
  if (!RequireRdma()) return;
  std::string_view key;
  uint64_t size = 0, checksum = 0;
  Status s = proto::DecodeRdmaPutRequest(meta_, &key, &size, &checksum);
  if (s.ok()) s = CheckClientKey(key);
  if (s.ok()) s = CheckWritable("RdmaPut");
  if (s.ok()) s = AdmitPut();
  if (!s.ok()) {
    RespondError(s);
    return;
  }
  GrantSlot(StoredKey(key), size, checksum, PutOptions());
}

void Session::HandleRdmaPutWith() {
  if (!RequireRdma()) return;
  std::string_view key;
  uint64_t size = 0, checksum = 0;
  PutOptions options;
  Status s = proto::DecodeRdmaPutWithRequest(meta_, &key, &size, &checksum, &options);
  if (s.ok()) s = CheckClientKey(key);
  if (s.ok()) s = CheckWritable("RdmaPutWith");
  if (s.ok()) s = AdmitPut();
  if (s.ok()) s = ScopeOptions(&options);
  if (!s.ok()) {
    RespondError(s);
    return;
  }
  GrantSlot(StoredKey(key), size, checksum, std::move(options));
}

void Session::GrantSlot(std::string_view key, uint64_t size, uint64_t checksum, PutOptions options) {
  Status s = CheckValueSize(size, ctx_.max_value_bytes);
  if (s.ok()) s = GrantRoom(grants_.size());
  if (s.ok() && ctx_.store->StreamsPut(size)) {
    // ResourceExhausted: the client sends the same put inline.
    s = ResourceExhausted("a value of " + std::to_string(size) +
                          " bytes, over a quarter of the DRAM pool, goes to the drives in pieces over TCP, not "
                          "through the pool an RDMA WRITE lands in");
  }
  Result<storage::PendingPut> put = s.ok() ? ctx_.store->Reserve(size, key) : Result<storage::PendingPut>(s);
  if (!put.ok()) {
    RespondError(put.status());
    return;
  }
  proto::RdmaGrant grant;
  grant.token = next_token_++;
  grant.value_len = size;
  grant.checksum = checksum;
  grant.segments = GrantSegments(put->iov());
  Grant& g = grants_[grant.token];
  g.put = std::move(put).value();
  g.key = std::string(key);
  g.checksum = checksum;
  g.options = std::move(options);
  g.lease_ns = RdmaGrantLease(ctx_.rdma_grant_lease_ns, size);
  g.expires = MonotonicNanos() + g.lease_ns;
  Respond(StatusCode::kOk, proto::EncodeRdmaGrant(grant));
}

void Session::HandleRdmaCommit() {
  if (!RequireRdma()) return;
  uint64_t token = 0;
  Status s = proto::DecodeToken(meta_, &token);
  auto it = s.ok() ? grants_.find(token) : grants_.end();
  if (s.ok() && (it == grants_.end() || it->second.key.empty())) {  // unknown, or a pin
    s = NotFound("no RDMA slot with token " + std::to_string(token) + " on this connection");
  }
  if (!s.ok()) {
    RespondError(s);
    return;
  }
  Grant g = std::move(it->second);
  grants_.erase(it);
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
                           [this, size, key = g.key, queued = FleetState::QueuedPut(ctx_.fleet, size)](Status committed) {
    if (committed.ok()) {
      ctx_.metrics->rdma_put_bytes.Add(size);
      ctx_.metrics->op(cur_.opcode).value_bytes.Add(size);
      CountStored(key, size);
    }
    RespondError(committed);
  }));
}

void Session::HandleRdmaGet(std::string_view key) {
  if (!RequireRdma()) return;
  Status s = CheckClientKey(key);
  if (s.ok()) s = GrantRoom(grants_.size());
  if (!s.ok()) {
    RespondError(s);
    return;
  }
  key = StoredKey(key);
  // The grant's segments are addresses in the registered pool: a value on a
  // drive is staged in DRAM first (ReadNeed::kDramPin).
  Await(ctx_.store->Get(key, tier::ReadNeed::kDramPin, reply_, [this, key](Result<tier::StoredValue> value) {
    CountLookup(key, value.ok(), value.ok() ? value->size() : 0);
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

void Session::HandleRdmaRelease() {
  if (!RequireRdma()) return;
  uint64_t token = 0;
  Status s = proto::DecodeToken(meta_, &token);
  if (s.ok() && grants_.erase(token) == 0) {
    s = NotFound("no RDMA slot or pin with token " + std::to_string(token) + " on this connection");
  }
  RespondError(s);
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

void Session::DispatchAuthenticated() {
  const auto op = static_cast<proto::Opcode>(cur_.opcode);
  const bool carries_payload =
      op == proto::Opcode::kPut || op == proto::Opcode::kBatchPut || op == proto::Opcode::kBatchPutWith;
  if (cur_.payload_len != 0 && !carries_payload && proto::IsKnownOpcode(cur_.opcode)) {
    ctx_.metrics->protocol_errors.Add(1);
    Fail(ProtocolError(proto::OpcodeName(cur_.opcode) + " carries no payload, got payload_len " +
                       std::to_string(cur_.payload_len)));
    return;
  }
  key_scratch_.clear();
  std::string_view key = AsView(meta_);
  switch (op) {
    case proto::Opcode::kPing: Respond(StatusCode::kOk, ""); return;
    case proto::Opcode::kConnect:
      ctx_.metrics->protocol_errors.Add(1);
      RespondError(ProtocolError("Connect sent twice on one connection"));
      return;
    case proto::Opcode::kPut: HandlePut(key); return;
    case proto::Opcode::kGet: HandleGet(key); return;
    case proto::Opcode::kDelete: HandleDelete(key); return;
    case proto::Opcode::kExists: HandleExists(key); return;
    case proto::Opcode::kBatchPut: HandleBatchPut(); return;
    case proto::Opcode::kBatchGet: HandleBatchGet(); return;
    case proto::Opcode::kBatchExists: HandleBatchExists(); return;
    case proto::Opcode::kList: HandleList(); return;
    case proto::Opcode::kStat: HandleStat(key); return;
    case proto::Opcode::kMatchPrefix: HandleMatchPrefix(); return;
    case proto::Opcode::kBatchPutWith: HandleBatchPutWith(); return;
    case proto::Opcode::kRdmaPut: HandleRdmaPut(); return;
    case proto::Opcode::kRdmaCommit: HandleRdmaCommit(); return;
    case proto::Opcode::kRdmaGet: HandleRdmaGet(key); return;
    case proto::Opcode::kRdmaRelease: HandleRdmaRelease(); return;
    case proto::Opcode::kRdmaPutWith: HandleRdmaPutWith(); return;
    case proto::Opcode::kServerInfo:
      if (ctx_.fleet == nullptr) break;  // a server without an identity: "unknown opcode" below
      HandleServerInfo();
      return;
  }
  // Unknown opcode in a well-formed, authenticated frame: answer it and
  // stay in sync by consuming its payload.
  ctx_.metrics->protocol_errors.Add(1);
  PayloadSink sink;
  sink.frame_error = ProtocolError("unknown opcode " + proto::OpcodeName(cur_.opcode) +
                                   "; this server speaks protocol version " +
                                   std::to_string(proto::kProtocolVersion));
  StartPayload(std::move(sink));
}

void Session::HandlePut(std::string_view key) {
  PayloadSink sink;
  PayloadSink::Item item;
  item.key = std::string(key);
  item.size = cur_.payload_len;
  item.checksum = cur_.payload_checksum;
  sink.frame_error = CheckClientKey(key);
  if (sink.frame_error.ok()) sink.frame_error = CheckWritable("put");
  if (sink.frame_error.ok()) sink.frame_error = AdmitPut();
  if (sink.frame_error.ok()) item.key = std::string(StoredKey(key));
  if (sink.frame_error.ok()) sink.frame_error = CheckValueSize(item.size, ctx_.max_value_bytes);
  if (sink.frame_error.ok() && ctx_.store->StreamsPut(item.size)) {
    BeginStreamPut(std::move(item.key));
    return;
  }
  if (sink.frame_error.ok()) {
    Result<storage::PendingPut> put = ctx_.store->Reserve(item.size, item.key);
    if (put.ok()) {
      item.put = std::move(put).value();
    } else {
      sink.frame_error = put.status();
    }
  }
  sink.items.push_back(std::move(item));
  StartPayload(std::move(sink));
}

void Session::HandleBatchPut() {
  PayloadSink sink;
  std::vector<proto::PutItem> items;
  sink.frame_error = proto::DecodeBatchPutRequest(meta_, cur_.payload_len, &items);
  if (sink.frame_error.ok()) sink.frame_error = CheckWritable("batch put");
  ReceiveBatch(std::move(sink), items, {});
}

void Session::HandleBatchPutWith() {
  PayloadSink sink;
  sink.with_messages = true;
  std::vector<proto::PutItem> items;
  std::vector<PutOptions> options;
  sink.frame_error = proto::DecodeBatchPutWithRequest(meta_, cur_.payload_len, &items, &options);
  if (sink.frame_error.ok()) sink.frame_error = CheckWritable("batch put");
  ReceiveBatch(std::move(sink), items, std::move(options));
}

void Session::ReceiveBatch(PayloadSink sink, const std::vector<proto::PutItem>& items,
                           std::vector<PutOptions> options) {
  sink.batch = true;
  if (sink.frame_error.ok()) {
    for (size_t i = 0; i < items.size(); ++i) {
      const proto::PutItem& in = items[i];
      PayloadSink::Item item;
      item.key = std::string(StoredKey(in.key));
      item.size = in.value_len;
      item.checksum = in.checksum;
      if (i < options.size()) item.options = std::move(options[i]);
      item.status = CheckClientKey(in.key);
      if (item.status.ok()) item.status = ScopeOptions(&item.options);
      if (item.status.ok()) item.status = CheckValueSize(in.value_len, ctx_.max_value_bytes);
      if (item.status.ok()) item.status = AdmitPut();
      Result<storage::PendingPut> put =
          item.status.ok() ? ctx_.store->Reserve(in.value_len, item.key) : Result<storage::PendingPut>(item.status);
      if (put.ok()) {
        item.put = std::move(put).value();
      } else {
        item.status = put.status();
      }
      sink.items.push_back(std::move(item));
    }
  }
  StartPayload(std::move(sink));
}

void Session::HandleServerInfo() { Respond(StatusCode::kOk, proto::EncodeServerInfo(ctx_.fleet->Info())); }

void Session::HandleExists(std::string_view key) {
  Status s = CheckClientKey(key);
  if (!s.ok()) {
    RespondError(s);
    return;
  }
  key = StoredKey(key);
  const bool found = ctx_.store->Exists(key);
  CountLookup(key, found);
  Respond(found ? StatusCode::kOk : StatusCode::kNotFound, "");
}

void Session::HandleStat(std::string_view key) {
  Status s = CheckClientKey(key);
  if (!s.ok()) {
    RespondError(s);
    return;
  }
  key = StoredKey(key);
  std::optional<uint64_t> size = ctx_.store->ValueSize(key);
  if (!size) {
    Respond(StatusCode::kNotFound, "");
    return;
  }
  Respond(StatusCode::kOk, proto::EncodeStatResponse(*size));
}

void Session::HandleBatchExists() {
  std::vector<std::string_view> keys;
  Status valid = proto::DecodeKeyList(meta_, &keys);
  if (valid.ok()) valid = StoreKeys(&keys);
  if (!valid.ok()) {
    RespondError(valid);
    return;
  }
  std::vector<StatusCode> statuses;
  statuses.reserve(keys.size());
  std::vector<KeyCounts> counts;
  for (std::string_view key : keys) {
    const bool found = ctx_.store->Exists(key);
    statuses.push_back(found ? StatusCode::kOk : StatusCode::kNotFound);
    counts.push_back({key, {1, found ? 1u : 0u}});
    CountTenantLookups(1, found ? 1 : 0, 0);
  }
  if (ctx_.namespaces != nullptr) ctx_.namespaces->CountMany(counts);
  Respond(StatusCode::kOk, proto::EncodeStatusList(statuses));
}

void Session::HandleMatchPrefix() {
  std::vector<std::string_view> keys;
  Status valid = proto::DecodeKeyList(meta_, &keys);
  if (valid.ok()) valid = StoreKeys(&keys);
  if (!valid.ok()) {
    RespondError(valid);
    return;
  }
  const size_t matched = ctx_.store->MatchPrefix(keys);
  CountTenantLookups(keys.size(), matched, 0);
  // Matched over requested blocks: the leading `matched` keys are hits.
  if (ctx_.namespaces != nullptr) {
    std::vector<KeyCounts> counts;
    counts.reserve(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) counts.push_back({keys[i], {1, i < matched ? 1u : 0u}});
    ctx_.namespaces->CountMany(counts);
  }
  Respond(StatusCode::kOk, proto::EncodeMatchPrefixResponse(static_cast<uint32_t>(matched)));
}

void Session::HandleList() {
  proto::ListRequest request;
  Status valid = proto::DecodeListRequest(meta_, &request);
  if (!valid.ok()) {
    RespondError(valid);
    return;
  }
  if (tenant_ != nullptr && (request.prefix.size() > MaxKeyBytes() || request.after.size() > MaxKeyBytes())) {
    RespondError(TooLarge("List prefix or cursor of " +
                          std::to_string(std::max(request.prefix.size(), request.after.size())) +
                          " bytes exceeds this credential's key limit of " + std::to_string(MaxKeyBytes()) + " bytes"));
    return;
  }
  // A tenant lists under its prefix; an empty cursor stays empty (from the first).
  const std::string_view prefix = StoredKey(request.prefix);
  const std::string_view after = request.after.empty() ? request.after : StoredKey(request.after);
  KeyPage page(prefix, after, request.limit);
  ctx_.store->OfferKeys(&page);
  const std::vector<std::string> keys = page.Take();
  std::vector<std::string_view> views;
  views.reserve(keys.size());
  for (const std::string& k : keys) views.push_back(ClientKey(k));
  Respond(StatusCode::kOk, proto::EncodeListResponse(views, page.more()));
}

}  // namespace memkv::server
