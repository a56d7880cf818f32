// The exchanges behind the Client's calls: SingleExchange for the one-key
// opcodes (TcpPut, TcpGet, TcpDelete, Exists) and BatchExchange for one frame
// of a BatchPut / BatchGet / BatchExists, ListExchange for one server's page
// of a key listing. They turn responses into the
// caller-visible Status of each key; see exchange.h for the lifecycle.
//
// Checksum mismatches become NotFound (a miss): the bytes may already sit in
// the caller's buffer, but they are never reported as a value.
#ifndef MEMKV_CLIENT_OPS_H_
#define MEMKV_CLIENT_OPS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/exchange.h"
#include "proto/messages.h"

namespace memkv::client {

class SingleExchange final : public Exchange {
 public:
  // Put sends `value`; Get reads into `get_buffer` when given (GetInto), else
  // into value(); Delete, Exists and Stat carry only the key (Stat's answer
  // is value_size()). `server` names the
  // server in messages.
  SingleExchange(proto::Opcode opcode, std::string_view key, std::string_view server,
                 std::span<const uint8_t> value = {},
                 std::optional<std::span<uint8_t>> get_buffer = std::nullopt);

  // Ok, the server's answer (NotFound on a miss), or why there was none.
  const Status& status() const { return answered_ ? status_ : NeverAnswered(); }
  uint64_t value_size() const { return value_size_; }
  std::vector<uint8_t>& value() { return value_; }

  RequestFrame BuildRequest() override;
  Status OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                    std::vector<PayloadSegment>* payload) override;
  void OnSegment(const PayloadSegment& segment, bool checksum_ok) override;
  void OnFailure(const Status& status) override;
  std::span<uint8_t> ExpectedDestination() const override {
    return opcode_ == proto::Opcode::kGet && get_buffer_.has_value() ? *get_buffer_ : std::span<uint8_t>();
  }
  uint64_t RequestValueBytes() const override { return opcode_ == proto::Opcode::kPut ? put_value_.size() : 0; }

 private:
  std::string Context() const;
  // Records the outcome. Until then status() is an Internal error: a get
  // whose value is still arriving, or a request never answered, has none.
  // (Kept apart so the common path builds no message it will not use.)
  void Answer(Status status) {
    status_ = std::move(status);
    answered_ = true;
  }
  static const Status& NeverAnswered();

  proto::Opcode opcode_;
  std::string_view key_;
  std::string_view server_;
  std::span<const uint8_t> put_value_;
  std::optional<std::span<uint8_t>> get_buffer_;
  std::vector<uint8_t> value_;
  uint64_t value_size_ = 0;
  Status status_;
  bool answered_ = false;
};

// The caller's side of one batch call, shared by all its frames. Results are
// written at the caller's key indices.
struct BatchCall {
  proto::Opcode opcode = proto::Opcode::kBatchExists;
  std::span<const std::string_view> keys;
  std::span<const std::span<const uint8_t>> values;  // BatchPut, BatchPutWith
  std::span<const PutOptions> options;               // BatchPutWith: one per key
  std::span<const std::span<uint8_t>> buffers;       // BatchGet
  std::vector<Status>* statuses = nullptr;           // one per key
  std::vector<size_t>* sizes = nullptr;              // BatchGet; may be null
};

class BatchExchange final : public Exchange {
 public:
  // One frame carrying the keys at `items` (indices into call->keys).
  BatchExchange(BatchCall* call, std::vector<uint32_t> items, std::string_view server)
      : call_(call), items_(std::move(items)), server_(server) {}

  RequestFrame BuildRequest() override;
  Status OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                    std::vector<PayloadSegment>* payload) override;
  void OnSegment(const PayloadSegment& segment, bool checksum_ok) override;
  void OnFailure(const Status& status) override;

 private:
  Status& StatusOf(size_t i) { return (*call_->statuses)[items_[i]]; }
  Status ItemStatus(StatusCode code, size_t i) const;

  BatchCall* call_;
  std::vector<uint32_t> items_;
  std::string_view server_;
};

inline bool IsBatchPut(proto::Opcode opcode) {
  return opcode == proto::Opcode::kBatchPut || opcode == proto::Opcode::kBatchPutWith;
}

// One MatchPrefix request to one server: the keys at `items` (indices into
// call->keys, in chain order). Answers each key Ok up to the server's first
// miss and NotFound from there on.
class MatchPrefixExchange final : public Exchange {
 public:
  MatchPrefixExchange(BatchCall* call, std::vector<uint32_t> items, std::string_view server)
      : call_(call), items_(std::move(items)), server_(server) {}

  RequestFrame BuildRequest() override;
  Status OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                    std::vector<PayloadSegment>* payload) override;
  void OnSegment(const PayloadSegment&, bool) override {}
  void OnFailure(const Status& status) override;

 private:
  BatchCall* call_;
  std::vector<uint32_t> items_;
  std::string_view server_;
};

// The server's answer to an opcode it does not know (it predates it):
// ProtocolError "unknown opcode ...".
bool IsUnknownOpcode(const Status& status);

// One List request to one server: a page of its keys under a prefix.
class ListExchange final : public Exchange {
 public:
  ListExchange(const proto::ListRequest& request, std::string_view server) : request_(request), server_(server) {}

  // Ok, or why there was no page.
  const Status& status() const { return status_; }
  // The server's page, in bytewise order, and whether it holds more after it.
  std::vector<std::string>& keys() { return keys_; }
  bool more() const { return more_; }

  RequestFrame BuildRequest() override;
  Status OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                    std::vector<PayloadSegment>* payload) override;
  void OnSegment(const PayloadSegment&, bool) override {}
  void OnFailure(const Status& status) override;

 private:
  proto::ListRequest request_;
  std::string_view server_;
  std::vector<std::string> keys_;
  bool more_ = false;
  Status status_ = Internal("request was never answered (client bug)");
};

// A connection's Identify request (sent by the connection itself, first
// after the handshake): a refusal fails the connection with the server's
// reason (PermissionDenied: not in its identities.accept).
class IdentifyExchange final : public Exchange {
 public:
  IdentifyExchange(std::string_view server, std::string_view canonical,
                   std::function<void(const std::string& tenant)> on_identified)
      : server_(server), canonical_(canonical), on_identified_(std::move(on_identified)) {}
  RequestFrame BuildRequest() override;
  Status OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                    std::vector<PayloadSegment>* payload) override;
  void OnSegment(const PayloadSegment&, bool) override {}
  void OnFailure(const Status&) override {}

 private:
  std::string server_;
  std::string canonical_;
  std::function<void(const std::string& tenant)> on_identified_;
};

// One Report request: counts the client adds to the server's.
class ReportExchange final : public Exchange {
 public:
  explicit ReportExchange(const proto::ClientReport& report) : report_(report) {}
  RequestFrame BuildRequest() override;
  Status OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                    std::vector<PayloadSegment>* payload) override;
  void OnSegment(const PayloadSegment&, bool) override {}
  void OnFailure(const Status& status) override { status_ = status; }
  const Status& status() const { return status_; }

 private:
  proto::ClientReport report_;
  Status status_;
};

// One ServerInfo request to one server: its id, weight and state
// (docs/fleet.md). A server that predates it answers "unknown opcode"
// (IsUnknownOpcode(status())).
class ServerInfoExchange final : public Exchange {
 public:
  explicit ServerInfoExchange(std::string_view server) : server_(server) {}

  const Status& status() const { return status_; }
  const proto::ServerInfo& info() const { return info_; }

  RequestFrame BuildRequest() override;
  Status OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                    std::vector<PayloadSegment>* payload) override;
  void OnSegment(const PayloadSegment&, bool) override {}
  void OnFailure(const Status& status) override;

 private:
  std::string_view server_;
  proto::ServerInfo info_;
  Status status_ = Internal("request was never answered (client bug)");
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_OPS_H_
