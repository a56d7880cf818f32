// Connection: one authenticated TCP connection to one server, pipelining many
// exchanges (docs/wire-protocol.md).
//
// Life: Start() opens a non-blocking socket and begins the TCP connect; the
// Connect handshake then runs inside DriveConnections() like any other I/O,
// so one poll loop can establish several connections, and a server that
// never answers delays nothing but its own keys. Once ready, the connection
// writes request frames (fields | tag | meta as one buffer, value bytes
// straight from the caller's memory) while reading responses (header, meta,
// then the payload straight into the caller's buffers) for as long as
// requests are outstanding, never more than the server's max_inflight.
//
// Failure: any error mid-frame, a deadline with requests outstanding, or a
// protocol or authentication error fails every exchange on the connection
// and leaves it unusable (Reusable() false); its stream state is unknown.
// Nothing is sent once the operation's deadline has passed: requests not yet
// started then fail as "not sent", and the server is blamed (Lost()) only for
// a request it was actually sent and did not answer, or a connect or
// handshake it did not complete: a deadline spent elsewhere (say, waiting
// for another server's connection) is not this server's failure.
//
// Ownership and threads: owned by a ServerPool while idle and by one calling
// thread while checked out; not thread-safe.
#ifndef MEMKV_CLIENT_CONNECTION_H_
#define MEMKV_CLIENT_CONNECTION_H_

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "base/clock.h"
#include "base/hmac.h"
#include "base/unique_fd.h"
#include "client/counters.h"
#include "client/exchange.h"
#include "client/rdma.h"
#include "memkv/status.h"
#include "proto/frame.h"

namespace memkv::client {

// A server as the client knows it.
struct Endpoint {
  std::string host;  // for getaddrinfo (no brackets)
  uint16_t port = 0;
  std::string name;  // "host:port" as placement and messages use it
  // The client's cache identity (memkv/identity.h) as its canonical text,
  // sent as each connection's first request (Identify); empty: none.
  std::string identity;
  // Told the tenant the server filed the identity under ("" for the
  // administrator's key) when an Identify is answered; may be empty.
  std::function<void(const std::string& tenant)> on_identified;
};

class Connection {
 public:
  // Resolves the endpoint and starts a non-blocking connect. Unavailable when
  // the name does not resolve or every address refuses at once. `counters`
  // must outlive the connection.
  // With an active `rdma` engine the Connect request offers RDMA QPs
  // (docs/rdma.md); the engine must outlive the connection.
  static Result<std::unique_ptr<Connection>> Start(const Endpoint& endpoint,
                                                   std::span<const uint8_t> master_key,
                                                   Nanos connect_deadline, ClientCounters* counters,
                                                   RdmaEngine* rdma = nullptr);

  // Wraps a socket that already finished the handshake (tests, tools).
  static std::unique_ptr<Connection> Adopt(UniqueFd fd, std::string name,
                                           std::unique_ptr<proto::FrameAuth> auth,
                                           uint32_t max_inflight, ClientCounters* counters);

  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& name() const { return name_; }

  // Queues an exchange; it is sent by DriveConnections().
  void Enqueue(Exchange* exchange) {
    exchange->connection_ = this;
    pending_.push_back(exchange);
  }
  // Queues an exchange whose answer nobody waits for (an RDMA get's release,
  // once the value is verified). DriveConnections sends it, but a connection
  // with only such answers outstanding has no work: the call returns, the
  // connection may go back to its pool, and the answers are read before the
  // next ones a caller waits for (or dropped with the connection). The
  // connection owns the exchange and deletes it when answered or failed.
  void EnqueueDetached(std::unique_ptr<Exchange> exchange) {
    exchange->detached_ = true;
    Enqueue(exchange.release());
  }
  // The RDMA channel when the server accepted RDMA and it still works; null
  // otherwise (exchanges then go inline over TCP).
  RdmaChannel* rdma_channel() const { return rdma_ != nullptr && rdma_->ready() ? rdma_.get() : nullptr; }

  // Handshake done, nothing outstanding but detached answers, stream in
  // sync, server not closing: safe to hand to the next call.
  bool Reusable() const;
  // The handshake completed at some point (the server was reachable).
  bool WasReady() const { return was_ready_; }
  // Why the connection failed (Ok while it has not).
  const Status& error() const { return error_; }
  // The largest value the server takes (its memory.max_value_size), as its
  // Connect answer said; before the handshake, the limit of servers that
  // predate that setting.
  uint64_t max_value_bytes() const { return max_value_bytes_; }
  // The failure says the server is unreachable or unresponsive (connect
  // failure, timeout, connection lost), as opposed to refusing us.
  bool Lost() const { return lost_; }
  // An idle connection the server has closed (or written to unasked). Reads
  // the detached answers that have arrived first (non-blocking).
  bool IsStale();

  // ---- Used by DriveConnections() ----
  bool HasWork() const;
  bool Establishing() const { return state_ == State::kConnecting || state_ == State::kHandshake; }
  Nanos connect_deadline() const { return connect_deadline_; }
  int fd() const { return fd_.get(); }
  short PollEvents() const;
  // The connection can wait for a response inside its own receive (a
  // blocking read bounded by kWaitSliceNs) instead of in poll: ready, TCP
  // only, and the socket was switched to blocking mode after the handshake.
  bool CanWaitInRead() const { return wait_in_read_ && state_ == State::kReady && !RdmaBusy(); }
  // One blocking read (at most kWaitSliceNs), then what OnEvents(POLLIN)
  // does, sending only while `deadline` is ahead. The caller makes sure the
  // deadline is at least a slice away.
  void WaitAndReceive(Nanos deadline);
  static constexpr Nanos kWaitSliceNs = 20'000'000;
  // Non-blocking I/O after poll reported `revents` (or 0: just try to write).
  // Reads what arrived; writes only when `may_send` (the deadline is ahead).
  void OnEvents(short revents, bool may_send);
  // The operation's deadline (or, while establishing, the connect deadline) passed.
  void Expire(bool connect_deadline);
  // Gives up on everything (poll itself failed).
  void Abort(const Status& status) { Fail(status); }
  // RDMA transfers in flight: DriveConnections polls the channel's CQ.
  bool RdmaBusy() const { return rdma_ != nullptr && rdma_->outstanding() > 0; }
  int RdmaFd() const { return rdma_->fd(); }
  // Arms the CQ; true when completions arrived meanwhile (do not block).
  bool RdmaArm() { return rdma_->Arm(); }
  void RdmaProgress() { rdma_->Progress(); }
  // Bytes ever written to and read from the socket.
  uint64_t bytes_moved() const { return bytes_written_ + bytes_read_; }
  // Anything queued for sending (e.g. an RDMA commit after its WRITE).
  bool CanSendNow() const { return CanSend(); }

 private:
  enum class State { kConnecting, kHandshake, kReady, kFailed };
  enum class RecvPhase { kHeader, kMeta, kPayload };

  struct Address {
    sockaddr_storage addr{};
    socklen_t len = 0;
  };

  Connection(std::string name, ClientCounters* counters);

  Status ConnectNext(Status last);  // tries addresses_ from next_address_
  Status OnConnectWritable();       // TCP connect finished (or failed)
  Status QueueHello();              // the Connect request
  Status OnConnectResponse(const Tag& tag);
  // The RDMA part of the Connect answer (`rest` of its meta).
  Status OnRdmaAnswer(std::span<const uint8_t> rest);
  bool CanSend() const;
  bool Refill();
  Status Send();
  // Reads and parses what has arrived; with `block_first` the first read
  // blocks (up to the SO_RCVTIMEO slice), every other one is MSG_DONTWAIT.
  Status Receive(bool block_first = false);
  Status OnHeader();
  Status OnMeta();
  Status StartPayload();
  void AdvancePayload(uint64_t n);
  // Reads from the socket: into the read-ahead buffer, or for the rest of a
  // large payload straight into its destinations; `*asked` is set to the
  // bytes it asked for. 0 on EOF, -1 with errno.
  ssize_t ReadSocket(size_t* asked, int flags);
  // The caller's buffer of the one get outstanding, when its answer has not
  // begun to arrive; empty otherwise. ReadAnswerInPlace then reads the
  // answer's header and the buffer's worth of payload in one recvmsg, and
  // LandAnswerInPlace parses what it read: a value is already in place (one
  // system call and no copy, where the read-ahead path makes two and copies
  // up to kReadAheadBytes).
  std::span<uint8_t> InPlaceDestination() const;
  ssize_t ReadAnswerInPlace(std::span<uint8_t> dst, size_t* asked, int flags);
  Status LandAnswerInPlace(std::span<uint8_t> dst, size_t n);
  // After the handshake: clears O_NONBLOCK and sets SO_RCVTIMEO to a slice,
  // so that a caller with one connection can sleep in the read itself. Every
  // other read and write passes MSG_DONTWAIT. Off when either call fails.
  void EnableWaitInRead();
  // Feeds `n` received bytes at `p` to the phase they belong to (header,
  // meta, payload segments); returns the bytes used, less than `n` when a
  // response ended (the rest belongs to the next one) or the phase failed.
  Result<size_t> Consume(const uint8_t* p, size_t n);
  ChecksumStream rx_hash_;  // of the payload segment being received
  void FinishResponse();
  // Requests the server was sent (at least their first byte) and has not
  // answered, detached ones aside; it is to blame for a deadline only when
  // there are some.
  size_t Unanswered() const;
  // `server_at_fault` false: the failure is no sign that the server is down
  // (Lost() stays false), e.g. the deadline passed before we sent anything.
  void Fail(const Status& status, bool server_at_fault = true);

  const std::string name_;
  ClientCounters* const counters_;
  UniqueFd fd_;
  State state_ = State::kConnecting;
  bool was_ready_ = false;
  bool lost_ = false;
  bool wait_in_read_ = false;
  Status error_;
  // Set when the server answered with a status after which it closes the
  // connection (AuthFailed, ProtocolError, ...): its EOF is then expected,
  // not a sign the server is down.
  Status server_closing_;

  // Establishing.
  std::vector<Address> addresses_;
  size_t next_address_ = 0;
  Nanos connect_deadline_ = 0;
  Key32 master_key_{};
  std::array<uint8_t, proto::kNonceSize> client_nonce_{};
  std::unique_ptr<HmacSha256> master_mac_;  // tags the Connect exchange
  std::string hello_;  // the Connect frame while it is being sent

  // RDMA (null when not offered or given up on this connection).
  RdmaEngine* engine_ = nullptr;
  std::unique_ptr<RdmaChannel> rdma_;

  // Session.
  std::unique_ptr<proto::FrameAuth> auth_;
  uint32_t max_inflight_ = proto::kMaxInflightPerConnection;
  // The server's value limit from its Connect answer (the limit of servers
  // that predate memory.max_value_size until then).
  uint64_t max_value_bytes_ = proto::kMaxValueBytes;
  uint64_t next_request_id_ = 1;

  // Send side: exchanges not yet started, and the iovecs being written.
  std::deque<Exchange*> pending_;
  std::string identity_;                // Endpoint::identity
  std::function<void(const std::string&)> on_identified_;  // Endpoint::on_identified
  std::unique_ptr<Exchange> identify_;  // the Identify exchange, first after the handshake
  std::vector<iovec> send_iov_;
  size_t send_first_ = 0;
  // Bytes ever put into send_iov_ and ever written: Exchange::stream_offset_
  // against bytes_written_ tells which requests reached the server.
  uint64_t bytes_queued_ = 0;
  uint64_t bytes_written_ = 0;
  uint64_t bytes_read_ = 0;
  // Started (some or all bytes written), awaiting their responses in order.
  std::deque<Exchange*> inflight_;
  // How many of inflight_ are detached (EnqueueDetached).
  size_t detached_inflight_ = 0;
  // Deletes `x` when the connection owns it.
  static void DropIfDetached(Exchange* x);

  // Receive side: the response being read.
  RecvPhase phase_ = RecvPhase::kHeader;
  std::array<uint8_t, proto::kHeaderSize> header_{};
  size_t header_got_ = 0;
  proto::FrameHeader rx_;
  std::vector<uint8_t> meta_;
  size_t meta_got_ = 0;
  std::vector<PayloadSegment> segments_;
  size_t segment_index_ = 0;
  uint64_t segment_offset_ = 0;
  std::unique_ptr<uint8_t[]> discard_;  // sink for dropped payload bytes
  // Read-ahead: one recv takes a response's header, meta and a small
  // payload together (and the next responses of a pipeline), instead of a
  // read per part. Bytes [rx_pos_, rx_end_) are received and not yet used.
  std::unique_ptr<uint8_t[]> rx_buf_;
  size_t rx_pos_ = 0;
  size_t rx_end_ = 0;
};

// Runs the queued exchanges of `connections` (establishing them first where
// needed) until each connection is idle or failed. The deadline moves one
// second later per proto::kDeadlineBytesPerSecond the connections have moved since
// the call began: an operation on a multi-GiB value is not cut off on a link
// slower than its timeout alone demands, yet a stalled one still is.
// Returns by `deadline` (so moved) plus
// scheduling slack: whatever is still outstanding then fails with
// DeadlineExceeded. Connections still establishing also fail at their own
// connect deadline. Sends nothing once `deadline` has passed.
//
// `on_done(i)`, when given, is called exactly once for each connections[i],
// on the calling thread, as soon as that connection has no work left (every
// exchange on it answered or failed). DriveConnections never touches the
// connection again afterwards, so the callback may hand it back to its pool
// while the loop goes on with the others.
void DriveConnections(std::span<Connection* const> connections, Nanos deadline,
                      const std::function<void(size_t)>& on_done = nullptr);

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_CONNECTION_H_
