#include "client/rdma_ops.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "base/checksum.h"
#include "client/connection.h"
#include "proto/messages.h"

namespace memkv::client {

std::vector<verbs::WorkRequest> TransferWrs(std::span<const proto::RemoteSegment> segments, uint64_t offset,
                                            uint64_t length, verbs::WrOpcode opcode, uint8_t* local, uint32_t lkey,
                                            uint32_t rkey, uint64_t max_wr_bytes) {
  max_wr_bytes = std::clamp<uint64_t>(max_wr_bytes, 1, UINT32_MAX);
  std::vector<verbs::WorkRequest> wrs;
  const uint64_t end = offset + length;
  uint64_t segment_start = 0;  // where the segment's bytes sit in the value
  for (const proto::RemoteSegment& s : segments) {
    if (segment_start >= end) break;
    const uint64_t segment_end = segment_start + s.len;
    uint64_t from = std::max(segment_start, offset);
    const uint64_t to = std::min(segment_end, end);
    while (from < to) {
      verbs::WorkRequest wr;
      wr.opcode = opcode;
      wr.local = local + (from - offset);
      wr.length = static_cast<uint32_t>(std::min(to - from, max_wr_bytes));
      wr.lkey = lkey;
      wr.remote_addr = s.addr + (from - segment_start);
      wr.rkey = rkey;
      wrs.push_back(wr);
      from += wr.length;
    }
    segment_start = segment_end;
  }
  return wrs;
}

RdmaExchange::RdmaExchange(RdmaEngine* engine, ClientCounters* counters, proto::Opcode opcode, std::string_view key,
                           std::string_view server, std::span<const uint8_t> value,
                           std::optional<std::span<uint8_t>> get_buffer)
    : engine_(engine),
      counters_(counters),
      opcode_(opcode),
      key_(key),
      server_(server),
      put_value_(value),
      get_buffer_(get_buffer),
      tcp_(opcode, key, server, value, get_buffer) {}

RdmaExchange::~RdmaExchange() { ReleaseBuffers(); }

std::string RdmaExchange::Context() const {
  return std::string(is_put() ? "Put " : "Get ") + KeyForMessage(key_) + " on " + std::string(server_);
}

void RdmaExchange::ReleaseBuffers() {
  if (bounce_.data != nullptr && channel_ != nullptr) channel_->bounce().Release(bounce_);
  bounce_ = BounceBuffer{};
  if (lease_.has_value() && channel_ != nullptr) channel_->registrations().Release(*lease_);
  lease_.reset();
}

void RdmaExchange::DropRegistration() {
  if (lease_.has_value() && channel_ != nullptr) channel_->registrations().Invalidate(*lease_);
  ReleaseBuffers();
  bounce_only_ = true;
}

namespace {

// An RdmaRelease nobody waits for: the get's outcome is decided, and the
// server only needs to hear that its pin may go. Its answer (Ok, or NotFound
// when the server let go first) changes nothing.
class DetachedRelease final : public Exchange {
 public:
  explicit DetachedRelease(uint64_t token) : token_(token) {}
  RequestFrame BuildRequest() override {
    RequestFrame frame;
    frame.opcode = proto::Opcode::kRdmaRelease;
    frame.meta = proto::EncodeToken(token_);
    return frame;
  }
  Status OnResponse(const proto::FrameHeader& header, std::span<const uint8_t>,
                    std::vector<PayloadSegment>*) override {
    if (header.payload_len != 0) return ProtocolError("RdmaRelease answer carries a payload");
    return Status::Ok();
  }
  void OnSegment(const PayloadSegment&, bool) override {}
  void OnFailure(const Status&) override {}

 private:
  uint64_t token_;
};

// RdmaSpare, answered before the commit of the put that asked for it (the
// connection reads answers in order), so the next put finds the slot.
class SpareRequest final : public Exchange {
 public:
  SpareRequest(RdmaEngine* engine, RdmaChannel* channel, std::string_view key, uint64_t size,
               std::string_view server)
      : engine_(engine), channel_(channel), key_(key), size_(size), server_(server) {}
  RequestFrame BuildRequest() override {
    RequestFrame frame;
    frame.opcode = proto::Opcode::kRdmaSpare;
    frame.meta = proto::EncodeRdmaPutRequest(key_, size_, 0);
    return frame;
  }
  Status OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                    std::vector<PayloadSegment>*) override {
    if (header.payload_len != 0) return ProtocolError("RdmaSpare answer carries a payload");
    if (header.status == StatusCode::kOk) {
      proto::RdmaGrant spare;
      MEMKV_RETURN_IF_ERROR(proto::DecodeRdmaGrant(meta, &spare).WithContext("RdmaSpare answer"));
      if (spare.value_len != size_) {
        return ProtocolError("spare RDMA slot of " + std::to_string(spare.value_len) + " bytes, asked for " +
                             std::to_string(size_));
      }
      channel_->OnSpareAnswer(std::move(spare), /*again=*/true);
      return Status::Ok();
    }
    // A server that predates spares answers "unknown opcode": its other
    // connections do not ask either. A full pool may have room later.
    if (IsUnknownOpcode(StatusFromWire(header.status, std::string(meta.begin(), meta.end())))) {
      engine_->MarkLacksSpares(server_);
    }
    channel_->OnSpareAnswer(std::nullopt, /*again=*/header.status == StatusCode::kResourceExhausted);
    return Status::Ok();
  }
  void OnSegment(const PayloadSegment&, bool) override {}
  // The connection failed: its channel goes with it.
  void OnFailure(const Status&) override {}

 private:
  RdmaEngine* engine_;
  RdmaChannel* channel_;
  std::string key_;
  uint64_t size_;
  std::string server_;
};

const PutOptions kNoOptions;

}  // namespace

void RdmaExchange::AskSpare() {
  const uint64_t size = put_value_.size();
  if (!channel_->WantsSpare(size) || engine_->LacksSpares(server_)) return;
  // The channel keeps one spare: one of another size goes back first.
  if (const uint64_t other = channel_->AskingSpare(); other != 0) {
    connection()->EnqueueDetached(std::make_unique<DetachedRelease>(other));
  }
  connection()->EnqueueDetached(std::make_unique<SpareRequest>(engine_, channel_, key_, size, server_));
}

bool RdmaExchange::StartsWithoutFrame() {
  if (phase_ != Phase::kStart || !is_put() || no_spare_) return false;
  channel_ = connection()->rdma_channel();
  if (channel_ == nullptr || !engine_->active()) return false;
  std::optional<proto::RdmaGrant> spare = channel_->TakeSpare(put_value_.size());
  if (!spare.has_value()) return false;
  grant_ = std::move(*spare);
  token_ = grant_.token;
  value_size_ = grant_.value_len;
  in_spare_ = true;
  checksum_ = Checksum(put_value_.data(), put_value_.size());
  AskSpare();
  PostTransfer();
  return true;
}

void RdmaExchange::ReleaseDetached() {
  phase_ = Phase::kDone;
  connection()->EnqueueDetached(std::make_unique<DetachedRelease>(token_));
}

void RdmaExchange::Then(Phase next) {
  phase_ = next;
  connection()->Enqueue(this);
}

RequestFrame RdmaExchange::BuildRequest() {
  RequestFrame frame;
  switch (phase_) {
    case Phase::kStart: {
      channel_ = connection()->rdma_channel();
      if (channel_ == nullptr || !engine_->active()) {
        phase_ = Phase::kTcp;
        via_tcp_ = true;
        return Tcp().BuildRequest();
      }
      phase_ = Phase::kGrant;
      if (is_put()) {
        checksum_ = Checksum(put_value_.data(), put_value_.size());
        frame.opcode = options_ != nullptr ? proto::Opcode::kRdmaPutWith : proto::Opcode::kRdmaPut;
        frame.meta = options_ != nullptr
                         ? proto::EncodeRdmaPutWithRequest(key_, put_value_.size(), checksum_, *options_)
                         : proto::EncodeRdmaPutRequest(key_, put_value_.size(), checksum_);
      } else {
        frame.opcode = proto::Opcode::kRdmaGet;
        frame.meta.assign(key_);
      }
      return frame;
    }
    case Phase::kCommit:
      frame.opcode = proto::Opcode::kRdmaCommit;
      frame.meta = proto::EncodeToken(token_);
      return frame;
    case Phase::kCommitTo:
      frame.opcode = proto::Opcode::kRdmaCommitTo;
      frame.meta = proto::EncodeRdmaCommitToRequest(token_, key_, put_value_.size(), checksum_,
                                                    options_ != nullptr ? *options_ : kNoOptions);
      return frame;
    case Phase::kReleaseThenTcp:
      frame.opcode = proto::Opcode::kRdmaRelease;
      frame.meta = proto::EncodeToken(token_);
      return frame;
    case Phase::kTcp:
      via_tcp_ = true;
      return Tcp().BuildRequest();
    case Phase::kGrant:
    case Phase::kTransfer:
    case Phase::kDone:
      break;
  }
  // Not reachable: the exchange is queued only in the phases above.
  frame.opcode = proto::Opcode::kPing;
  return frame;
}

Status RdmaExchange::OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                                std::vector<PayloadSegment>* payload) {
  switch (phase_) {
    case Phase::kTcp:
      return Tcp().OnResponse(header, meta, payload);
    case Phase::kGrant: {
      if (header.status == StatusCode::kOk) return StartTransfer(meta);
      if (header.payload_len != 0) return ProtocolError(Context() + ": error response carries a payload");
      if (header.status == StatusCode::kResourceExhausted) {
        // The server cannot stage the value in its pool now (full of pinned
        // values, or a value it keeps on the drives only, which moves there
        // in pieces over TCP): the same request inline, whatever the
        // transport setting, as this is no fault of the fabric's.
        ClientCounters::Add(counters_->rdma_reissued, 1);
        Then(Phase::kTcp);
        return Status::Ok();
      }
      std::string text(meta.begin(), meta.end());
      status_ = header.status == StatusCode::kNotFound
                    ? NotFound(Context() + ": not found")
                    : StatusFromWire(header.status, Context() + ": " + (text.empty() ? "no reason given" : text));
      phase_ = Phase::kDone;
      return Status::Ok();
    }
    case Phase::kCommit:
    case Phase::kCommitTo:
      return OnCommitted(header, meta);
    case Phase::kReleaseThenTcp:
      ClientCounters::Add(counters_->rdma_reissued, 1);
      Then(Phase::kTcp);
      return Status::Ok();
    case Phase::kStart:
    case Phase::kTransfer:
    case Phase::kDone:
      break;
  }
  return ProtocolError(Context() + ": response to a request that was not sent");
}

Status RdmaExchange::OnCommitted(const proto::FrameHeader& header, std::span<const uint8_t> meta) {
  const bool spare = std::exchange(in_spare_, false);  // every answer drops the slot
  if (header.status == StatusCode::kCorruption && lease_.has_value()) {
    // What landed is not what the caller's buffer holds: its cached
    // registration is stale. The server dropped the slot; start over,
    // copying through the bounce pool.
    DropRegistration();
    Then(Phase::kStart);
    return Status::Ok();
  }
  ReleaseBuffers();
  if (spare && header.status == StatusCode::kFailedPrecondition) {
    // The spare holds another tenant's quotas than this key's (a
    // connection putting for several): the usual way, once.
    no_spare_ = true;
    Then(Phase::kStart);
    return Status::Ok();
  }
  if (header.status == StatusCode::kOk) {
    status_ = Status::Ok();
    carried_by_rdma_ = true;
    if (spare) ClientCounters::Add(counters_->rdma_spare_puts, 1);
  } else {
    std::string text(meta.begin(), meta.end());
    status_ = StatusFromWire(header.status, Context() + ": commit refused: " + text);
  }
  phase_ = Phase::kDone;
  return Status::Ok();
}

Status RdmaExchange::StartTransfer(std::span<const uint8_t> meta) {
  MEMKV_RETURN_IF_ERROR(proto::DecodeRdmaGrant(meta, &grant_).WithContext(Context()));
  token_ = grant_.token;
  if (is_put() && grant_.value_len != put_value_.size()) {
    return ProtocolError(Context() + ": slot of " + std::to_string(grant_.value_len) + " bytes for a " +
                         std::to_string(put_value_.size()) + "-byte value");
  }
  value_size_ = grant_.value_len;
  if (!is_put()) checksum_ = grant_.checksum;
  if (!is_put() && get_buffer_.has_value() && grant_.value_len > get_buffer_->size()) {
    status_ = TooLarge(Context() + ": value of " + std::to_string(grant_.value_len) +
                       " bytes does not fit the buffer of " + std::to_string(get_buffer_->size()) + " bytes");
    ReleaseDetached();
    return Status::Ok();
  }
  PostTransfer();
  return Status::Ok();
}

uint8_t* RdmaExchange::GetDestination() {
  return get_buffer_.has_value() ? get_buffer_->data() : value_.data();
}

uint8_t* RdmaExchange::CallerBytes() const {
  if (is_put()) return const_cast<uint8_t*>(put_value_.data());  // only read from (WRITE source)
  return get_buffer_.has_value() ? get_buffer_->data() : nullptr;
}

void RdmaExchange::PostTransfer() {
  const uint64_t size = grant_.value_len;
  uint8_t* caller = CallerBytes();
  if (size > 0 && caller != nullptr && !bounce_only_) lease_ = channel_->registrations().Acquire(caller, size);
  zero_copy_ = lease_.has_value();
  if (!lease_.has_value() && size > 0) {
    Result<BounceBuffer> bounce = channel_->bounce().Acquire(std::min(size, BouncePool::kMaxBufferBytes));
    if (!bounce.ok()) {
      status_ = bounce.status().WithContext(Context());
      ReleaseDetached();
      return;
    }
    bounce_ = *bounce;
  }
  if (!is_put() && !get_buffer_.has_value()) value_.resize(size);
  moved_ = 0;
  PostPiece();
}

void RdmaExchange::PostPiece() {
  uint8_t* local = nullptr;
  uint32_t lkey = 0;
  const uint64_t left = grant_.value_len - moved_;
  if (lease_.has_value()) {
    piece_ = left;
    local = CallerBytes() + moved_;
    lkey = lease_->lkey;
  } else {
    piece_ = std::min(left, bounce_.capacity);
    local = bounce_.data;
    lkey = bounce_.lkey;
    if (is_put() && piece_ > 0) std::memcpy(bounce_.data, put_value_.data() + moved_, piece_);
  }
  std::vector<verbs::WorkRequest> wrs =
      TransferWrs(grant_.segments, moved_, piece_, is_put() ? verbs::WrOpcode::kWrite : verbs::WrOpcode::kRead,
                  local, lkey, channel_->rkey());
  phase_ = Phase::kTransfer;
  channel_->Submit(this, std::move(wrs), std::string(is_put() ? "RDMA WRITE of " : "RDMA READ of ") + Context());
}

bool RdmaExchange::FinishGet() {
  if (Checksum(GetDestination(), value_size_) == checksum_) {
    status_ = Status::Ok();
    carried_by_rdma_ = true;
    return true;
  }
  value_.clear();
  return false;
}

void RdmaExchange::OnRdmaDone(const Status& status, bool connection_lost) {
  if (status.ok()) {
    if (!is_put() && !lease_.has_value() && piece_ > 0) std::memcpy(GetDestination() + moved_, bounce_.data, piece_);
    moved_ += piece_;
    if (moved_ < grant_.value_len) {
      PostPiece();
      return;
    }
    if (is_put()) {
      if (!in_spare_) AskSpare();
      // The registration lease is held until the commit's verdict.
      Then(in_spare_ ? Phase::kCommitTo : Phase::kCommit);
      return;
    }
    if (FinishGet()) {
      ReleaseBuffers();
      ReleaseDetached();
      return;
    }
    if (lease_.has_value()) {
      // The caller's cached registration no longer maps its buffer (freed and
      // mapped again): read once more, through the bounce pool.
      DropRegistration();
      PostTransfer();
      return;
    }
    ReleaseBuffers();
    ClientCounters::Add(counters_->checksum_failures, 1);
    status_ = NotFound(Context() + ": value read by RDMA failed its checksum (XXH3-64 mismatch); treated as a miss");
    ReleaseDetached();
    return;
  }
  ReleaseBuffers();
  if (connection_lost) {
    status_ = status;
    phase_ = Phase::kDone;
    return;
  }
  if (engine_->OnFailure(status.message())) {
    Then(Phase::kReleaseThenTcp);  // auto: drop the slot or pin, then the same request inline
    return;
  }
  status_ = Unavailable(status.message() +
                        " (MEMKV_TRANSPORT=rdma does not fall back to TCP; docs/rdma.md, troubleshooting)");
  ReleaseDetached();
}

void RdmaExchange::OnSegment(const PayloadSegment& segment, bool checksum_ok) {
  Tcp().OnSegment(segment, checksum_ok);
}

Exchange& RdmaExchange::Tcp() {
  if (options_ == nullptr) return tcp_;
  if (tcp_with_ == nullptr) {
    tcp_with_ = std::make_unique<TcpWithOptions>();
    TcpWithOptions& t = *tcp_with_;
    t.key = key_;
    t.value = put_value_;
    t.options = options_;
    t.call.opcode = proto::Opcode::kBatchPutWith;
    t.call.keys = std::span<const std::string_view>(&t.key, 1);
    t.call.values = std::span<const std::span<const uint8_t>>(&t.value, 1);
    t.call.options = std::span<const PutOptions>(t.options, 1);
    t.statuses.assign(1, Internal("request was never answered (client bug)"));
    t.call.statuses = &t.statuses;
    t.exchange = std::make_unique<BatchExchange>(&t.call, std::vector<uint32_t>{0}, server_);
  }
  return *tcp_with_->exchange;
}

void RdmaExchange::OnFailure(const Status& status) {
  ReleaseBuffers();
  if (phase_ == Phase::kTcp) {
    Tcp().OnFailure(status);
    return;
  }
  status_ = status.WithContext(Context());
  phase_ = Phase::kDone;
}

}  // namespace memkv::client
