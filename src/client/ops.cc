#include "client/ops.h"

#include <cctype>

#include "base/bytes.h"
#include "base/checksum.h"
#include "proto/messages.h"

namespace memkv::client {
namespace {

std::string MetaText(std::span<const uint8_t> meta) {
  return std::string(reinterpret_cast<const char*>(meta.data()), meta.size());
}

iovec ConstIov(std::span<const uint8_t> bytes) {
  // iovec is not const-correct; the bytes are only ever read from (sendmsg).
  return iovec{const_cast<uint8_t*>(bytes.data()), bytes.size()};
}

// The API call's name, which is what the caller knows (not the opcode's).
std::string OpName(proto::Opcode opcode) {
  switch (opcode) {
    case proto::Opcode::kPut: return "Put";
    case proto::Opcode::kGet: return "Get";
    case proto::Opcode::kDelete: return "Delete";
    case proto::Opcode::kExists: return "Exists";
    case proto::Opcode::kBatchPut: return "BatchPut";
    case proto::Opcode::kBatchGet: return "BatchGetInto";
    case proto::Opcode::kBatchExists: return "BatchExists";
    case proto::Opcode::kList: return "ListKeys";
    case proto::Opcode::kStat: return "ValueSize";
    case proto::Opcode::kBatchPutWith: return "BatchPutWith";
    case proto::Opcode::kMatchPrefix: return "MatchPrefix";
    default: return proto::OpcodeName(static_cast<uint8_t>(opcode));
  }
}

}  // namespace

std::string KeyForMessage(std::string_view key) {
  constexpr size_t kShown = 48;
  bool printable = true;
  for (char c : key.substr(0, kShown)) {
    if (!std::isprint(static_cast<unsigned char>(c)) || c == '\'') printable = false;
  }
  std::string out;
  if (printable) {
    out = "'" + std::string(key.substr(0, kShown)) + "'";
  } else {
    size_t n = std::min<size_t>(key.size(), kShown / 2);
    out = "0x" + HexEncode(reinterpret_cast<const uint8_t*>(key.data()), n);
  }
  size_t shown = printable ? kShown : kShown / 2;
  if (key.size() > shown) out += "... (" + std::to_string(key.size()) + " bytes)";
  return out;
}

Status StatusFromWire(StatusCode code, std::string message) {
  if (static_cast<uint16_t>(code) > static_cast<uint16_t>(StatusCode::kDraining)) {
    return Internal(message + " (server answered unknown status code " +
                    std::to_string(static_cast<uint16_t>(code)) + ")");
  }
  return Status(code, std::move(message));
}

// ---- SingleExchange ----

SingleExchange::SingleExchange(proto::Opcode opcode, std::string_view key, std::string_view server,
                               std::span<const uint8_t> value,
                               std::optional<std::span<uint8_t>> get_buffer)
    : opcode_(opcode), key_(key), server_(server), put_value_(value), get_buffer_(get_buffer) {}

std::string SingleExchange::Context() const {
  return OpName(opcode_) + " " + KeyForMessage(key_) + " on " + std::string(server_);
}

const Status& SingleExchange::NeverAnswered() {
  static const Status kNever = Internal("request was never answered in full (client bug)");
  return kNever;
}

RequestFrame SingleExchange::BuildRequest() {
  RequestFrame frame;
  frame.opcode = opcode_;
  frame.meta.assign(key_);
  if (opcode_ == proto::Opcode::kPut) {
    if (!put_value_.empty()) frame.payload.push_back(ConstIov(put_value_));
    frame.payload_len = put_value_.size();
    frame.payload_checksum = Checksum(put_value_.data(), put_value_.size());
  }
  return frame;
}

Status SingleExchange::OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                                  std::vector<PayloadSegment>* payload) {
  if (header.status != StatusCode::kOk) {
    if (header.payload_len != 0) {
      return ProtocolError(Context() + ": error response carries a " +
                           std::to_string(header.payload_len) + "-byte payload");
    }
    std::string text = MetaText(meta);
    if (header.status == StatusCode::kNotFound) {
      Answer(NotFound(Context() + ": not found" + (text.empty() ? "" : " (" + text + ")")));
    } else {
      Answer(StatusFromWire(header.status, Context() + ": " +
                                                  (text.empty() ? "server gave no reason" : text)));
    }
    return Status::Ok();
  }
  if (opcode_ == proto::Opcode::kStat) {
    if (header.payload_len != 0) return ProtocolError(Context() + ": Stat response carries a payload");
    MEMKV_RETURN_IF_ERROR(proto::DecodeStatResponse(meta, &value_size_).WithContext(Context()));
    Answer(Status::Ok());
    return Status::Ok();
  }
  if (opcode_ != proto::Opcode::kGet) {
    if (header.payload_len != 0 || !meta.empty()) {
      return ProtocolError(Context() + ": Ok response must carry no meta and no payload, got " +
                           std::to_string(meta.size()) + " and " +
                           std::to_string(header.payload_len) + " bytes");
    }
    Answer(Status::Ok());
    return Status::Ok();
  }
  if (!meta.empty()) return ProtocolError(Context() + ": Ok response must carry no meta");
  value_size_ = header.payload_len;
  PayloadSegment segment;
  segment.size = header.payload_len;
  segment.checksum = header.payload_checksum;
  if (get_buffer_.has_value()) {
    if (header.payload_len > get_buffer_->size()) {
      Answer(TooLarge(Context() + ": value of " + std::to_string(header.payload_len) +
                         " bytes does not fit the buffer of " + std::to_string(get_buffer_->size()) +
                         " bytes"));
      segment.discard = true;
      payload->push_back(segment);
      return Status::Ok();
    }
    segment.dst = get_buffer_->data();
  } else {
    value_.resize(header.payload_len);
    segment.dst = value_.data();
  }
  payload->push_back(segment);  // answered by OnSegment once the value is in
  return Status::Ok();
}

void SingleExchange::OnSegment(const PayloadSegment&, bool checksum_ok) {
  if (checksum_ok) {
    Answer(Status::Ok());
    return;
  }
  value_.clear();
  Answer(NotFound(Context() + ": value failed its checksum (XXH3-64 mismatch); treated as a miss"));
}

void SingleExchange::OnFailure(const Status& status) {
  value_.clear();
  Answer(status.WithContext(OpName(opcode_) + " " + KeyForMessage(key_)));
}

// ---- BatchExchange ----

RequestFrame BatchExchange::BuildRequest() {
  RequestFrame frame;
  frame.opcode = call_->opcode;
  if (IsBatchPut(call_->opcode)) {
    std::vector<proto::PutItem> items;
    items.reserve(items_.size());
    for (uint32_t index : items_) {
      std::span<const uint8_t> value = call_->values[index];
      items.push_back({call_->keys[index], value.size(), Checksum(value.data(), value.size())});
      if (!value.empty()) frame.payload.push_back(ConstIov(value));
      frame.payload_len += value.size();
    }
    if (call_->opcode == proto::Opcode::kBatchPut) {
      frame.meta = proto::EncodeBatchPutRequest(items);
    } else {
      std::vector<PutOptions> options;
      options.reserve(items_.size());
      for (uint32_t index : items_) options.push_back(call_->options[index]);
      frame.meta = proto::EncodeBatchPutWithRequest(items, options);
    }
  } else {
    std::vector<std::string_view> keys;
    keys.reserve(items_.size());
    for (uint32_t index : items_) keys.push_back(call_->keys[index]);
    frame.meta = proto::EncodeKeyList(keys);
  }
  return frame;
}

Status BatchExchange::ItemStatus(StatusCode code, size_t i) const {
  if (code == StatusCode::kOk) return Status::Ok();
  if (code == StatusCode::kNotFound) return NotFound("not found");
  return StatusFromWire(code, OpName(call_->opcode) + " on " + std::string(server_) + " reported " +
                                  std::string(StatusCodeName(code)) + " for key " +
                                  KeyForMessage(call_->keys[items_[i]]));
}

Status BatchExchange::OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                                 std::vector<PayloadSegment>* payload) {
  const std::string context = OpName(call_->opcode) + " of " + std::to_string(items_.size()) +
                              " keys on " + std::string(server_);
  if (header.status != StatusCode::kOk) {
    // The whole frame failed; its meta is the server's reason.
    if (header.payload_len != 0) {
      return ProtocolError(context + ": error response carries a payload");
    }
    std::string text = MetaText(meta);
    Status all = StatusFromWire(header.status,
                                context + ": " + (text.empty() ? "server gave no reason" : text));
    for (size_t i = 0; i < items_.size(); ++i) StatusOf(i) = all;
    return Status::Ok();
  }
  const auto count = static_cast<uint32_t>(items_.size());
  if (call_->opcode == proto::Opcode::kBatchPutWith) {
    // Each item's own message: a store's refusal (a pin past the cap) says why.
    if (header.payload_len != 0) return ProtocolError(context + ": response carries a payload");
    std::vector<Status> statuses;
    MEMKV_RETURN_IF_ERROR(proto::DecodeStatusMessageList(meta, count, &statuses).WithContext(context));
    for (size_t i = 0; i < statuses.size(); ++i) {
      StatusOf(i) = statuses[i].ok() ? Status::Ok()
                                     : Status(statuses[i].code(), OpName(call_->opcode) + " key " +
                                                                      KeyForMessage(call_->keys[items_[i]]) + " on " +
                                                                      std::string(server_) + ": " +
                                                                      statuses[i].message());
    }
    return Status::Ok();
  }
  if (call_->opcode != proto::Opcode::kBatchGet) {
    if (header.payload_len != 0) return ProtocolError(context + ": response carries a payload");
    std::vector<StatusCode> codes;
    MEMKV_RETURN_IF_ERROR(proto::DecodeStatusList(meta, count, &codes).WithContext(context));
    for (size_t i = 0; i < codes.size(); ++i) StatusOf(i) = ItemStatus(codes[i], i);
    return Status::Ok();
  }
  std::vector<proto::GetItem> got;
  MEMKV_RETURN_IF_ERROR(
      proto::DecodeBatchGetResponse(meta, count, header.payload_len, &got).WithContext(context));
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].status != StatusCode::kOk) {
      StatusOf(i) = ItemStatus(got[i].status, i);
      continue;
    }
    const uint32_t index = items_[i];
    std::span<uint8_t> buffer = call_->buffers[index];
    PayloadSegment segment;
    segment.size = got[i].value_len;
    segment.checksum = got[i].checksum;
    segment.item = static_cast<uint32_t>(i);
    if (got[i].value_len > buffer.size()) {
      segment.discard = true;
      StatusOf(i) = TooLarge(OpName(call_->opcode) + " key " + KeyForMessage(call_->keys[index]) +
                             ": value of " + std::to_string(got[i].value_len) +
                             " bytes does not fit the buffer of " + std::to_string(buffer.size()) +
                             " bytes");
    } else {
      segment.dst = buffer.data();
      StatusOf(i) = Status(StatusCode::kInternal, std::string());  // OnSegment answers it
    }
    payload->push_back(segment);
  }
  return Status::Ok();
}

void BatchExchange::OnSegment(const PayloadSegment& segment, bool checksum_ok) {
  const uint32_t index = items_[segment.item];
  if (!checksum_ok) {
    StatusOf(segment.item) =
        NotFound("key " + KeyForMessage(call_->keys[index]) + " on " + std::string(server_) +
                 ": value failed its checksum (XXH3-64 mismatch); treated as a miss");
    return;
  }
  StatusOf(segment.item) = Status::Ok();
  if (call_->sizes != nullptr) (*call_->sizes)[index] = segment.size;
}

void BatchExchange::OnFailure(const Status& status) {
  const std::string op = OpName(call_->opcode);
  for (size_t i = 0; i < items_.size(); ++i) {
    StatusOf(i) = status.WithContext(op + " key " + KeyForMessage(call_->keys[items_[i]]));
  }
}

// ---- MatchPrefixExchange ----

RequestFrame MatchPrefixExchange::BuildRequest() {
  RequestFrame frame;
  frame.opcode = proto::Opcode::kMatchPrefix;
  std::vector<std::string_view> keys;
  keys.reserve(items_.size());
  for (uint32_t index : items_) keys.push_back(call_->keys[index]);
  frame.meta = proto::EncodeKeyList(keys);
  return frame;
}

Status MatchPrefixExchange::OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                                       std::vector<PayloadSegment>*) {
  const std::string context = "MatchPrefix of " + std::to_string(items_.size()) + " keys on " + std::string(server_);
  if (header.payload_len != 0) return ProtocolError(context + ": response carries a payload");
  if (header.status != StatusCode::kOk) {
    std::string text = MetaText(meta);
    const Status all = StatusFromWire(header.status, context + ": " + (text.empty() ? "server gave no reason" : text));
    for (uint32_t index : items_) (*call_->statuses)[index] = all;
    return Status::Ok();
  }
  uint32_t matched = 0;
  MEMKV_RETURN_IF_ERROR(
      proto::DecodeMatchPrefixResponse(meta, static_cast<uint32_t>(items_.size()), &matched).WithContext(context));
  // The server stopped at its first miss: the keys after it were not looked
  // at, and count as misses (none of them can extend the prefix).
  for (size_t i = 0; i < items_.size(); ++i) {
    (*call_->statuses)[items_[i]] = i < matched ? Status::Ok() : NotFound("not found");
  }
  return Status::Ok();
}

void MatchPrefixExchange::OnFailure(const Status& status) {
  for (uint32_t index : items_) {
    (*call_->statuses)[index] = status.WithContext("MatchPrefix key " + KeyForMessage(call_->keys[index]));
  }
}

bool IsUnknownOpcode(const Status& status) {
  return status.code() == StatusCode::kProtocolError && status.message().find("unknown opcode") != std::string::npos;
}

// ---- ListExchange ----

RequestFrame ListExchange::BuildRequest() {
  RequestFrame frame;
  frame.opcode = proto::Opcode::kList;
  frame.meta = proto::EncodeListRequest(request_);
  return frame;
}

Status ListExchange::OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                                std::vector<PayloadSegment>*) {
  const std::string context = "ListKeys on " + std::string(server_);
  if (header.payload_len != 0) return ProtocolError(context + ": response carries a payload");
  if (header.status != StatusCode::kOk) {
    std::string text = MetaText(meta);
    status_ = StatusFromWire(header.status, context + ": " + (text.empty() ? "server gave no reason" : text));
    return Status::Ok();
  }
  proto::ListResponse page;
  MEMKV_RETURN_IF_ERROR(proto::DecodeListResponse(meta, request_.limit, &page).WithContext(context));
  keys_.assign(page.keys.begin(), page.keys.end());
  more_ = page.more;
  status_ = Status::Ok();
  return Status::Ok();
}

void ListExchange::OnFailure(const Status& status) { status_ = status.WithContext("ListKeys"); }

RequestFrame IdentifyExchange::BuildRequest() {
  RequestFrame frame;
  frame.opcode = proto::Opcode::kIdentify;
  frame.meta = canonical_;
  return frame;
}

Status IdentifyExchange::OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                                    std::vector<PayloadSegment>*) {
  const std::string text(meta.begin(), meta.end());
  if (header.status != StatusCode::kOk) {
    return StatusFromWire(header.status, "server " + server_ + " refused this client's cache identity (identity_* "
                                         "options): " + text);
  }
  proto::IdentifyResponse response;
  MEMKV_RETURN_IF_ERROR(proto::DecodeIdentifyResponse(meta, &response).WithContext("server " + server_));
  if (on_identified_) on_identified_(response.tenant);
  return Status::Ok();
}

RequestFrame ReportExchange::BuildRequest() {
  RequestFrame frame;
  frame.opcode = proto::Opcode::kReport;
  frame.meta = proto::EncodeClientReport(report_);
  return frame;
}

Status ReportExchange::OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                                  std::vector<PayloadSegment>*) {
  if (header.status != StatusCode::kOk) status_ = StatusFromWire(header.status, std::string(meta.begin(), meta.end()));
  return Status::Ok();
}

RequestFrame ServerInfoExchange::BuildRequest() {
  RequestFrame frame;
  frame.opcode = proto::Opcode::kServerInfo;
  return frame;
}

Status ServerInfoExchange::OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                                      std::vector<PayloadSegment>*) {
  const std::string context = "ServerInfo of " + std::string(server_);
  if (header.payload_len != 0) return ProtocolError(context + ": response carries a payload");
  if (header.status != StatusCode::kOk) {
    std::string text = MetaText(meta);
    status_ = StatusFromWire(header.status, context + ": " + (text.empty() ? "server gave no reason" : text));
    return Status::Ok();
  }
  MEMKV_RETURN_IF_ERROR(proto::DecodeServerInfo(meta, &info_).WithContext(context));
  status_ = Status::Ok();
  return Status::Ok();
}

void ServerInfoExchange::OnFailure(const Status& status) { status_ = status.WithContext("ServerInfo"); }

}  // namespace memkv::client
