// RdmaExchange: a Put or Get whose value bytes move by RDMA, driven through
// the same Connection pipeline as every TCP exchange (docs/rdma.md):
//
//   Put  RdmaPut(key, len, checksum) -> slot  |  RDMA WRITE into the slot  |
//        RdmaCommit(token): the server checks the landed bytes and publishes;
//        RdmaSpare(key, len) goes out ahead of the commit, for the
//        connection's next put of that size
//   Put into a spare (the channel holds one of the put's size): RDMA WRITE
//        at once, RdmaSpare for the next one, then
//        RdmaCommitTo(token, key, checksum, options): one round trip
//   Get  RdmaGet(key) -> pinned value  |  RDMA READ  |  verify the checksum  |
//        RdmaRelease(token), sent without waiting for its answer: the get
//        is done once its bytes verify (one round trip and the READ)
//
// Large values move straight between the caller's buffer (registered on
// first use and cached, RegistrationCache) and the server's pool; small ones,
// and Get() without a caller buffer, are staged through the bounce pool. A
// value larger than a bounce buffer (BouncePool::kMaxBufferBytes) that cannot
// go straight (Get() without a buffer, a caller buffer the NIC refuses to
// register, such as a read-only file mapping, or a stale registration) moves
// through one bounce buffer a piece at a time: copy, transfer, next piece.
// However the bytes are staged, no work request carries more than
// kMaxWrBytes: a grant segment longer than that is split. The channel posts
// what fits the send queues and the rest as completions free room. When the
// connection has no RDMA (the server refused it, the engine downgraded) the
// exchange is a plain TcpPut / TcpGet. When a transfer fails with the
// connection still up (a completion error such as IBV_WC_RETRY_EXC_ERR):
//   auto  the engine downgrades; the slot or pin is released and the same
//         request is re-issued as TcpPut / TcpGet on the same connection.
//         A put is never committed twice: its RDMA slot is dropped unpublished.
//   rdma  the failure is the operation's status, naming the verbs status.
#ifndef MEMKV_CLIENT_RDMA_OPS_H_
#define MEMKV_CLIENT_RDMA_OPS_H_

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "client/counters.h"
#include "client/ops.h"
#include "client/rdma.h"

namespace memkv::client {

class Connection;

// The most one work request carries. Devices cap a message at their port's
// max_msg_sz: 1 GiB on mlx5 (ConnectX), 2 GiB on rxe (Soft-RoCE), 2^31 by the
// InfiniBand spec. verbs::PortInfo does not carry max_msg_sz yet, so the
// lowest common value is used for every device.
inline constexpr uint64_t kMaxWrBytes = uint64_t{1} << 30;

// The work requests that move bytes [offset, offset + length) of a value laid
// out in `segments` (a grant's, in value order) to or from `local`, which
// holds exactly those bytes (inside the registration of `lkey`). No WR
// carries more than `max_wr_bytes` (at most 4 GiB - 1).
std::vector<verbs::WorkRequest> TransferWrs(std::span<const proto::RemoteSegment> segments, uint64_t offset,
                                            uint64_t length, verbs::WrOpcode opcode, uint8_t* local, uint32_t lkey,
                                            uint32_t rkey, uint64_t max_wr_bytes = kMaxWrBytes);

class RdmaExchange final : public Exchange, public RdmaSink {
 public:
  // `opcode` is kPut or kGet, as for SingleExchange.
  RdmaExchange(RdmaEngine* engine, ClientCounters* counters, proto::Opcode opcode, std::string_view key,
               std::string_view server, std::span<const uint8_t> value = {},
               std::optional<std::span<uint8_t>> get_buffer = std::nullopt);
  ~RdmaExchange() override;

  // A put with options (`options` outlives the exchange): RdmaPutWith; over
  // TCP a one-item BatchPutWith, so the options ride every path.
  void set_options(const PutOptions* options) { options_ = options; }

  const Status& status() const {
    if (!via_tcp_) return status_;
    return tcp_with_ != nullptr ? tcp_with_->statuses.front() : tcp_.status();
  }
  uint64_t value_size() const { return via_tcp_ ? tcp_.value_size() : value_size_; }
  std::vector<uint8_t>& value() { return via_tcp_ ? tcp_.value() : value_; }
  // The value bytes moved by RDMA (false: inline TCP, or no value moved).
  bool carried_by_rdma() const { return !via_tcp_ && carried_by_rdma_; }
  // ... straight from / into the caller's registered memory.
  bool zero_copy() const { return carried_by_rdma() && zero_copy_; }

  // A put whose size matches the connection's spare slot WRITEs into it at
  // once (no frame) and asks for the next spare.
  bool StartsWithoutFrame() override;
  RequestFrame BuildRequest() override;
  Status OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                    std::vector<PayloadSegment>* payload) override;
  void OnSegment(const PayloadSegment& segment, bool checksum_ok) override;
  void OnFailure(const Status& status) override;
  void OnRdmaDone(const Status& status, bool connection_lost) override;

 private:
  enum class Phase { kStart, kGrant, kTransfer, kCommit, kCommitTo, kReleaseThenTcp, kTcp, kDone };

  bool is_put() const { return opcode_ == proto::Opcode::kPut; }
  std::string Context() const;
  Status StartTransfer(std::span<const uint8_t> meta);
  // Chooses the caller's registered buffer or the bounce pool, then PostPiece.
  void PostTransfer();
  // Submits the WRs of the next piece: the rest of the value when it moves
  // straight, else as much as the bounce buffer holds (a put copies it in).
  void PostPiece();
  // The caller's memory: a put's value, a get's buffer (null: Get() without one).
  uint8_t* CallerBytes() const;
  // Where a get's bytes end up: the caller's buffer, else value_.
  uint8_t* GetDestination();
  // A get's bytes arrived: true when they verify (else the caller retries or misses).
  bool FinishGet();
  void Then(Phase next);  // re-enqueue on the connection for the next frame
  // The outcome is decided: done, and the grant's release goes out on the
  // connection without anyone waiting for its answer.
  void ReleaseDetached();
  // Asks the server for a spare slot of this put's size for the connection's
  // next put, when the channel wants one: pipelined ahead of this put's
  // commit, so it is granted by the time the put returns.
  void AskSpare();
  // The commit's (RdmaCommit or RdmaCommitTo) verdict.
  Status OnCommitted(const proto::FrameHeader& header, std::span<const uint8_t> meta);
  // Gives back the bounce buffer and the registration lease, if any.
  void ReleaseBuffers();
  // The caller's registration turned out stale: drop it, go through the bounce pool.
  void DropRegistration();

  RdmaEngine* engine_;
  ClientCounters* counters_;
  proto::Opcode opcode_;
  std::string_view key_;
  std::string_view server_;
  std::span<const uint8_t> put_value_;
  std::optional<std::span<uint8_t>> get_buffer_;
  SingleExchange tcp_;  // the inline-bulk form of the same request
  // The inline-bulk form of a put with options: a one-item BatchPutWith.
  struct TcpWithOptions {
    std::string_view key;
    std::span<const uint8_t> value;
    const PutOptions* options = nullptr;
    std::vector<Status> statuses;
    BatchCall call;
    std::unique_ptr<BatchExchange> exchange;
  };
  Exchange& Tcp();  // the inline-bulk form in use (made on first use)
  const PutOptions* options_ = nullptr;
  std::unique_ptr<TcpWithOptions> tcp_with_;
  bool via_tcp_ = false;
  bool carried_by_rdma_ = false;
  bool zero_copy_ = false;

  Phase phase_ = Phase::kStart;
  RdmaChannel* channel_ = nullptr;
  BounceBuffer bounce_;
  std::optional<RegistrationCache::Lease> lease_;  // the caller's own buffer, registered
  bool bounce_only_ = false;  // a cached registration was stale once: copy from now on
  bool in_spare_ = false;     // the bytes go to a spare slot (committed by RdmaCommitTo)
  bool no_spare_ = false;     // a spare could not take this key: the usual way
  proto::RdmaGrant grant_;
  uint64_t moved_ = 0;  // bytes of the value transferred by the pieces done
  uint64_t piece_ = 0;  // bytes of the piece in flight
  uint64_t checksum_ = 0;
  uint64_t token_ = 0;
  uint64_t value_size_ = 0;
  std::vector<uint8_t> value_;
  Status status_ = Internal("request was never answered (client bug)");
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_RDMA_OPS_H_
