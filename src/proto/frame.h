// Wire protocol v1: frame header layout, limits, opcodes and the session
// authentication that tags every frame. Byte-level specification:
// docs/wire-protocol.md. Pure code (no I/O), fuzzed by FuzzFrame (fuzz/fuzz_targets.cc).
//
// A frame is
//   header (40 bytes) | tag (32 bytes) | meta (meta_len bytes) | payload (payload_len bytes)
// The tag is HMAC-SHA256 under the connection's session key over
//   seq (8 bytes LE) | header | meta
// where seq counts the frames sent in that direction on that connection.
// The payload is covered by its XXH3-64 checksum, which sits in the header
// (single values) or in the meta (batches) and so is covered by the tag.
#ifndef MEMKV_PROTO_FRAME_H_
#define MEMKV_PROTO_FRAME_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/hmac.h"
#include "memkv/status.h"

namespace memkv::proto {

inline constexpr uint8_t kMagic[4] = {'M', 'K', 'V', 'F'};
inline constexpr uint8_t kProtocolVersion = 1;
inline constexpr size_t kFieldsSize = 40;
inline constexpr size_t kTagSize = 32;
inline constexpr size_t kHeaderSize = kFieldsSize + kTagSize;  // 72
inline constexpr size_t kNonceSize = 32;

// Documented, enforced limits (docs/wire-protocol.md "Limits").
inline constexpr size_t kMaxKeyBytes = 1024;
// A value's size limit is the server's memory.max_value_size, which it
// announces at Connect (max_value_bytes), at most kMaxValueBytesCeiling.
// kMaxValueBytes is the fixed limit of servers that predate the setting (and
// what they announce).
inline constexpr uint64_t kMaxValueBytes = 256ULL << 20;
inline constexpr uint64_t kMaxValueBytesCeiling = 64ULL << 30;
inline constexpr uint32_t kMaxBatchItems = 1024;
inline constexpr uint32_t kMaxMetaBytes = 4 + kMaxBatchItems * (2 + kMaxKeyBytes + 16);
// One frame's payload, except a TcpPut request's or a TcpGet response's,
// which carry one value and may reach kMaxValueBytesCeiling
// (MaxPayloadBytes).
inline constexpr uint64_t kMaxPayloadBytes = 1ULL << 30;
inline constexpr uint32_t kMaxInflightPerConnection = 128;
// Deadlines grow with the bytes a transfer moves (the server's frame
// deadline, the client's operation deadline): one second more per this many
// bytes, so a multi-GiB value is not cut off on a link slower than the
// timeout alone demands, yet one that stalls still is.
inline constexpr uint64_t kDeadlineBytesPerSecond = 64ULL << 20;
// What moving `bytes` adds to a deadline, in nanoseconds.
constexpr int64_t DeadlineAllowanceNs(uint64_t bytes) {
  return static_cast<int64_t>(bytes / (kDeadlineBytesPerSecond / 1000)) * 1'000'000;
}

enum class Opcode : uint8_t {
  kPing = 0x01,
  kConnect = 0x06,
  kPut = 0x20,  // TcpPut
  kGet = 0x21,  // TcpGet
  kDelete = 0x22,  // TcpDelete
  kExists = 0x23,
  kBatchPut = 0x24,
  kBatchGet = 0x25,
  kBatchExists = 0x26,
  kList = 0x27,  // keys under a prefix, a page at a time
  kStat = 0x28,  // a value's size, without its bytes
  kMatchPrefix = 0x29,   // how many leading keys of a chain are stored
  kBatchPutWith = 0x2a,  // BatchPut whose items carry put options
  kServerInfo = 0x2b,    // the server's identity, placement weight and state (ServerInfo)
  kIdentify = 0x2c,      // the connection's cache identity: its keys are kept apart from other identities'
  kReport = 0x2d,        // what the client counted that the server cannot see (restores in time, shed stores)
  // RDMA control (bulk bytes move by one-sided RDMA; docs/rdma.md).
  kRdmaPut = 0x30,      // allocate a landing slot in the pool
  kRdmaCommit = 0x31,   // publish what landed, after checking its checksum
  kRdmaGet = 0x32,      // look up and pin a value for RDMA READ
  kRdmaRelease = 0x33,  // unpin a value or drop an uncommitted slot
  kRdmaPutWith = 0x34,  // RdmaPut carrying put options (committed by RdmaCommit)
  kRdmaSpare = 0x35,     // a landing slot held for the connection's next put of that size
  kRdmaCommitTo = 0x36,  // publish what landed in a spare slot under the key (and options) named now
};
// Name of a known opcode, or "0x7f" style hex for an unknown one.
std::string OpcodeName(uint8_t opcode);
bool IsKnownOpcode(uint8_t opcode);

inline constexpr uint16_t kFlagResponse = 1u << 0;
inline constexpr uint16_t kKnownFlags = kFlagResponse;

struct FrameHeader {
  uint8_t version = kProtocolVersion;
  uint8_t opcode = 0;
  uint16_t flags = 0;
  uint64_t request_id = 0;
  StatusCode status = StatusCode::kOk;
  uint32_t meta_len = 0;
  uint64_t payload_len = 0;
  uint64_t payload_checksum = 0;

  bool is_response() const { return (flags & kFlagResponse) != 0; }
};

// The payload limit of a frame: kMaxValueBytesCeiling for the frames that
// carry a single value (a TcpPut request, a TcpGet response), whose receiver
// then holds it to the server's value limit; kMaxPayloadBytes for the rest.
uint64_t MaxPayloadBytes(const FrameHeader& header);

// Writes the 40 header bytes (magic first).
void EncodeFields(const FrameHeader& header, uint8_t* out);

// Parses and checks the 40 header bytes: magic, version (0 is malformed,
// newer than ours is UnsupportedVersion), unknown flags, meta_len and
// payload_len against the limits. Unknown opcodes are NOT rejected here (the
// caller answers them with a ProtocolError response, the frame being
// well-formed). On error `out` still holds whatever fields were decoded, so
// the caller can echo the request id.
Status DecodeFields(const uint8_t* in, FrameHeader* out);

// Per-connection, per-direction session keys derived from the shared key and
// both nonces of the Connect exchange.
struct SessionKeys {
  Key32 client_to_server{};
  Key32 server_to_client{};
};
Result<SessionKeys> DeriveSessionKeys(std::span<const uint8_t> master_key,
                                      std::span<const uint8_t, kNonceSize> client_nonce,
                                      std::span<const uint8_t, kNonceSize> server_nonce);

// Signs frames one direction and verifies the other, with implicit sequence
// numbers so a frame replayed or reordered within the connection fails too.
// One per connection; not thread-safe.
class FrameAuth {
 public:
  // `sign_key` tags what we send, `verify_key` checks what we receive.
  static Result<std::unique_ptr<FrameAuth>> Create(std::span<const uint8_t> sign_key,
                                                   std::span<const uint8_t> verify_key);
  // Tags the next outgoing frame (header fields + meta) and advances the send sequence.
  Tag SignNext(const uint8_t* fields, std::span<const uint8_t> meta);
  // Checks the next incoming frame and advances the receive sequence.
  bool VerifyNext(const uint8_t* fields, std::span<const uint8_t> meta, const Tag& tag);

 private:
  FrameAuth(std::unique_ptr<HmacSha256> sign, std::unique_ptr<HmacSha256> verify)
      : sign_(std::move(sign)), verify_(std::move(verify)) {}
  static Tag TagOf(HmacSha256& mac, uint64_t seq, const uint8_t* fields,
                   std::span<const uint8_t> meta);
  std::unique_ptr<HmacSha256> sign_;
  std::unique_ptr<HmacSha256> verify_;
  uint64_t send_seq_ = 0;
  uint64_t recv_seq_ = 0;
};

// The Connect exchange is tagged under the shared key itself (sequence 0);
// the response's tag also covers the client's nonce, binding it to the request.
Tag ConnectTag(HmacSha256& master, const uint8_t* fields, std::span<const uint8_t> meta,
               std::span<const uint8_t> client_nonce);

// The key hint (docs/wire-protocol.md, "Connect handshake"): a client puts
// the first kKeyHintSize bytes of HMAC-SHA256(key, "memkv v1 key id") at the
// start of its client nonce, so a server that holds many keys finds the one
// that signed the Connect with one lookup. The rest of the nonce stays
// random; a nonce without the hint (an older client) still works, the server
// then trying its keys in turn.
inline constexpr size_t kKeyHintSize = 8;
using KeyHint = std::array<uint8_t, kKeyHintSize>;
Result<KeyHint> KeyHintOf(std::span<const uint8_t> key);

}  // namespace memkv::proto

#endif  // MEMKV_PROTO_FRAME_H_
