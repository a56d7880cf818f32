#include "proto/messages.h"

#include <cstring>

#include "base/bytes.h"

namespace memkv::proto {
namespace {

// Bounds-checked little-endian reader over a meta section.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> data) : data_(data) {}
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
  void U16(uint16_t v) { Put(2, [&](uint8_t* p) { StoreLe16(p, v); }); }
  void U32(uint32_t v) { Put(4, [&](uint8_t* p) { StoreLe32(p, v); }); }
  void U64(uint64_t v) { Put(8, [&](uint8_t* p) { StoreLe64(p, v); }); }
  void Bytes(std::string_view v) { out_.append(v); }
  std::string Take() { return std::move(out_); }

 private:
  template <typename F>
  void Put(size_t n, F f) {
    size_t at = out_.size();
    out_.resize(at + n);
    f(reinterpret_cast<uint8_t*>(out_.data() + at));
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

Status DecodeConnectResponse(std::span<const uint8_t> meta, ConnectResponse* out) {
  Reader r(meta);
  std::string_view nonce;
  if (!r.Bytes(kNonceSize, &nonce) || !r.U32(&out->max_key_bytes) || !r.U64(&out->max_value_bytes) ||
      !r.U32(&out->max_batch_items) || !r.U32(&out->max_inflight) || !r.AtEnd()) {
    return Truncated("Connect response");
  }
  std::memcpy(out->server_nonce.data(), nonce.data(), kNonceSize);
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
    MEMKV_RETURN_IF_ERROR(CheckKey(item.key).WithContext("item " + std::to_string(i)));
    if (item.value_len > kMaxValueBytes) {
      return TooLarge("item " + std::to_string(i) + ": value of " + std::to_string(item.value_len) +
                      " bytes exceeds the limit of " + std::to_string(kMaxValueBytes) + " bytes");
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
    MEMKV_RETURN_IF_ERROR(CheckKey(key).WithContext("item " + std::to_string(i)));
    out->push_back(key);
  }
  if (!r.AtEnd()) return Truncated("key list");
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
    if (item.value_len > kMaxValueBytes) return ProtocolError("BatchGet response value too large");
    total += item.value_len;
  }
  if (!r.AtEnd()) return Truncated("BatchGet response");
  if (total != payload_len) {
    return ProtocolError("BatchGet response lengths add up to " + std::to_string(total) +
                         " but payload_len is " + std::to_string(payload_len));
  }
  return Status::Ok();
}

size_t PresentPrefix(std::span<const StatusCode> statuses) {
  size_t n = 0;
  while (n < statuses.size() && statuses[n] == StatusCode::kOk) ++n;
  return n;
}

}  // namespace memkv::proto
