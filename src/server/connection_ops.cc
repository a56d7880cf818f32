// Connection, part two: what each opcode does to the store.
#include <cstring>
#include <string>
#include <unordered_map>

#include "base/checksum.h"
#include "base/clock.h"
#include "base/log.h"
#include "proto/messages.h"
#include "server/connection.h"

namespace memkv {
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

// Value-size rules shared by Put and BatchPut items; Ok or the reason.
Status CheckValueSize(uint64_t size) {
  if (size > proto::kMaxValueBytes) {
    return TooLarge("value of " + std::to_string(size) + " bytes exceeds the limit of " +
                    std::to_string(proto::kMaxValueBytes) + " bytes");
  }
  return Status::Ok();
}

}  // namespace

void Connection::HandleConnect() {
  Tag tag;
  std::memcpy(tag.data(), cur_raw_.data() + proto::kFieldsSize, proto::kTagSize);
  if (!TagsEqual(proto::ConnectTag(*ctx_.master_mac, cur_raw_.data(), meta_, {}), tag)) {
    ctx_.metrics->auth_failures.Add(1);
    Fail(AuthFailed("Connect tag does not verify: the client's auth key differs from the server's"));
    return;
  }
  proto::ConnectResponse response;
  Status s = RandomBytes(response.server_nonce.data(), response.server_nonce.size());
  std::array<uint8_t, proto::kNonceSize> client_nonce{};
  std::memcpy(client_nonce.data(), meta_.data(), proto::kNonceSize);
  Result<proto::SessionKeys> keys = s.ok() ? proto::DeriveSessionKeys(ctx_.master_key, client_nonce,
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
    } else {
      answer = ctx_.rdma->Accept(offer, peer_, &qps_);
    }
    auto& counter = answer.result == proto::RdmaAnswerResult::kAccepted ? ctx_.metrics->rdma_connections
                                                                          : ctx_.metrics->rdma_refused;
    counter.Add();
    meta += proto::EncodeRdmaAnswer(answer);
  }
  RespondConnect(std::move(meta), client_nonce);
  auth_ = std::move(auth).value();
  if (ctx_.limits != nullptr) ctx_.limits->Authenticated();
}

bool Connection::RequireRdma() {
  if (!qps_.empty()) return true;
  RespondError(FailedPrecondition(proto::OpcodeName(cur_.opcode) +
                                  " needs RDMA, which this connection did not set up at Connect"));
  return false;
}

namespace {

std::vector<proto::RemoteSegment> Segments(std::span<const iovec> iov) {
  std::vector<proto::RemoteSegment> out;
  out.reserve(iov.size());
  for (const iovec& v : iov) {
    out.push_back({reinterpret_cast<uint64_t>(v.iov_base), static_cast<uint32_t>(v.iov_len)});
  }
  return out;
}

uint64_t ChecksumOf(std::span<const iovec> iov) {
  ChecksumStream hash;
  for (const iovec& v : iov) hash.Update(v.iov_base, v.iov_len);
  return hash.Digest();
}

}  // namespace

void Connection::HandleRdmaPut() {
  if (!RequireRdma()) return;
  std::string_view key;
  uint64_t size = 0, checksum = 0;
  Status s = proto::DecodeRdmaPutRequest(meta_, &key, &size, &checksum);
  if (s.ok()) s = GrantRoom(grants_.size());
  Result<PendingPut> put = s.ok() ? ctx_.store->BeginPut(size) : Result<PendingPut>(s);
  if (!put.ok()) {
    RespondError(put.status());
    return;
  }
  proto::RdmaGrant grant;
  grant.token = next_token_++;
  grant.value_len = size;
  grant.checksum = checksum;
  grant.segments = Segments(put->iov());
  Grant& g = grants_[grant.token];
  g.put = std::move(put).value();
  g.key = std::string(key);
  g.checksum = checksum;
  g.expires = MonotonicNanos() + ctx_.rdma_grant_lease_ns;
  Respond(StatusCode::kOk, proto::EncodeRdmaGrant(grant));
}

void Connection::HandleRdmaCommit() {
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
  if (Tiered()) {
    RdmaCommitThrough(std::move(g.put), std::move(g.key), g.checksum);
    return;
  }
  const uint64_t size = g.put.size();
  s = ctx_.store->CommitPut(std::move(g.put), g.key, g.checksum);
  if (s.ok()) {
    ctx_.metrics->rdma_put_bytes.Add(size);
    ctx_.metrics->op(cur_.opcode).value_bytes.Add(size);
  }
  RespondError(s);
}

void Connection::HandleRdmaGet(std::string_view key) {
  if (!RequireRdma()) return;
  Status s = proto::CheckKey(key);
  if (s.ok()) s = GrantRoom(grants_.size());
  Result<ReadHandle> handle = s.ok() ? ctx_.store->Get(key) : Result<ReadHandle>(s);
  if (!handle.ok()) {
    if (handle.status().code() == StatusCode::kNotFound && Tiered() && ctx_.tier->OnDriveOnly(key)) {
      FetchAndGrant(std::string(key));
    } else if (handle.status().code() == StatusCode::kNotFound) {
      Respond(StatusCode::kNotFound, "");
    } else {
      RespondError(handle.status());
    }
    return;
  }
  GrantPin(std::move(handle).value());
}

void Connection::GrantPin(ReadHandle handle) {
  proto::RdmaGrant grant;
  grant.token = next_token_++;
  grant.value_len = handle.size();
  grant.checksum = handle.checksum();
  grant.segments = Segments(handle.iov());
  ctx_.metrics->rdma_get_bytes.Add(handle.size());
  ctx_.metrics->op(cur_.opcode).value_bytes.Add(handle.size());
  Grant& g = grants_[grant.token];
  g.pin = std::move(handle);
  g.expires = MonotonicNanos() + ctx_.rdma_grant_lease_ns;
  Respond(StatusCode::kOk, proto::EncodeRdmaGrant(grant));
}

void Connection::HandleRdmaRelease() {
  if (!RequireRdma()) return;
  uint64_t token = 0;
  Status s = proto::DecodeToken(meta_, &token);
  if (s.ok() && grants_.erase(token) == 0) {
    s = NotFound("no RDMA slot or pin with token " + std::to_string(token) + " on this connection");
  }
  RespondError(s);
}

bool Connection::CheckGrantLeases(Nanos now) {
  for (const auto& [token, g] : grants_) {
    if (now > g.expires) {
      ctx_.metrics->rdma_leases_expired.Add(1);
      LOG_WARN_EVERY_C("server", 10) << "closing " << peer_ << ": it held RDMA " << (g.key.empty() ? "pin" : "slot") << " "
               << token << " past its " << ctx_.rdma_grant_lease_ns / 1'000'000'000
               << " s lease (client gone or stuck mid-transfer)";
      return false;
    }
  }
  return true;
}

void Connection::DispatchAuthenticated() {
  const auto op = static_cast<proto::Opcode>(cur_.opcode);
  const bool carries_payload = op == proto::Opcode::kPut || op == proto::Opcode::kBatchPut;
  if (cur_.payload_len != 0 && !carries_payload && proto::IsKnownOpcode(cur_.opcode)) {
    ctx_.metrics->protocol_errors.Add(1);
    Fail(ProtocolError(proto::OpcodeName(cur_.opcode) + " carries no payload, got payload_len " +
                       std::to_string(cur_.payload_len)));
    return;
  }
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
    case proto::Opcode::kRdmaPut: HandleRdmaPut(); return;
    case proto::Opcode::kRdmaCommit: HandleRdmaCommit(); return;
    case proto::Opcode::kRdmaGet: HandleRdmaGet(key); return;
    case proto::Opcode::kRdmaRelease: HandleRdmaRelease(); return;
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

void Connection::HandlePut(std::string_view key) {
  PayloadSink sink;
  PayloadSink::Item item;
  item.key = std::string(key);
  item.size = cur_.payload_len;
  item.checksum = cur_.payload_checksum;
  sink.frame_error = proto::CheckKey(key);
  if (sink.frame_error.ok()) sink.frame_error = CheckValueSize(item.size);
  if (sink.frame_error.ok()) {
    Result<PendingPut> put = ctx_.store->BeginPut(item.size);
    if (put.ok()) {
      item.put = std::move(put).value();
    } else {
      sink.frame_error = put.status();
    }
  }
  sink.items.push_back(std::move(item));
  StartPayload(std::move(sink));
}

void Connection::HandleBatchPut() {
  PayloadSink sink;
  sink.batch = true;
  std::vector<proto::PutItem> items;
  sink.frame_error = proto::DecodeBatchPutRequest(meta_, cur_.payload_len, &items);
  if (sink.frame_error.ok()) {
    for (const proto::PutItem& in : items) {
      PayloadSink::Item item;
      item.key = std::string(in.key);
      item.size = in.value_len;
      item.checksum = in.checksum;
      Result<PendingPut> put = ctx_.store->BeginPut(in.value_len);
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

void Connection::FinishPayload() {
  PayloadSink sink = std::move(sink_);
  sink_ = PayloadSink();
  if (!sink.frame_error.ok()) {
    RespondError(sink.frame_error);
    return;
  }
  // Verify every item before committing any: a payload that does not match
  // its checksum means the stream cannot be trusted at all.
  for (PayloadSink::Item& item : sink.items) {
    if (!item.status.ok()) continue;
    if (item.received_checksum != item.checksum) {
      ctx_.metrics->payload_checksum_failures.Add(1);
      Fail(Corruption("payload of key '" + item.key.substr(0, 64) +
                      "' does not match its checksum; nothing was stored"));
      return;
    }
  }
  SupersedeRepeats(sink.items);
  if (Tiered()) {
    WriteThroughAndRespond(std::move(sink.items), sink.batch);
    return;
  }
  for (PayloadSink::Item& item : sink.items) {
    if (item.status.ok()) item.status = ctx_.store->CommitPut(std::move(item.put), item.key, item.checksum);
  }
  RespondPuts(sink.items, sink.batch);
}

// A batch put that names a key more than once stores only the key's last
// item, as applying the items in order would leave it, in memory and file
// mode alike (the drive tier writes a batch's items in parallel, so storing
// each would leave a random one). The earlier items release their pool
// space now and are answered with the last item's status.
void Connection::SupersedeRepeats(std::vector<PayloadSink::Item>& items) {
  if (items.size() < 2) return;
  std::unordered_map<std::string_view, size_t> last;
  for (size_t i = 0; i < items.size(); ++i) last[items[i].key] = i;
  if (last.size() == items.size()) return;
  for (size_t i = 0; i < items.size(); ++i) {
    const size_t later = last[items[i].key];
    if (later == i) continue;
    items[i].superseded_by = later;
    items[i].put = PendingPut();
    items[i].status = FailedPrecondition("superseded by a later item of the batch");  // not stored
  }
}

void Connection::RespondPuts(std::vector<PayloadSink::Item>& items, bool batch) {
  std::vector<StatusCode> statuses;
  Status last_error;
  uint64_t stored = 0;
  for (const PayloadSink::Item& item : items) {
    if (item.superseded_by != PayloadSink::kNotSuperseded) {
      statuses.push_back(items[item.superseded_by].status.code());
      continue;
    }
    statuses.push_back(item.status.code());
    if (!item.status.ok()) last_error = item.status;
    if (item.status.ok()) stored += item.size;
  }
  ctx_.metrics->op(cur_.opcode).value_bytes.Add(stored);
  if (batch) {
    Respond(StatusCode::kOk, proto::EncodeStatusList(statuses));
  } else if (last_error.ok()) {
    Respond(StatusCode::kOk, "");
  } else {
    RespondError(last_error);
  }
}

void Connection::HandleGet(std::string_view key) {
  Status valid = proto::CheckKey(key);
  if (!valid.ok()) {
    RespondError(valid);
    return;
  }
  Result<ReadHandle> handle = ctx_.store->Get(key);
  if (!handle.ok()) {
    if (handle.status().code() == StatusCode::kNotFound && Tiered() && ctx_.tier->OnDriveOnly(key)) {
      FetchAndRespondGet(std::string(key));
    } else if (handle.status().code() == StatusCode::kNotFound) {
      Respond(StatusCode::kNotFound, "");
    } else {
      RespondError(handle.status());
    }
    return;
  }
  FetchedValue value;
  value.in_dram = true;
  value.handle = std::move(handle).value();
  RespondValue(std::move(value));
}

void Connection::RespondValue(FetchedValue value) {
  std::vector<ReadHandle> pins;
  std::vector<std::vector<uint8_t>> owned;
  std::vector<iovec> iov;
  uint64_t checksum = 0;
  if (value.in_dram) {
    iov.assign(value.handle.iov().begin(), value.handle.iov().end());
    checksum = value.handle.checksum();
    pins.push_back(std::move(value.handle));
  } else {
    checksum = value.checksum;
    if (!value.bytes.empty()) iov.push_back({value.bytes.data(), value.bytes.size()});
    owned.push_back(std::move(value.bytes));
  }
  Respond(StatusCode::kOk, "", std::move(iov), std::move(pins), checksum, std::move(owned));
}

void Connection::HandleBatchGet() {
  std::vector<std::string_view> keys;
  Status valid = proto::DecodeKeyList(meta_, &keys);
  if (!valid.ok()) {
    RespondError(valid);
    return;
  }
  auto slots = std::make_shared<std::vector<BatchGetSlot>>(keys.size());
  auto drive_keys = std::make_shared<std::vector<std::pair<size_t, std::string>>>();
  for (size_t i = 0; i < keys.size(); ++i) {
    Result<ReadHandle> handle = ctx_.store->Get(keys[i]);
    BatchGetSlot& slot = (*slots)[i];
    if (handle.ok()) {
      slot.status = StatusCode::kOk;
      slot.value.in_dram = true;
      slot.value.handle = std::move(handle).value();
    } else if (handle.status().code() == StatusCode::kNotFound && Tiered() && ctx_.tier->OnDriveOnly(keys[i])) {
      drive_keys->emplace_back(i, std::string(keys[i]));
    } else {
      slot.status = handle.status().code();
    }
  }
  if (drive_keys->empty()) {
    RespondBatchGet(*slots);
    return;
  }
  Tier* tier = ctx_.tier;
  RunOnDrive(
      drive_keys->size(),
      [tier, slots, drive_keys](size_t j) {
        const auto& [i, key] = (*drive_keys)[j];
        Result<FetchedValue> value = tier->Fetch(key, /*need_dram=*/false);
        BatchGetSlot& slot = (*slots)[i];
        slot.status = value.ok() ? StatusCode::kOk : value.status().code();
        if (value.ok()) slot.value = std::move(value).value();
      },
      [slots]() -> DriveDone { return [slots](Connection& c) { c.RespondBatchGet(*slots); }; });
}

void Connection::RespondBatchGet(std::vector<BatchGetSlot>& slots) {
  std::vector<proto::GetItem> items(slots.size());
  std::vector<iovec> iov;
  std::vector<ReadHandle> pins;
  std::vector<std::vector<uint8_t>> owned;
  uint64_t total = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    BatchGetSlot& slot = slots[i];
    items[i].status = slot.status;
    if (slot.status != StatusCode::kOk) continue;
    FetchedValue& v = slot.value;
    const uint64_t size = v.in_dram ? v.handle.size() : v.size;
    if (total + size > proto::kMaxPayloadBytes) {
      // The answer would exceed one frame; the client fetches this one alone.
      items[i].status = StatusCode::kTooLarge;
      continue;
    }
    total += size;
    if (v.in_dram) {
      items[i] = {StatusCode::kOk, size, v.handle.checksum()};
      iov.insert(iov.end(), v.handle.iov().begin(), v.handle.iov().end());
      pins.push_back(std::move(v.handle));
    } else {
      items[i] = {StatusCode::kOk, size, v.checksum};
      if (size > 0) iov.push_back({v.bytes.data(), v.bytes.size()});
      owned.push_back(std::move(v.bytes));
    }
  }
  Respond(StatusCode::kOk, proto::EncodeBatchGetResponse(items), std::move(iov), std::move(pins), 0,
          std::move(owned));
}

void Connection::HandleDelete(std::string_view key) {
  Status s = proto::CheckKey(key);
  if (s.ok() && Tiered()) {
    DeleteThrough(std::string(key));
    return;
  }
  if (s.ok()) s = ctx_.store->Delete(key);
  if (s.code() == StatusCode::kNotFound) {
    Respond(StatusCode::kNotFound, "");
  } else {
    RespondError(s);
  }
}

void Connection::HandleExists(std::string_view key) {
  Status s = proto::CheckKey(key);
  if (!s.ok()) {
    RespondError(s);
    return;
  }
  Respond(ctx_.tier->Exists(key) ? StatusCode::kOk : StatusCode::kNotFound, "");
}

void Connection::HandleStat(std::string_view key) {
  Status s = proto::CheckKey(key);
  if (!s.ok()) {
    RespondError(s);
    return;
  }
  std::optional<uint64_t> size = ctx_.tier->ValueSize(key);
  if (!size) {
    Respond(StatusCode::kNotFound, "");
    return;
  }
  Respond(StatusCode::kOk, proto::EncodeStatResponse(*size));
}

void Connection::HandleBatchExists() {
  std::vector<std::string_view> keys;
  Status valid = proto::DecodeKeyList(meta_, &keys);
  if (!valid.ok()) {
    RespondError(valid);
    return;
  }
  std::vector<StatusCode> statuses;
  statuses.reserve(keys.size());
  for (std::string_view key : keys) {
    statuses.push_back(ctx_.tier->Exists(key) ? StatusCode::kOk : StatusCode::kNotFound);
  }
  Respond(StatusCode::kOk, proto::EncodeStatusList(statuses));
}

void Connection::HandleList() {
  proto::ListRequest request;
  Status valid = proto::DecodeListRequest(meta_, &request);
  if (!valid.ok()) {
    RespondError(valid);
    return;
  }
  KeyPage page(request.prefix, request.after, request.limit);
  ctx_.tier->OfferKeys(&page);
  const std::vector<std::string> keys = page.Take();
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  Respond(StatusCode::kOk, proto::EncodeListResponse(views, page.more()));
}

}  // namespace memkv
