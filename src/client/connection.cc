// Connection, part one: establishing (TCP connect and the Connect
// handshake), failure, and the poll loop that drives connections.
// Part two, connection_io.cc: request and response framing.
#include "client/connection.h"

#include <netdb.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/errno_text.h"
#include "client/ops.h"
#include "io/socket.h"
#include "proto/messages.h"

namespace memkv::client {

Connection::Connection(std::string name, ClientCounters* counters)
    : name_(std::move(name)), counters_(counters) {}

Connection::~Connection() {
  std::fill(master_key_.begin(), master_key_.end(), 0);
  // Callers' exchanges are all done by now (Reusable, or failed); detached
  // ones may still wait for answers the server sends to a closed socket.
  for (Exchange* x : inflight_) DropIfDetached(x);
  for (Exchange* x : pending_) DropIfDetached(x);
}

void Connection::DropIfDetached(Exchange* x) {
  if (x->detached_) delete x;
}

// Not io/socket.h's ConnectTcp: that one waits for the connect, and a
// call fanning out to several servers must not wait on one server (possibly
// a black hole) before it even starts talking to the others. The connect
// and the handshake therefore run in DriveConnections' poll loop, bounded by
// the connect deadline there.
Result<std::unique_ptr<Connection>> Connection::Start(const Endpoint& endpoint,
                                                      std::span<const uint8_t> master_key,
                                                      Nanos connect_deadline,
                                                      ClientCounters* counters, RdmaEngine* rdma) {
  if (master_key.size() != Key32().size()) {
    return InvalidArgument("auth key must be 32 bytes, got " + std::to_string(master_key.size()));
  }
  std::unique_ptr<Connection> conn(new Connection(endpoint.name, counters));
  std::copy(master_key.begin(), master_key.end(), conn->master_key_.begin());
  conn->connect_deadline_ = connect_deadline;
  conn->identity_ = endpoint.identity;
  conn->on_identified_ = endpoint.on_identified;
  if (rdma != nullptr && rdma->active()) {
    conn->engine_ = rdma;
    Result<std::unique_ptr<RdmaChannel>> channel = rdma->NewChannel();
    if (channel.ok()) {
      conn->rdma_ = std::move(channel).value();
    } else if (!rdma->OnFailure("creating RDMA queue pairs: " + channel.status().message())) {
      return channel.status().WithContext("MEMKV_TRANSPORT=rdma");
    }
  }

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int gai = ::getaddrinfo(endpoint.host.c_str(), std::to_string(endpoint.port).c_str(), &hints, &found);
  if (gai != 0) return Unavailable("cannot resolve " + endpoint.name + ": " + gai_strerror(gai));
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    Address address;
    std::memcpy(&address.addr, ai->ai_addr, ai->ai_addrlen);
    address.len = ai->ai_addrlen;
    conn->addresses_.push_back(address);
  }
  ::freeaddrinfo(found);
  MEMKV_RETURN_IF_ERROR(conn->ConnectNext(Unavailable("no address for " + endpoint.name)));
  return conn;
}

std::unique_ptr<Connection> Connection::Adopt(UniqueFd fd, std::string name,
                                              std::unique_ptr<proto::FrameAuth> auth,
                                              uint32_t max_inflight, ClientCounters* counters) {
  std::unique_ptr<Connection> conn(new Connection(std::move(name), counters));
  conn->fd_ = std::move(fd);
  conn->auth_ = std::move(auth);
  conn->max_inflight_ = std::clamp<uint32_t>(max_inflight, 1, proto::kMaxInflightPerConnection);
  conn->state_ = State::kReady;
  conn->was_ready_ = true;
  conn->EnableWaitInRead();
  return conn;
}

Status Connection::ConnectNext(Status last) {
  while (next_address_ < addresses_.size()) {
    const Address& address = addresses_[next_address_++];
    UniqueFd fd(::socket(address.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      last = Unavailable("socket() for " + name_ + ": " + ErrnoMessage(errno));
      continue;
    }
    MEMKV_RETURN_IF_ERROR(io::SetNoDelay(fd.get()));
    int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address.addr), address.len);
    if (rc == 0) {  // loopback can connect at once
      fd_ = std::move(fd);
      return QueueHello();
    }
    if (errno == EINPROGRESS) {
      fd_ = std::move(fd);
      state_ = State::kConnecting;
      return Status::Ok();
    }
    last = Unavailable("connect to " + name_ + ": " + ErrnoMessage(errno));
  }
  return last;
}

Status Connection::OnConnectWritable() {
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
  if (err == 0) return QueueHello();
  fd_.Reset();
  return ConnectNext(Unavailable("connect to " + name_ + ": " + ErrnoMessage(err)));
}

Status Connection::QueueHello() {
  MEMKV_RETURN_IF_ERROR(RandomBytes(client_nonce_.data(), client_nonce_.size()));
  // The key hint leads the nonce: a server holding many keys (tenants) finds
  // the one that signs this Connect without trying each.
  MEMKV_ASSIGN_OR_RETURN(const proto::KeyHint hint, proto::KeyHintOf(master_key_));
  std::memcpy(client_nonce_.data(), hint.data(), hint.size());
  MEMKV_ASSIGN_OR_RETURN(master_mac_, HmacSha256::Create(master_key_));
  proto::FrameHeader header;
  header.opcode = static_cast<uint8_t>(proto::Opcode::kConnect);
  header.request_id = 0;
  std::string meta(reinterpret_cast<const char*>(client_nonce_.data()), client_nonce_.size());
  if (rdma_ != nullptr) meta += proto::EncodeRdmaOffer(rdma_->Offer());
  header.meta_len = static_cast<uint32_t>(meta.size());
  hello_.assign(proto::kHeaderSize + meta.size(), '\0');
  auto* bytes = reinterpret_cast<uint8_t*>(hello_.data());
  proto::EncodeFields(header, bytes);
  std::memcpy(bytes + proto::kHeaderSize, meta.data(), meta.size());
  // The request's tag covers "memkv v1 connect" | fields | meta (no nonce suffix).
  Tag tag = proto::ConnectTag(*master_mac_, bytes, {bytes + proto::kHeaderSize, meta.size()}, {});
  std::memcpy(bytes + proto::kFieldsSize, tag.data(), tag.size());
  send_iov_.assign(1, iovec{hello_.data(), hello_.size()});
  send_first_ = 0;
  bytes_queued_ = bytes_written_ + hello_.size();
  state_ = State::kHandshake;
  return Status::Ok();
}

Status Connection::OnConnectResponse(const Tag& tag) {
  const std::string text(meta_.begin(), meta_.end());
  if (rx_.status != StatusCode::kOk) {
    // Refusals come before any session key exists, so they are untagged and
    // cannot be authenticated; they are shown as the server's word.
    server_closing_ = StatusFromWire(rx_.status, text);
    return StatusFromWire(rx_.status, "server " + name_ + " refused the connection: " +
                                          (text.empty() ? "no reason given" : text));
  }
  if (rx_.payload_len != 0) {
    return ProtocolError("server " + name_ + ": Connect response carries a payload");
  }
  Tag expected = proto::ConnectTag(*master_mac_, header_.data(), meta_, client_nonce_);
  if (!TagsEqual(expected, tag)) {
    return AuthFailed("server " + name_ +
                      " did not prove it holds the auth key (Connect response tag mismatch): "
                      "the client's and the server's auth keys differ, or something on the path "
                      "altered the answer");
  }
  proto::ConnectResponse response;
  std::span<const uint8_t> rest;
  MEMKV_RETURN_IF_ERROR(
      proto::DecodeConnectResponse(meta_, &response, &rest).WithContext("server " + name_));
  MEMKV_RETURN_IF_ERROR(OnRdmaAnswer(rest));
  MEMKV_ASSIGN_OR_RETURN(
      proto::SessionKeys keys,
      proto::DeriveSessionKeys(master_key_, client_nonce_, response.server_nonce));
  MEMKV_ASSIGN_OR_RETURN(auth_, proto::FrameAuth::Create(keys.client_to_server, keys.server_to_client));
  // The server's window, but never above the protocol's: we promise both.
  max_inflight_ = std::clamp<uint32_t>(response.max_inflight, 1, proto::kMaxInflightPerConnection);
  max_value_bytes_ = std::min(response.max_value_bytes, proto::kMaxValueBytesCeiling);
  state_ = State::kReady;
  was_ready_ = true;
  EnableWaitInRead();
  hello_.clear();
  master_mac_.reset();
  std::fill(master_key_.begin(), master_key_.end(), 0);
  ClientCounters::Add(counters_->connections_opened, 1);
  if (!identity_.empty()) {
    // Before anything queued: the server scopes every later key by it, and
    // closes the connection when it refuses it.
    identify_ = std::make_unique<IdentifyExchange>(name_, identity_, on_identified_);
    identify_->connection_ = this;
    pending_.push_front(identify_.get());
  }
  return Status::Ok();
}

Status Connection::OnRdmaAnswer(std::span<const uint8_t> rest) {
  if (rdma_ == nullptr) {
    if (!rest.empty()) return ProtocolError("server " + name_ + " answered an RDMA offer that was not made");
    return Status::Ok();
  }
  proto::RdmaAnswer answer;
  Status failure;
  if (rest.empty()) {
    failure = Unavailable("server " + name_ + " did not answer the RDMA offer (it serves TCP only)");
  } else {
    MEMKV_RETURN_IF_ERROR(proto::DecodeRdmaAnswer(rest, &answer).WithContext("server " + name_));
    if (answer.result == proto::RdmaAnswerResult::kAccepted) {
      failure = rdma_->Connect(answer, name_);
    } else {
      failure = (answer.result == proto::RdmaAnswerResult::kRefused ? FailedPrecondition(answer.message)
                                                                     : Unavailable(answer.message))
                    .WithContext("server " + name_ + " refused RDMA");
    }
  }
  if (failure.ok()) return Status::Ok();
  rdma_.reset();
  if (engine_->OnFailure(failure.message())) return Status::Ok();  // auto: this connection is TCP
  return failure.WithContext("MEMKV_TRANSPORT=rdma (which never falls back to TCP)");
}

bool Connection::Reusable() const {
  if (rdma_ != nullptr && (rdma_->broken() || rdma_->outstanding() > 0)) return false;
  if (state_ != State::kReady || !server_closing_.ok() || !pending_.empty() || send_first_ != send_iov_.size()) {
    return false;
  }
  // Detached answers still to come are read by the next call, wherever the
  // receive side stands in them.
  if (detached_inflight_ > 0) return inflight_.size() == detached_inflight_;
  return inflight_.empty() && phase_ == RecvPhase::kHeader && header_got_ == 0 && rx_pos_ == rx_end_;
}

bool Connection::IsStale() {
  if (state_ == State::kFailed) return true;
  if (detached_inflight_ > 0) {
    Status s = Receive();  // every read MSG_DONTWAIT: what has arrived, no more
    if (!s.ok()) Fail(s);
    if (state_ == State::kFailed) return true;
    if (detached_inflight_ > 0) return false;  // answers on their way: the socket is expected to turn readable
  }
  // An idle connection has nothing to read: readable means EOF, an error, or
  // bytes nobody asked for. Any of them makes the stream useless.
  pollfd p{fd_.get(), POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) != 0;
}

bool Connection::HasWork() const {
  if (state_ == State::kFailed) return false;
  return Establishing() || !pending_.empty() || inflight_.size() > detached_inflight_ ||
         send_first_ < send_iov_.size() || RdmaBusy();
}

bool Connection::CanSend() const {
  if (send_first_ < send_iov_.size()) return state_ == State::kHandshake || state_ == State::kReady;
  return state_ == State::kReady && !pending_.empty() && inflight_.size() < max_inflight_;
}

short Connection::PollEvents() const {
  switch (state_) {
    case State::kConnecting: return POLLOUT;
    case State::kHandshake: return static_cast<short>(POLLIN | (CanSend() ? POLLOUT : 0));
    case State::kReady: {
      bool reading = !inflight_.empty() || phase_ != RecvPhase::kHeader || header_got_ != 0;
      return static_cast<short>((reading ? POLLIN : 0) | (CanSend() ? POLLOUT : 0));
    }
    case State::kFailed: return 0;
  }
  return 0;
}

void Connection::OnEvents(short revents, bool may_send) {
  if (state_ == State::kFailed) return;
  if ((revents & POLLNVAL) != 0) {
    Fail(Internal("poll on the connection to " + name_ + ": invalid descriptor"));
    return;
  }
  if (state_ == State::kConnecting) {
    if ((revents & (POLLOUT | POLLERR | POLLHUP)) == 0) return;
    Status s = OnConnectWritable();
    if (!s.ok()) {
      Fail(s);
      return;
    }
    if (state_ == State::kConnecting) return;  // trying the next address
  }
  bool expecting = state_ == State::kHandshake || !inflight_.empty() || phase_ != RecvPhase::kHeader;
  if ((revents & (POLLIN | POLLERR | POLLHUP)) != 0 && expecting) {
    Status s = Receive();
    if (!s.ok()) {
      Fail(s);
      return;
    }
  }
  if (may_send && CanSend()) {
    Status s = Send();
    if (!s.ok()) {
      // The server may have said why before it hung up; read it so the
      // failure names the server's reason rather than EPIPE.
      if (state_ != State::kFailed && (!inflight_.empty() || state_ == State::kHandshake)) {
        Status r = Receive();
        if (!r.ok() && !server_closing_.ok()) s = r;
      }
      Fail(s);
    }
  }
}

void Connection::Expire(bool connect_deadline) {
  if (state_ == State::kFailed) return;
  const char* which = connect_deadline ? "the connect deadline (connect_timeout_ms)"
                                       : "the operation's deadline (timeout_ms)";
  if (state_ == State::kConnecting) {
    ClientCounters::Add(counters_->timeouts, 1);
    Fail(DeadlineExceeded("TCP connect to " + name_ + " did not complete before " + which));
    return;
  }
  if (state_ == State::kHandshake) {
    if (bytes_written_ == 0) {
      // The deadline passed before the Connect request went out.
      Fail(DeadlineExceeded("the Connect handshake with " + name_ + " was not sent before " + which),
           /*server_at_fault=*/false);
      return;
    }
    ClientCounters::Add(counters_->timeouts, 1);
    Fail(DeadlineExceeded("server " + name_ + " accepted the connection but did not answer the "
                          "Connect handshake before " + which));
    return;
  }
  if (RdmaBusy()) {
    ClientCounters::Add(counters_->timeouts, 1);
    Fail(DeadlineExceeded("RDMA transfer(s) with " + name_ + " did not complete before " + which +
                          " (a lossy or MTU-limited path retries until the QP gives up; docs/rdma.md)"));
    return;
  }
  Status not_sent = DeadlineExceeded("request to " + name_ + " was not sent before " + which);
  if (const size_t unanswered = Unanswered(); unanswered > 0) {
    ClientCounters::Add(counters_->timeouts, 1);
    Fail(DeadlineExceeded("server " + name_ + " did not answer " + std::to_string(unanswered) +
                          " outstanding request(s) before " + which));
    return;
  }
  if (inflight_.size() > detached_inflight_ || send_first_ < send_iov_.size()) {
    // Frames tagged and queued, but not one byte of them written: the server
    // answered everything it was sent, yet the session's tag sequence has
    // moved past these frames, so the stream cannot carry the next call.
    Fail(not_sent, /*server_at_fault=*/false);
    return;
  }
  // Only exchanges that never started (beside detached ones, whose answers
  // nobody waits for): the stream is still in sync, so the connection stays
  // usable.
  for (Exchange* x : pending_) {
    x->OnFailure(not_sent);
    DropIfDetached(x);
  }
  pending_.clear();
}

size_t Connection::Unanswered() const {
  // inflight_ is in stream order, so the started ones come first. A detached
  // request's answer is no call's to wait for: a later call's deadline does
  // not blame the server for it.
  size_t n = 0;
  for (const Exchange* x : inflight_) {
    if (x->stream_offset_ >= bytes_written_) break;
    if (!x->detached_) ++n;
  }
  return n;
}

void Connection::Fail(const Status& status, bool server_at_fault) {
  if (state_ == State::kFailed) return;
  state_ = State::kFailed;
  error_ = status;
  const bool transport = status.code() == StatusCode::kUnavailable ||
                         status.code() == StatusCode::kDeadlineExceeded;
  if (transport && !server_closing_.ok()) {
    // The server announced it would close (and why); its hang-up is that.
    error_ = Status(server_closing_.code(), "server " + name_ + " closed the connection after "
                                                "answering " + server_closing_.ToString());
  }
  lost_ = server_at_fault && transport && server_closing_.ok();
  fd_.Reset();
  std::deque<Exchange*> failed;
  failed.swap(inflight_);
  for (Exchange* x : pending_) failed.push_back(x);
  pending_.clear();
  send_iov_.clear();
  send_first_ = 0;
  segments_.clear();
  // QPs first: once they are destroyed no transfer touches caller memory.
  if (rdma_ != nullptr) rdma_->Abort(error_);
  detached_inflight_ = 0;
  for (Exchange* x : failed) {
    x->OnFailure(error_);
    DropIfDetached(x);
  }
}

void DriveConnections(std::span<Connection* const> connections, Nanos given_deadline,
                      const std::function<void(size_t)>& on_done) {
  std::vector<bool> done(connections.size(), false);
  std::vector<uint64_t> moved_before(connections.size());
  for (size_t i = 0; i < connections.size(); ++i) moved_before[i] = connections[i]->bytes_moved();
  // The deadline, moved by the bytes moved so far (of connections not yet
  // handed back: those are not touched again).
  uint64_t moved_by_done = 0;
  const auto moved_deadline = [&] {
    uint64_t moved = moved_by_done;
    for (size_t i = 0; i < connections.size(); ++i) {
      if (!done[i]) moved += connections[i]->bytes_moved() - moved_before[i];
    }
    return given_deadline + proto::DeadlineAllowanceNs(moved);
  };
  Nanos deadline = given_deadline;
  // Write what can be written before the first poll: a fresh request on an
  // idle connection almost always fits the socket buffer. Not after the
  // deadline, though: a request sent then could only time out, and would be
  // counted against a server that did nothing wrong.
  if (MonotonicNanos() < deadline) {
    for (Connection* c : connections) {
      if (c->HasWork()) c->OnEvents(0, /*may_send=*/true);
    }
  }
  std::vector<pollfd> fds;
  std::vector<size_t> polled;  // indices into connections, one per entry of fds
  std::vector<bool> is_cq;     // per entry of fds: the connection's RDMA completion channel
  for (;;) {
    fds.clear();
    polled.clear();
    is_cq.clear();
    bool busy = false;  // RDMA completions were found while arming: do not block
    deadline = moved_deadline();
    const Nanos now = MonotonicNanos();
    Nanos wake = deadline;
    for (size_t i = 0; i < connections.size(); ++i) {
      if (done[i]) continue;
      Connection* c = connections[i];
      if (c->RdmaBusy() && now < deadline) {
        c->RdmaProgress();
        if (c->CanSendNow()) c->OnEvents(0, /*may_send=*/true);  // e.g. a commit after its WRITE
      }
      if (c->HasWork() && now >= deadline) {
        c->Expire(/*connect_deadline=*/false);
      } else if (c->HasWork() && c->Establishing() && now >= c->connect_deadline()) {
        c->Expire(/*connect_deadline=*/true);
      }
      if (!c->HasWork()) {
        moved_by_done += c->bytes_moved() - moved_before[i];
        done[i] = true;
        if (on_done) on_done(i);  // may hand c back to its pool: not touched again
        continue;
      }
      if (c->Establishing()) wake = std::min(wake, c->connect_deadline());
      fds.push_back(pollfd{c->fd(), c->PollEvents(), 0});
      polled.push_back(i);
      is_cq.push_back(false);
      if (c->RdmaBusy()) {
        if (c->RdmaArm()) {
          busy = true;
        } else {
          fds.push_back(pollfd{c->RdmaFd(), POLLIN, 0});
          polled.push_back(i);
          is_cq.push_back(true);
        }
      }
    }
    if (polled.empty()) return;
    if (busy) continue;
    const Nanos wait = wake - now;
    // One connection waiting only for its answer: sleep in its read, as a
    // blocking socket would, rather than in ppoll and then read.
    if (fds.size() == 1 && fds[0].events == POLLIN && wait >= Connection::kWaitSliceNs &&
        connections[polled[0]]->CanWaitInRead()) {
      connections[polled[0]]->WaitAndReceive(deadline);
      continue;
    }
    timespec ts{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
    int rc = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (rc < 0) {
      if (errno == EINTR) continue;
      Status status = Internal("ppoll over " + std::to_string(fds.size()) + " connections: " + ErrnoMessage(errno));
      for (size_t i : polled) connections[i]->Abort(status);
      continue;  // the next pass reports them done
    }
    const bool may_send = MonotonicNanos() < deadline;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Connection* c = connections[polled[k]];
      if (is_cq[k]) {
        if (c->RdmaBusy()) c->RdmaProgress();
        if (c->CanSendNow()) c->OnEvents(0, may_send);
      } else {
        c->OnEvents(fds[k].revents, may_send);
      }
    }
  }
}

}  // namespace memkv::client
