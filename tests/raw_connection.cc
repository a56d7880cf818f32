#include "tests/raw_connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <cstring>

#include "base/bytes.h"
#include "base/checksum.h"
#include "base/clock.h"
#include "base/hmac.h"
#include "io/socket.h"
#include "proto/messages.h"

namespace memkv::testing {
namespace {
Nanos In(int ms) { return MonotonicNanos() + Nanos(ms) * 1'000'000; }
}  // namespace

Result<std::unique_ptr<RawConnection>> RawConnection::Open(uint16_t port) {
  MEMKV_ASSIGN_OR_RETURN(UniqueFd fd, io::ConnectTcp("127.0.0.1", port, In(5000)));
  auto c = std::make_unique<RawConnection>();
  c->fd_ = std::move(fd);
  return c;
}

Result<RawResponse> RawConnection::Handshake(const std::string& key_hex, uint8_t version,
                                             const std::string& rdma_offer) {
  auto key = HexDecode(key_hex);
  if (!key) return InvalidArgument("bad hex");
  MEMKV_ASSIGN_OR_RETURN(auto mac, HmacSha256::Create(*key));
  std::array<uint8_t, proto::kNonceSize> nonce{};
  MEMKV_RETURN_IF_ERROR(RandomBytes(nonce.data(), nonce.size()));
  proto::FrameHeader h;
  h.version = version;
  h.opcode = static_cast<uint8_t>(proto::Opcode::kConnect);
  h.request_id = 1;
  h.meta_len = static_cast<uint32_t>(proto::kNonceSize + rdma_offer.size());
  std::vector<uint8_t> frame(proto::kHeaderSize + h.meta_len);
  proto::EncodeFields(h, frame.data());
  std::memcpy(frame.data() + proto::kHeaderSize, nonce.data(), nonce.size());
  std::memcpy(frame.data() + proto::kHeaderSize + proto::kNonceSize, rdma_offer.data(), rdma_offer.size());
  Tag tag = proto::ConnectTag(*mac, frame.data(), {frame.data() + proto::kHeaderSize, h.meta_len}, {});
  std::memcpy(frame.data() + proto::kFieldsSize, tag.data(), tag.size());
  MEMKV_RETURN_IF_ERROR(SendBytes(frame));
  MEMKV_ASSIGN_OR_RETURN(RawResponse r, Read());
  if (r.header.status != StatusCode::kOk) return r;
  proto::ConnectResponse cr;
  std::span<const uint8_t> rest;
  MEMKV_RETURN_IF_ERROR(proto::DecodeConnectResponse(r.meta, &cr, &rest));
  MEMKV_ASSIGN_OR_RETURN(auto keys, proto::DeriveSessionKeys(*key, nonce, cr.server_nonce));
  MEMKV_ASSIGN_OR_RETURN(auth_, proto::FrameAuth::Create(keys.client_to_server, keys.server_to_client));
  return r;
}

std::vector<uint8_t> RawConnection::BuildRawFrame(uint8_t opcode, const std::string& meta,
                                                  const std::vector<uint8_t>& payload, uint64_t request_id,
                                                  uint64_t payload_len_override) {
  proto::FrameHeader h;
  h.opcode = opcode;
  h.request_id = request_id;
  h.meta_len = static_cast<uint32_t>(meta.size());
  h.payload_len = payload_len_override != UINT64_MAX ? payload_len_override : payload.size();
  h.payload_checksum = Checksum(payload.data(), payload.size());
  std::vector<uint8_t> frame(proto::kHeaderSize + meta.size());
  proto::EncodeFields(h, frame.data());
  std::memcpy(frame.data() + proto::kHeaderSize, meta.data(), meta.size());
  if (auth_) {
    Tag tag = auth_->SignNext(frame.data(), {frame.data() + proto::kHeaderSize, meta.size()});
    std::memcpy(frame.data() + proto::kFieldsSize, tag.data(), tag.size());
  }
  frame.insert(frame.end(), payload.begin(), payload.end());
  return frame;
}

std::vector<uint8_t> RawConnection::BuildFrame(proto::Opcode opcode, const std::string& meta,
                                               const std::vector<uint8_t>& payload, uint64_t request_id) {
  return BuildRawFrame(static_cast<uint8_t>(opcode), meta, payload, request_id);
}

Status RawConnection::SendBytes(const std::vector<uint8_t>& bytes) {
  iovec v{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  return io::SendAll(fd_.get(), std::span<iovec>(&v, 1), In(10000));
}

Result<RawResponse> RawConnection::Read(int timeout_ms) {
  Nanos deadline = In(timeout_ms);
  RawResponse r;
  uint8_t head[proto::kHeaderSize];
  MEMKV_RETURN_IF_ERROR(io::RecvAll(fd_.get(), head, sizeof(head), deadline));
  Status s = proto::DecodeFields(head, &r.header);
  if (!s.ok()) return s;
  r.meta.resize(r.header.meta_len);
  r.payload.resize(r.header.payload_len);
  MEMKV_RETURN_IF_ERROR(io::RecvAll(fd_.get(), r.meta.data(), r.meta.size(), deadline));
  MEMKV_RETURN_IF_ERROR(io::RecvAll(fd_.get(), r.payload.data(), r.payload.size(), deadline));
  if (auth_ && r.header.opcode != static_cast<uint8_t>(proto::Opcode::kConnect)) {
    Tag tag;
    std::memcpy(tag.data(), head + proto::kFieldsSize, tag.size());
    if (!auth_->VerifyNext(head, r.meta, tag) && r.header.status != StatusCode::kAuthFailed) {
      return AuthFailed("response tag does not verify");
    }
  }
  return r;
}

bool RawConnection::ClosedByPeer(int timeout_ms) {
  Nanos deadline = In(timeout_ms);
  char buf[4096];
  for (;;) {
    pollfd p{fd_.get(), POLLIN, 0};
    Nanos left = deadline - MonotonicNanos();
    if (left <= 0) return false;
    if (::poll(&p, 1, static_cast<int>(left / 1'000'000) + 1) <= 0) continue;
    ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (n == 0) return true;
    if (n < 0 && errno != EAGAIN && errno != EINTR) return true;  // reset counts as closed
  }
}

}  // namespace memkv::testing
