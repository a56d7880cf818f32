// RdmaExchange: a Put or Get whose value bytes move by RDMA, driven through
// the same Connection pipeline as every TCP exchange (docs/rdma.md):
//
//   Put  RdmaPut(key, len, checksum) -> slot  |  RDMA WRITE into the slot  |
//        RdmaCommit(token): the server checks the landed bytes and publishes
//   Get  RdmaGet(key) -> pinned value  |  RDMA READ  |  verify the checksum  |
//        RdmaRelease(token)
//
// Large values move straight between the caller's buffer (registered on
// first use and cached, RegistrationCache) and the server's pool; small ones,
// and Get() without a caller buffer, are staged through the bounce pool. When the
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

class RdmaExchange final : public Exchange, public RdmaSink {
 public:
  // `opcode` is kPut or kGet, as for SingleExchange.
  RdmaExchange(RdmaEngine* engine, ClientCounters* counters, proto::Opcode opcode, std::string_view key,
               std::string_view server, std::span<const uint8_t> value = {},
               std::optional<std::span<uint8_t>> get_buffer = std::nullopt);
  ~RdmaExchange() override;

  const Status& status() const { return via_tcp_ ? tcp_.status() : status_; }
  uint64_t value_size() const { return via_tcp_ ? tcp_.value_size() : value_size_; }
  std::vector<uint8_t>& value() { return via_tcp_ ? tcp_.value() : value_; }
  // The value bytes moved by RDMA (false: inline TCP, or no value moved).
  bool carried_by_rdma() const { return !via_tcp_ && carried_by_rdma_; }
  // ... straight from / into the caller's registered memory.
  bool zero_copy() const { return carried_by_rdma() && zero_copy_; }

  RequestFrame BuildRequest() override;
  Status OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                    std::vector<PayloadSegment>* payload) override;
  void OnSegment(const PayloadSegment& segment, bool checksum_ok) override;
  void OnFailure(const Status& status) override;
  void OnRdmaDone(const Status& status, bool connection_lost) override;

 private:
  enum class Phase { kStart, kGrant, kTransfer, kCommit, kRelease, kReleaseThenTcp, kTcp, kDone };

  bool is_put() const { return opcode_ == proto::Opcode::kPut; }
  std::string Context() const;
  Status StartTransfer(std::span<const uint8_t> meta);
  void PostTransfer();
  // A get's bytes arrived: true when they verify (else the caller retries or misses).
  bool FinishGet();
  void Then(Phase next);  // re-enqueue on the connection for the next frame
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
  bool via_tcp_ = false;
  bool carried_by_rdma_ = false;
  bool zero_copy_ = false;

  Phase phase_ = Phase::kStart;
  RdmaChannel* channel_ = nullptr;
  BounceBuffer bounce_;
  std::optional<RegistrationCache::Lease> lease_;  // the caller's own buffer, registered
  bool bounce_only_ = false;  // a cached registration was stale once: copy from now on
  proto::RdmaGrant grant_;
  uint64_t checksum_ = 0;
  uint64_t token_ = 0;
  uint64_t value_size_ = 0;
  std::vector<uint8_t> value_;
  Status status_ = Internal("request was never answered (client bug)");
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_RDMA_OPS_H_
