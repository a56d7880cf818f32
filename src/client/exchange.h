// Exchange: one request frame and the handler of its response, the unit a
// Connection pipelines. The operation that creates an exchange owns it and
// keeps it (and the caller memory it points into) alive until the
// DriveConnections() call carrying it returns; by then every exchange has
// been told exactly one outcome: a response (OnResponse, then OnSegment for
// each payload segment) or a failure (OnFailure, possibly after a response
// whose payload was cut off).
//
// Exchanges run on the calling thread only; not thread-safe.
#ifndef MEMKV_CLIENT_EXCHANGE_H_
#define MEMKV_CLIENT_EXCHANGE_H_

#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/status.h"
#include "proto/frame.h"

namespace memkv::client {

class Connection;

// Where consecutive bytes of a response payload go.
struct PayloadSegment {
  uint8_t* dst = nullptr;  // caller memory (may be null when size is 0)
  uint64_t size = 0;
  uint64_t checksum = 0;   // expected XXH3-64 of the segment
  uint32_t item = 0;       // exchange-defined tag handed back to OnSegment
  bool discard = false;    // read and dropped (dst unused, not verified)
};

// The request as it goes on the wire (fields are filled in by the connection).
struct RequestFrame {
  proto::Opcode opcode = proto::Opcode::kPing;
  std::string meta;
  std::vector<iovec> payload;  // caller bytes, sent without copying
  uint64_t payload_len = 0;
  uint64_t payload_checksum = 0;  // single-value frames only
};

class Exchange {
 public:
  virtual ~Exchange() = default;

  // Builds the request. Called by the connection right before the frame is
  // sent, so a long pipeline starts sending before every checksum is computed.
  virtual RequestFrame BuildRequest() = 0;
  // Called instead, first: true when the exchange started work that needs
  // no frame now (an RDMA WRITE into a slot the server granted ahead) and
  // queues itself again for its next frame; the connection sends nothing.
  virtual bool StartsWithoutFrame() { return false; }

  // A verified (tag checked, request id and opcode matched) response arrived.
  // Appends to `payload` where its payload goes; the segments' sizes must add
  // up to header.payload_len. A non-Ok return means the response breaks the
  // protocol: the connection is dropped and OnFailure follows.
  virtual Status OnResponse(const proto::FrameHeader& header, std::span<const uint8_t> meta,
                            std::vector<PayloadSegment>* payload) = 0;

  // A segment not marked discard was received completely; `checksum_ok` says
  // whether its bytes match the checksum the server sent.
  virtual void OnSegment(const PayloadSegment& segment, bool checksum_ok) = 0;

  // The exchange cannot complete (connection lost, deadline, protocol error).
  virtual void OnFailure(const Status& status) = 0;
  // Where a successful answer's payload will start, when the exchange knows
  // before the answer arrives (a get into the caller's buffer): the
  // connection may then read the answer's header and its payload in one
  // system call, the payload straight into place. Empty: not known.
  virtual std::span<uint8_t> ExpectedDestination() const { return {}; }
  // The size of the single value the next request carries or reserves room
  // for (a put), 0 for none: one over the server's announced limit is
  // answered OnFailure(TooLarge) without being sent.
  virtual uint64_t RequestValueBytes() const { return 0; }

 protected:
  // The connection the exchange was last queued on (multi-frame exchanges
  // queue themselves again for their next frame).
  Connection* connection() const { return connection_; }

 private:
  friend class Connection;
  Connection* connection_ = nullptr;
  // Owned by the connection, which deletes it once answered or failed; no
  // caller waits for it (Connection::EnqueueDetached).
  bool detached_ = false;
  // Set by the connection: the request's id and opcode, and its
  // fields | tag | meta, which must live until the frame is written.
  uint64_t request_id_ = 0;
  // Where the frame starts in the connection's outgoing byte stream: the
  // request reached the server's side once more bytes than this were written.
  uint64_t stream_offset_ = 0;
  proto::Opcode sent_opcode_ = proto::Opcode::kPing;
  std::string head_;
};

// Printable form of a key for error messages: the key itself when it is
// short printable ASCII, else a hex prefix, with its length.
std::string KeyForMessage(std::string_view key);

// Status for a status code that came off the wire (unknown codes included).
Status StatusFromWire(StatusCode code, std::string message);

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_EXCHANGE_H_
