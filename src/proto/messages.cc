#include "proto/messages.h"

#include <cstring>

#include "base/bytes.h"

namespace memkv::proto {
namespace {

// Bounds-checked little-endian reader over a meta section.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> data) : data_(data) {}
  bool U8(uint8_t* v) { return Take(1, [&](const uint8_t* p) { *v = *p; }); }
  bool U16(uint16_t* v) { return Take(2, [&](const uint8_t* p) { *v = LoadLe16(p); }); }
  bool U32(uint32_t* v) { return Take(4, [&](const uint8_t* p) { *v = LoadLe32(p); }); }
  bool U64(uint64_t* v) { return Take(8, [&](const uint8_t* p) { *v = LoadLe64(p); }); }
  bool Bytes(size_t n, std::string_view* v) {
    return Take(n, [&](const uint8_t* p) { *v = std::string_view(reinterpret_cast<const char*>(p), n); });
  }
  bool AtEnd() const { return pos_ == data_.size(); }

 private:
  template <typename F>
  bool Take(size_t n, F f) {
    if (data_.size() - pos_ < n) return false;
    f(data_.data() + pos_);
    pos_ += n;
    return true;
  }
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
};

class Writer {
 public:
  void U8(uint8_t v) { Put(1, [&](uint8_t* p) { *p = v; }); }
  void U16(uint16_t v) { Put(2, [&](uint8_t* p) { StoreLe16(p, v); }); }
  void U32(uint32_t v) { Put(4, [&](uint8_t* p) { StoreLe32(p, v); }); }
  void U64(uint64_t v) { Put(8, [&](uint8_t* p) { StoreLe64(p, v); }); }
  void Bytes(std::string_view v) { out_.append(v); }
  void Reserve(size_t n) { out_.reserve(n); }
  std::string Take() { return std::move(out_); }

 private:
  template <typename F>
  void Put(size_t n, F f) {
    uint8_t bytes[8];
    f(bytes);
    out_.append(reinterpret_cast<const char*>(bytes), n);
  }
  std::string out_;
};

Status Truncated(std::string_view what) {
  return ProtocolError(std::string(what) + " meta is truncated or has trailing bytes");
}

Status CheckCount(uint32_t count) {
  if (count == 0) return InvalidArgument("batch has no items");
  if (count > kMaxBatchItems) {
    return TooLarge("batch of " + std::to_string(count) + " items exceeds the limit of " +
                    std::to_string(kMaxBatchItems));
  }
  return Status::Ok();
}

Status CheckCountMatches(uint32_t count, uint32_t expected) {
  if (count != expected) {
    return ProtocolError("response has " + std::to_string(count) + " items, request had " +
                         std::to_string(expected));
  }
  return Status::Ok();
}

}  // namespace

std::string EncodeConnectResponse(const ConnectResponse& r) {
  Writer w;
  w.Bytes(std::string_view(reinterpret_cast<const char*>(r.server_nonce.data()), kNonceSize));
  w.U32(r.max_key_bytes);
  w.U64(r.max_value_bytes);
  w.U32(r.max_batch_items);
  w.U32(r.max_inflight);
  return w.Take();
}

Status DecodeConnectResponse(std::span<const uint8_t> meta, ConnectResponse* out,
                             std::span<const uint8_t>* rest) {
  Reader r(meta);
  std::string_view nonce;
  if (!r.Bytes(kNonceSize, &nonce) || !r.U32(&out->max_key_bytes) || !r.U64(&out->max_value_bytes) ||
      !r.U32(&out->max_batch_items) || !r.U32(&out->max_inflight)) {
    return Truncated("Connect response");
  }
  std::memcpy(out->server_nonce.data(), nonce.data(), kNonceSize);
  *rest = meta.subspan(kNonceSize + 20);
  return Status::Ok();
}

namespace {

void PutGid(Writer& w, const RdmaGid& gid) {
  w.Bytes(std::string_view(reinterpret_cast<const char*>(gid.data()), gid.size()));
}

bool GetGid(Reader& r, RdmaGid* gid) {
  std::string_view bytes;
  if (!r.Bytes(gid->size(), &bytes)) return false;
  std::memcpy(gid->data(), bytes.data(), gid->size());
  return true;
}

void PutQps(Writer& w, const std::vector<RdmaQp>& qps) {
  for (const RdmaQp& qp : qps) {
    w.U32(qp.qpn);
    w.U32(qp.psn);
  }
}

bool GetQps(Reader& r, uint32_t count, std::vector<RdmaQp>* qps) {
  qps->resize(count);
  for (RdmaQp& qp : *qps) {
    if (!r.U32(&qp.qpn) || !r.U32(&qp.psn)) return false;
  }
  return true;
}

constexpr uint8_t kRdmaOfferVersion = 1;

}  // namespace

std::string EncodeRdmaOffer(const RdmaOffer& offer) {
  Writer w;
  w.U16(kRdmaOfferVersion);
  w.U16(static_cast<uint16_t>(offer.qps.size()));
  w.U32(offer.mtu);
  PutGid(w, offer.gid);
  PutQps(w, offer.qps);
  return w.Take();
}

Status DecodeRdmaOffer(std::span<const uint8_t> meta, bool* has_offer, RdmaOffer* out) {
  *has_offer = !meta.empty();
  if (meta.empty()) return Status::Ok();
  Reader r(meta);
  uint16_t version = 0, count = 0;
  if (!r.U16(&version) || !r.U16(&count) || !r.U32(&out->mtu) || !GetGid(r, &out->gid)) {
    return Truncated("Connect RDMA offer");
  }
  if (version != kRdmaOfferVersion) {
    return ProtocolError("Connect RDMA offer version " + std::to_string(version) + " is not " +
                         std::to_string(kRdmaOfferVersion));
  }
  if (count == 0 || count > kMaxRdmaQps) {
    return InvalidArgument("Connect RDMA offer has " + std::to_string(count) + " QPs; allowed 1.." +
                           std::to_string(kMaxRdmaQps));
  }
  if (!GetQps(r, count, &out->qps) || !r.AtEnd()) return Truncated("Connect RDMA offer");
  return Status::Ok();
}

std::string EncodeRdmaAnswer(const RdmaAnswer& a) {
  Writer w;
  w.U16(static_cast<uint16_t>(a.result));
  w.U16(static_cast<uint16_t>(a.message.size()));
  w.Bytes(a.message);
  if (a.result != RdmaAnswerResult::kAccepted) return w.Take();
  w.U32(a.mtu);
  w.U16(a.traffic_class);
  w.U16(a.service_level);
  w.U32(a.rkey);
  PutGid(w, a.gid);
  w.U32(static_cast<uint32_t>(a.qps.size()));
  PutQps(w, a.qps);
  return w.Take();
}

Status DecodeRdmaAnswer(std::span<const uint8_t> meta, RdmaAnswer* out) {
  Reader r(meta);
  uint16_t result = 0, message_len = 0;
  std::string_view message;
  if (!r.U16(&result) || !r.U16(&message_len) || !r.Bytes(message_len, &message)) {
    return Truncated("Connect RDMA answer");
  }
  if (result > static_cast<uint16_t>(RdmaAnswerResult::kUnavailable)) {
    return ProtocolError("Connect RDMA answer has unknown result " + std::to_string(result));
  }
  out->result = static_cast<RdmaAnswerResult>(result);
  out->message.assign(message);
  if (out->result != RdmaAnswerResult::kAccepted) {
    return r.AtEnd() ? Status::Ok() : Truncated("Connect RDMA answer");
  }
  uint16_t tc = 0, sl = 0;
  uint32_t count = 0;
  if (!r.U32(&out->mtu) || !r.U16(&tc) || !r.U16(&sl) || !r.U32(&out->rkey) || !GetGid(r, &out->gid) ||
      !r.U32(&count)) {
    return Truncated("Connect RDMA answer");
  }
  if (count == 0 || count > kMaxRdmaQps || tc > 255 || sl > 15) {
    return ProtocolError("Connect RDMA answer is out of range (" + std::to_string(count) + " QPs, traffic class " +
                         std::to_string(tc) + ", service level " + std::to_string(sl) + ")");
  }
  out->traffic_class = static_cast<uint8_t>(tc);
  out->service_level = static_cast<uint8_t>(sl);
  if (!GetQps(r, count, &out->qps) || !r.AtEnd()) return Truncated("Connect RDMA answer");
  return Status::Ok();
}

std::string EncodeRdmaPutRequest(std::string_view key, uint64_t value_len, uint64_t checksum) {
  Writer w;
  w.U64(value_len);
  w.U64(checksum);
  w.Bytes(key);
  return w.Take();
}

Status DecodeRdmaPutRequest(std::span<const uint8_t> meta, std::string_view* key, uint64_t* value_len,
                            uint64_t* checksum) {
  Reader r(meta);
  if (!r.U64(value_len) || !r.U64(checksum)) return Truncated("RdmaPut request");
  if (!r.Bytes(meta.size() - 16, key)) return Truncated("RdmaPut request");
  MEMKV_RETURN_IF_ERROR(CheckKey(*key));
  if (*value_len > kMaxValueBytesCeiling) {
    return TooLarge("value of " + std::to_string(*value_len) + " bytes exceeds the protocol's limit of " +
                    std::to_string(kMaxValueBytesCeiling) + " bytes");
  }
  return Status::Ok();
}

std::string EncodeRdmaGrant(const RdmaGrant& g) {
  Writer w;
  w.U64(g.token);
  w.U64(g.value_len);
  w.U64(g.checksum);
  w.U32(static_cast<uint32_t>(g.segments.size()));
  for (const RemoteSegment& s : g.segments) {
    w.U64(s.addr);
    w.U32(s.len);
  }
  return w.Take();
}

Status DecodeRdmaGrant(std::span<const uint8_t> meta, RdmaGrant* out) {
  Reader r(meta);
  uint32_t count = 0;
  if (!r.U64(&out->token) || !r.U64(&out->value_len) || !r.U64(&out->checksum) || !r.U32(&count)) {
    return Truncated("RDMA grant");
  }
  if (out->value_len > kMaxValueBytesCeiling || count > (meta.size() / 12)) {
    return ProtocolError("RDMA grant is out of range (" + std::to_string(out->value_len) + " bytes in " +
                         std::to_string(count) + " segments)");
  }
  out->segments.resize(count);
  uint64_t total = 0;
  for (RemoteSegment& s : out->segments) {
    if (!r.U64(&s.addr) || !r.U32(&s.len)) return Truncated("RDMA grant");
    total += s.len;
  }
  if (!r.AtEnd()) return Truncated("RDMA grant");
  if (total != out->value_len) {
    return ProtocolError("RDMA grant segments add up to " + std::to_string(total) + " bytes, not the " +
                         std::to_string(out->value_len) + " of the value");
  }
  return Status::Ok();
}

std::string EncodeToken(uint64_t token) {
  Writer w;
  w.U64(token);
  return w.Take();
}

Status DecodeToken(std::span<const uint8_t> meta, uint64_t* token) {
  Reader r(meta);
  if (!r.U64(token) || !r.AtEnd()) return Truncated("RDMA token");
  return Status::Ok();
}

std::string EncodeIdentifyResponse(const IdentifyResponse& response) {
  Writer w;
  w.U16(static_cast<uint16_t>(response.tag.size()));
  w.Bytes(response.tag);
  w.U16(static_cast<uint16_t>(response.tenant.size()));
  w.Bytes(response.tenant);
  return w.Take();
}

Status DecodeIdentifyResponse(std::span<const uint8_t> meta, IdentifyResponse* out) {
  Reader r(meta);
  uint16_t len = 0;
  std::string_view tag, tenant;
  if (!r.U16(&len) || !r.Bytes(len, &tag) || !r.U16(&len) || !r.Bytes(len, &tenant) || !r.AtEnd()) {
    return Truncated("Identify response");
  }
  out->tag = std::string(tag);
  out->tenant = std::string(tenant);
  return Status::Ok();
}

std::string EncodeClientReport(const ClientReport& report) {
  Writer w;
  w.U64(report.fetched_in_time);
  w.U64(report.fetched_late);
  w.U64(report.stores_shed);
  return w.Take();
}

Status DecodeClientReport(std::span<const uint8_t> meta, ClientReport* out) {
  Reader r(meta);
  if (!r.U64(&out->fetched_in_time) || !r.U64(&out->fetched_late) || !r.U64(&out->stores_shed) || !r.AtEnd()) {
    return Truncated("Report");
  }
  return Status::Ok();
}

Status CheckKey(std::string_view key) {
  if (key.empty()) return InvalidArgument("key is empty; keys are 1.." + std::to_string(kMaxKeyBytes) + " bytes");
  if (key.size() > kMaxKeyBytes) {
    return TooLarge("key of " + std::to_string(key.size()) + " bytes exceeds the limit of " +
                    std::to_string(kMaxKeyBytes) + " bytes");
  }
  return Status::Ok();
}

std::string EncodeBatchPutRequest(std::span<const PutItem> items) {
  Writer w;
  size_t bytes = 4;
  for (const PutItem& item : items) bytes += 2 + item.key.size() + 16;
  w.Reserve(bytes);
  w.U32(static_cast<uint32_t>(items.size()));
  for (const PutItem& item : items) {
    w.U16(static_cast<uint16_t>(item.key.size()));
    w.Bytes(item.key);
    w.U64(item.value_len);
    w.U64(item.checksum);
  }
  return w.Take();
}

Status DecodeBatchPutRequest(std::span<const uint8_t> meta, uint64_t payload_len,
                             std::vector<PutItem>* out) {
  Reader r(meta);
  uint32_t count = 0;
  if (!r.U32(&count)) return Truncated("BatchPut");
  MEMKV_RETURN_IF_ERROR(CheckCount(count));
  out->clear();
  out->reserve(count);
  uint64_t total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    uint16_t key_len = 0;
    PutItem item;
    if (!r.U16(&key_len) || !r.Bytes(key_len, &item.key) || !r.U64(&item.value_len) ||
        !r.U64(&item.checksum)) {
      return Truncated("BatchPut");
    }
    // The context is built only for a refusal: this runs for every key of a batch.
    if (Status valid = CheckKey(item.key); !valid.ok()) return valid.WithContext("item " + std::to_string(i));
    if (item.value_len > kMaxPayloadBytes) {
      return TooLarge("item " + std::to_string(i) + ": value of " + std::to_string(item.value_len) +
                      " bytes exceeds a batch frame's payload limit of " + std::to_string(kMaxPayloadBytes) +
                      " bytes");
    }
    total += item.value_len;
    out->push_back(item);
  }
  if (!r.AtEnd()) return Truncated("BatchPut");
  if (total != payload_len) {
    return ProtocolError("BatchPut value lengths add up to " + std::to_string(total) +
                         " but payload_len is " + std::to_string(payload_len));
  }
  return Status::Ok();
}

std::string EncodeKeyList(std::span<const std::string_view> keys) {
  Writer w;
  size_t bytes = 4;
  for (std::string_view key : keys) bytes += 2 + key.size();
  w.Reserve(bytes);
  w.U32(static_cast<uint32_t>(keys.size()));
  for (std::string_view key : keys) {
    w.U16(static_cast<uint16_t>(key.size()));
    w.Bytes(key);
  }
  return w.Take();
}

Status DecodeKeyList(std::span<const uint8_t> meta, std::vector<std::string_view>* out) {
  Reader r(meta);
  uint32_t count = 0;
  if (!r.U32(&count)) return Truncated("key list");
  MEMKV_RETURN_IF_ERROR(CheckCount(count));
  out->clear();
  out->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint16_t key_len = 0;
    std::string_view key;
    if (!r.U16(&key_len) || !r.Bytes(key_len, &key)) return Truncated("key list");
    if (Status valid = CheckKey(key); !valid.ok()) return valid.WithContext("item " + std::to_string(i));
    out->push_back(key);
  }
  if (!r.AtEnd()) return Truncated("key list");
  return Status::Ok();
}

std::string EncodeListRequest(const ListRequest& request) {
  Writer w;
  w.U32(request.limit);
  w.U16(static_cast<uint16_t>(request.prefix.size()));
  w.Bytes(request.prefix);
  w.U16(static_cast<uint16_t>(request.after.size()));
  w.Bytes(request.after);
  return w.Take();
}

Status DecodeListRequest(std::span<const uint8_t> meta, ListRequest* out) {
  Reader r(meta);
  uint16_t prefix_len = 0;
  uint16_t after_len = 0;
  if (!r.U32(&out->limit) || !r.U16(&prefix_len) || !r.Bytes(prefix_len, &out->prefix) || !r.U16(&after_len) ||
      !r.Bytes(after_len, &out->after) || !r.AtEnd()) {
    return Truncated("List request");
  }
  if (out->limit == 0 || out->limit > kMaxBatchItems) {
    return InvalidArgument("List page size " + std::to_string(out->limit) + " is out of range; allowed: 1.." +
                           std::to_string(kMaxBatchItems));
  }
  for (auto [name, part] : {std::pair{"prefix", out->prefix}, std::pair{"cursor", out->after}}) {
    if (part.size() > kMaxKeyBytes) {
      return TooLarge(std::string("List ") + name + " of " + std::to_string(part.size()) +
                      " bytes exceeds the key limit of " + std::to_string(kMaxKeyBytes));
    }
  }
  return Status::Ok();
}

std::string EncodeListResponse(std::span<const std::string_view> keys, bool more) {
  Writer w;
  w.U32(static_cast<uint32_t>(keys.size()));
  for (std::string_view key : keys) {
    w.U16(static_cast<uint16_t>(key.size()));
    w.Bytes(key);
  }
  w.U8(more ? 1 : 0);
  return w.Take();
}

Status DecodeListResponse(std::span<const uint8_t> meta, uint32_t limit, ListResponse* out) {
  Reader r(meta);
  uint32_t count = 0;
  if (!r.U32(&count)) return Truncated("List response");
  if (count > limit) {
    return ProtocolError("List response has " + std::to_string(count) + " keys, more than the " +
                         std::to_string(limit) + " asked for");
  }
  out->keys.clear();
  out->keys.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint16_t key_len = 0;
    std::string_view key;
    if (!r.U16(&key_len) || !r.Bytes(key_len, &key)) return Truncated("List response");
    MEMKV_RETURN_IF_ERROR(CheckKey(key).WithContext("List response key " + std::to_string(i)));
    if (!out->keys.empty() && !(out->keys.back() < key)) {
      return ProtocolError("List response keys are not in strictly increasing order at key " + std::to_string(i));
    }
    out->keys.push_back(key);
  }
  uint8_t more = 0;
  if (!r.U8(&more) || more > 1 || !r.AtEnd()) return Truncated("List response");
  out->more = more == 1;
  return Status::Ok();
}

std::string EncodeStatResponse(uint64_t value_len) {
  Writer w;
  w.U64(value_len);
  return w.Take();
}

Status DecodeStatResponse(std::span<const uint8_t> meta, uint64_t* value_len) {
  Reader r(meta);
  if (!r.U64(value_len) || !r.AtEnd()) return Truncated("Stat response");
  return Status::Ok();
}

std::string EncodeStatusList(std::span<const StatusCode> statuses) {
  Writer w;
  w.U32(static_cast<uint32_t>(statuses.size()));
  for (StatusCode s : statuses) w.U16(static_cast<uint16_t>(s));
  return w.Take();
}

Status DecodeStatusList(std::span<const uint8_t> meta, uint32_t expected_count,
                        std::vector<StatusCode>* out) {
  Reader r(meta);
  uint32_t count = 0;
  if (!r.U32(&count)) return Truncated("status list");
  MEMKV_RETURN_IF_ERROR(CheckCountMatches(count, expected_count));
  out->assign(count, StatusCode::kOk);
  for (uint32_t i = 0; i < count; ++i) {
    uint16_t s = 0;
    if (!r.U16(&s)) return Truncated("status list");
    (*out)[i] = static_cast<StatusCode>(s);
  }
  if (!r.AtEnd()) return Truncated("status list");
  return Status::Ok();
}

std::string EncodeBatchGetResponse(std::span<const GetItem> items) {
  Writer w;
  w.U32(static_cast<uint32_t>(items.size()));
  for (const GetItem& item : items) {
    w.U16(static_cast<uint16_t>(item.status));
    w.U64(item.value_len);
    w.U64(item.checksum);
  }
  return w.Take();
}

Status DecodeBatchGetResponse(std::span<const uint8_t> meta, uint32_t expected_count,
                              uint64_t payload_len, std::vector<GetItem>* out) {
  Reader r(meta);
  uint32_t count = 0;
  if (!r.U32(&count)) return Truncated("BatchGet response");
  MEMKV_RETURN_IF_ERROR(CheckCountMatches(count, expected_count));
  out->assign(count, GetItem{});
  uint64_t total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    uint16_t s = 0;
    GetItem& item = (*out)[i];
    if (!r.U16(&s) || !r.U64(&item.value_len) || !r.U64(&item.checksum)) {
      return Truncated("BatchGet response");
    }
    item.status = static_cast<StatusCode>(s);
    if (item.status != StatusCode::kOk && item.value_len != 0) {
      return ProtocolError("BatchGet response item " + std::to_string(i) + " is a miss with a value");
    }
    if (item.value_len > kMaxPayloadBytes) return ProtocolError("BatchGet response value too large");
    total += item.value_len;
  }
  if (!r.AtEnd()) return Truncated("BatchGet response");
  if (total != payload_len) {
    return ProtocolError("BatchGet response lengths add up to " + std::to_string(total) +
                         " but payload_len is " + std::to_string(payload_len));
  }
  return Status::Ok();
}

// ---- Put options ----

namespace {

// ttl_ms u64 | retention u8 | hash_kind u8 | parent_key_len u16 | parent_key |
// block_hash_len u8 | block_hash | parent_hash_len u8 | parent_hash
constexpr size_t kPutOptionsFixedBytes = 8 + 1 + 1 + 2 + 1 + 1;

void WritePutOptions(Writer& w, const PutOptions& o) {
  w.U64(o.ttl_ms);
  w.U8(static_cast<uint8_t>(o.retention));
  w.U8(static_cast<uint8_t>(o.hash_kind));
  w.U16(static_cast<uint16_t>(o.parent_key.size()));
  w.Bytes(o.parent_key);
  w.U8(static_cast<uint8_t>(o.block_hash.size()));
  w.Bytes(o.block_hash);
  w.U8(static_cast<uint8_t>(o.parent_hash.size()));
  w.Bytes(o.parent_hash);
}

Status CheckRetention(uint8_t retention) {
  if (retention <= kMaxRetention) return Status::Ok();
  return InvalidArgument("retention " + std::to_string(retention) +
                         " is not a retention class; allowed: 0 (normal), 1 (pinned), 2 (evict_first)");
}

Status CheckHashKind(uint8_t kind) {
  if (kind <= static_cast<uint8_t>(HashKind::kInt64)) return Status::Ok();
  return InvalidArgument("hash kind " + std::to_string(kind) + " is not a hash kind; allowed: 0 (bytes), 1 (int64)");
}

Status CheckHash(std::string_view name, size_t size) {
  if (size <= kMaxBlockHashBytes) return Status::Ok();
  return InvalidArgument(std::string(name) + " of " + std::to_string(size) + " bytes exceeds the limit of " +
                         std::to_string(kMaxBlockHashBytes) + " bytes");
}

// False when truncated; *valid says whether the values are in range.
bool ReadPutOptions(Reader& r, PutOptions* o, Status* valid) {
  uint8_t retention = 0, kind = 0, block_len = 0, parent_hash_len = 0;
  uint16_t parent_len = 0;
  std::string_view parent, block, parent_hash;
  if (!r.U64(&o->ttl_ms) || !r.U8(&retention) || !r.U8(&kind) || !r.U16(&parent_len) ||
      !r.Bytes(parent_len, &parent) || !r.U8(&block_len) || !r.Bytes(block_len, &block) ||
      !r.U8(&parent_hash_len) || !r.Bytes(parent_hash_len, &parent_hash)) {
    return false;
  }
  o->retention = static_cast<Retention>(retention);
  o->hash_kind = static_cast<HashKind>(kind);
  o->parent_key.assign(parent);
  o->block_hash.assign(block);
  o->parent_hash.assign(parent_hash);
  *valid = CheckRetention(retention);
  if (valid->ok()) *valid = CheckHashKind(kind);
  if (valid->ok()) *valid = CheckPutOptions(*o);
  return true;
}

}  // namespace

Status CheckPutOptions(const PutOptions& o) {
  MEMKV_RETURN_IF_ERROR(CheckRetention(static_cast<uint8_t>(o.retention)));
  MEMKV_RETURN_IF_ERROR(CheckHashKind(static_cast<uint8_t>(o.hash_kind)));
  if (o.parent_key.size() > kMaxKeyBytes) {
    return InvalidArgument("parent_key of " + std::to_string(o.parent_key.size()) + " bytes exceeds the limit of " +
                           std::to_string(kMaxKeyBytes) + " bytes");
  }
  MEMKV_RETURN_IF_ERROR(CheckHash("block_hash", o.block_hash.size()));
  return CheckHash("parent_hash", o.parent_hash.size());
}

size_t PutOptionsWireBytes(const PutOptions& o) {
  return kPutOptionsFixedBytes + o.parent_key.size() + o.block_hash.size() + o.parent_hash.size();
}

size_t BatchPutWithItemBytes(std::string_view key, const PutOptions& options) {
  return 2 + key.size() + 16 + PutOptionsWireBytes(options);
}

std::string EncodeBatchPutWithRequest(std::span<const PutItem> items, std::span<const PutOptions> options) {
  Writer w;
  w.U32(static_cast<uint32_t>(items.size()));
  for (size_t i = 0; i < items.size(); ++i) {
    w.U16(static_cast<uint16_t>(items[i].key.size()));
    w.Bytes(items[i].key);
    w.U64(items[i].value_len);
    w.U64(items[i].checksum);
    WritePutOptions(w, options[i]);
  }
  return w.Take();
}

Status DecodeBatchPutWithRequest(std::span<const uint8_t> meta, uint64_t payload_len, std::vector<PutItem>* items,
                                 std::vector<PutOptions>* options) {
  Reader r(meta);
  uint32_t count = 0;
  if (!r.U32(&count)) return Truncated("BatchPutWith");
  MEMKV_RETURN_IF_ERROR(CheckCount(count));
  items->clear();
  options->assign(count, PutOptions());
  uint64_t total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    uint16_t key_len = 0;
    PutItem item;
    Status valid;
    if (!r.U16(&key_len) || !r.Bytes(key_len, &item.key) || !r.U64(&item.value_len) || !r.U64(&item.checksum) ||
        !ReadPutOptions(r, &(*options)[i], &valid)) {
      return Truncated("BatchPutWith");
    }
    const std::string where = "item " + std::to_string(i);
    MEMKV_RETURN_IF_ERROR(CheckKey(item.key).WithContext(where));
    MEMKV_RETURN_IF_ERROR(valid.WithContext(where));
    if (item.value_len > kMaxPayloadBytes) {
      return TooLarge(where + ": value of " + std::to_string(item.value_len) +
                      " bytes exceeds a batch frame's payload limit of " + std::to_string(kMaxPayloadBytes) +
                      " bytes");
    }
    total += item.value_len;
    items->push_back(item);
  }
  if (!r.AtEnd()) return Truncated("BatchPutWith");
  if (total != payload_len) {
    return ProtocolError("BatchPutWith value lengths add up to " + std::to_string(total) + " but payload_len is " +
                         std::to_string(payload_len));
  }
  return Status::Ok();
}

std::string EncodeStatusMessageList(std::span<const Status> statuses) {
  Writer w;
  w.U32(static_cast<uint32_t>(statuses.size()));
  for (const Status& s : statuses) {
    w.U16(static_cast<uint16_t>(s.code()));
    const std::string_view message = std::string_view(s.message()).substr(0, kMaxStatusMessageBytes);
    w.U16(static_cast<uint16_t>(message.size()));
    w.Bytes(message);
  }
  return w.Take();
}

Status DecodeStatusMessageList(std::span<const uint8_t> meta, uint32_t expected_count, std::vector<Status>* out) {
  Reader r(meta);
  uint32_t count = 0;
  if (!r.U32(&count)) return Truncated("status list");
  MEMKV_RETURN_IF_ERROR(CheckCountMatches(count, expected_count));
  out->clear();
  out->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint16_t code = 0, len = 0;
    std::string_view message;
    if (!r.U16(&code) || !r.U16(&len) || !r.Bytes(len, &message)) return Truncated("status list");
    if (code > static_cast<uint16_t>(StatusCode::kFailedPrecondition)) {
      return ProtocolError("status list item " + std::to_string(i) + " has unknown status code " +
                           std::to_string(code));
    }
    out->emplace_back(static_cast<StatusCode>(code), std::string(message));
  }
  if (!r.AtEnd()) return Truncated("status list");
  return Status::Ok();
}

std::string EncodeRdmaPutWithRequest(std::string_view key, uint64_t value_len, uint64_t checksum,
                                     const PutOptions& options) {
  Writer w;
  w.U64(value_len);
  w.U64(checksum);
  WritePutOptions(w, options);
  w.Bytes(key);
  return w.Take();
}

Status DecodeRdmaPutWithRequest(std::span<const uint8_t> meta, std::string_view* key, uint64_t* value_len,
                                uint64_t* checksum, PutOptions* options) {
  Reader r(meta);
  Status valid;
  if (!r.U64(value_len) || !r.U64(checksum) || !ReadPutOptions(r, options, &valid)) {
    return Truncated("RdmaPutWith request");
  }
  const size_t used = 16 + PutOptionsWireBytes(*options);
  if (!r.Bytes(meta.size() - used, key)) return Truncated("RdmaPutWith request");
  MEMKV_RETURN_IF_ERROR(CheckKey(*key));
  MEMKV_RETURN_IF_ERROR(valid);
  if (*value_len > kMaxValueBytesCeiling) {
    return TooLarge("value of " + std::to_string(*value_len) + " bytes exceeds the protocol's limit of " +
                    std::to_string(kMaxValueBytesCeiling) + " bytes");
  }
  return Status::Ok();
}

std::string EncodeRdmaCommitToRequest(uint64_t token, std::string_view key, uint64_t value_len, uint64_t checksum,
                                      const PutOptions& options) {
  Writer w;
  w.U64(token);
  return w.Take() + EncodeRdmaPutWithRequest(key, value_len, checksum, options);
}

Status DecodeRdmaCommitToRequest(std::span<const uint8_t> meta, uint64_t* token, std::string_view* key,
                                 uint64_t* value_len, uint64_t* checksum, PutOptions* options) {
  Reader r(meta);
  if (!r.U64(token)) return Truncated("RdmaCommitTo request");
  return DecodeRdmaPutWithRequest(meta.subspan(8), key, value_len, checksum, options)
      .WithContext("RdmaCommitTo request");
}

std::string EncodeMatchPrefixResponse(uint32_t matched) {
  Writer w;
  w.U32(matched);
  return w.Take();
}

Status DecodeMatchPrefixResponse(std::span<const uint8_t> meta, uint32_t count, uint32_t* matched) {
  Reader r(meta);
  if (!r.U32(matched) || !r.AtEnd()) return Truncated("MatchPrefix response");
  if (*matched > count) {
    return ProtocolError("MatchPrefix response matched " + std::to_string(*matched) + " of " +
                         std::to_string(count) + " keys");
  }
  return Status::Ok();
}

size_t PresentPrefix(std::span<const StatusCode> statuses) {
  size_t n = 0;
  while (n < statuses.size() && statuses[n] == StatusCode::kOk) ++n;
  return n;
}

std::string EncodeServerInfo(const ServerInfo& info) {
  Writer w;
  w.U8(static_cast<uint8_t>(info.id.size()));
  w.Bytes(info.id);
  w.U64(info.capacity_bytes);
  w.U64(info.weight);
  w.U8(static_cast<uint8_t>((info.draining ? 1u : 0u) | (info.busy ? 2u : 0u)));
  return w.Take();
}

Status DecodeServerInfo(std::span<const uint8_t> meta, ServerInfo* out) {
  Reader r(meta);
  uint8_t id_len = 0;
  std::string_view id;
  uint8_t flags = 0;
  if (!r.U8(&id_len) || !r.Bytes(id_len, &id) || !r.U64(&out->capacity_bytes) || !r.U64(&out->weight) ||
      !r.U8(&flags)) {
    return Truncated("ServerInfo response");
  }
  if (id.empty() || id.size() > kMaxServerIdBytes) {
    return ProtocolError("ServerInfo: server id of " + std::to_string(id.size()) + " bytes; allowed 1.." +
                         std::to_string(kMaxServerIdBytes));
  }
  for (char c : id) {
    if (c < 0x21 || c > 0x7e) return ProtocolError("ServerInfo: server id holds a byte that is not printable ASCII");
  }
  out->id.assign(id);
  out->draining = (flags & 1u) != 0;
  out->busy = (flags & 2u) != 0;
  return Status::Ok();
}

}  // namespace memkv::proto
