// RawConnection: a hand-driven protocol peer for tests that must send what
// the client library never would (garbage, tampered or replayed frames).
#ifndef MEMKV_TESTS_RAW_CONNECTION_H_
#define MEMKV_TESTS_RAW_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "memkv/status.h"
#include "proto/frame.h"

namespace memkv::testing {

struct RawResponse {
  proto::FrameHeader header;
  std::vector<uint8_t> meta;
  std::vector<uint8_t> payload;
  std::string message() const { return std::string(meta.begin(), meta.end()); }
};

class RawConnection {
 public:
  static Result<std::unique_ptr<RawConnection>> Open(uint16_t port);

  // Sends Connect signed with `key_hex` (carrying `rdma_offer`, an encoded
  // proto::RdmaOffer, when not empty); on success installs session keys.
  Result<RawResponse> Handshake(const std::string& key_hex, uint8_t version = proto::kProtocolVersion,
                                const std::string& rdma_offer = "");

  // Builds a signed frame (the next in sequence); the caller may alter the
  // bytes before SendBytes.
  std::vector<uint8_t> BuildFrame(proto::Opcode opcode, const std::string& meta,
                                  const std::vector<uint8_t>& payload, uint64_t request_id);
  std::vector<uint8_t> BuildRawFrame(uint8_t opcode, const std::string& meta, const std::vector<uint8_t>& payload,
                                     uint64_t request_id, uint64_t payload_len_override = UINT64_MAX);
  Status SendBytes(const std::vector<uint8_t>& bytes);
  Result<RawResponse> Read(int timeout_ms = 5000);
  // True when the server closed the connection within the timeout.
  bool ClosedByPeer(int timeout_ms = 5000);
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
  std::unique_ptr<proto::FrameAuth> auth_;
};

}  // namespace memkv::testing

#endif  // MEMKV_TESTS_RAW_CONNECTION_H_
