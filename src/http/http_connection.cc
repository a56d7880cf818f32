#include "http/http_connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <ctime>

#include "base/log.h"

namespace memkv::http {

HttpConnection::HttpConnection(UniqueFd fd, std::unique_ptr<TlsSession> tls, std::string peer, Mode mode,
                               const HttpConnectionLimits& limits, Nanos now)
    : fd_(std::move(fd)),
      tls_(std::move(tls)),
      peer_(std::move(peer)),
      mode_(mode),
      limits_(limits),
      state_(tls_ ? State::kHandshake : State::kReading),
      events_(POLLIN),
      deadline_(now + limits.read_timeout_ns),
      accepted_at_(now) {}

void HttpConnection::Step(Nanos now, const HttpRouter& router, HttpCounters& counters) {
  Advance(now, router, counters);
  if (state_ != State::kDone && now >= deadline_) {
    Expire(now, counters);
    Advance(now, router, counters);
  }
}

void HttpConnection::Advance(Nanos now, const HttpRouter& router, HttpCounters& counters) {
  for (bool more = true; more;) {
    switch (state_) {
      case State::kHandshake: more = DoHandshake(now, counters); break;
      case State::kReading: more = DoRead(now, router, counters); break;
      case State::kReadingBody: more = DoReadBody(now, router, counters); break;
      case State::kWriting: more = DoWrite(now); break;
      case State::kLingering: more = DoLinger(); break;
      case State::kDone: more = false; break;
    }
  }
}

void HttpConnection::Expire(Nanos now, HttpCounters& counters) {
  switch (state_) {
    case State::kHandshake:
      HttpCounters::Bump(counters.timeouts);
      LOG_DEBUG << "http: TLS handshake with " << peer_ << " timed out";
      state_ = State::kDone;
      break;
    case State::kReading:
    case State::kReadingBody:
      HttpCounters::Bump(counters.timeouts);
      LOG_DEBUG << "http: no complete request from " << peer_ << " in time";
      RespondError(now, 408, "no complete request in time");
      break;
    case State::kWriting:
      HttpCounters::Bump(counters.timeouts);
      LOG_DEBUG << "http: " << peer_ << " did not take the response in time";
      state_ = State::kDone;
      break;
    case State::kLingering:
    case State::kDone:
      state_ = State::kDone;
      break;
  }
}

bool HttpConnection::DoHandshake(Nanos now, HttpCounters& counters) {
  std::string why;
  bool plain_http = false;
  switch (tls_->Accept(&why, &plain_http)) {
    case TlsSession::Io::kDone:
      state_ = State::kReading;
      return true;
    case TlsSession::Io::kWantRead:
      events_ = POLLIN;
      return false;
    case TlsSession::Io::kWantWrite:
      events_ = POLLOUT;
      return false;
    case TlsSession::Io::kEof:
    case TlsSession::Io::kError:
      break;
  }
  HttpCounters::Bump(counters.tls_handshake_failures);
  LOG_DEBUG << "http: TLS handshake with " << peer_ << " failed: " << why;
  if (plain_http) {
    // The TLS library sent no alert for this; answer in the client's own language.
    tls_.reset();
    RespondError(now, 400, "this port speaks HTTPS; use an https:// URL");
    return true;
  }
  state_ = State::kDone;
  return false;
}

bool HttpConnection::DoRead(Nanos now, const HttpRouter& router, HttpCounters& counters) {
  if (mode_ == Mode::kRejectBusy) {
    HttpResponse busy = HttpResponse::Text(503, "503 Service Unavailable: too many admin connections open\n");
    busy.headers.push_back({"Retry-After", "1"});
    Respond(now, busy, false);
    return true;
  }
  char buf[4096];
  for (;;) {
    size_t room = limits_.max_header_bytes - in_.size();
    if (room == 0) {
      HttpCounters::Bump(counters.bad_requests);
      RespondError(now, 431, "request line and headers exceed " + std::to_string(limits_.max_header_bytes) + " bytes");
      return true;
    }
    size_t n = 0;
    Io io = Receive(buf, std::min(room, sizeof(buf)), &n);
    if (io == Io::kWait) return false;
    if (io != Io::kProgress) {  // gone before a complete request: nobody to answer
      state_ = State::kDone;
      return false;
    }
    size_t from = in_.size();
    in_.append(buf, n);
    size_t end = FindHeadEnd(in_, from);
    if (end != 0) {
      HandleHead(now, end, router, counters);
      return true;
    }
  }
}

void HttpConnection::HandleHead(Nanos now, size_t head_end, const HttpRouter& router, HttpCounters& counters) {
  Result<HttpRequest> request = ParseRequestHead(std::string_view(in_).substr(0, head_end), limits_.max_body_bytes);
  if (!request.ok()) {
    HttpCounters::Bump(counters.bad_requests);
    LOG_DEBUG << "http: bad request from " << peer_ << ": " << request.status().message();
    RespondError(now, HttpStatusForParseError(request.status()), request.status().message());
    return;
  }
  request_ = std::move(request).value();
  request_.peer = peer_;
  // Body bytes that came with the head; anything past the body is ignored
  // (one request per connection).
  const size_t length = static_cast<size_t>(request_.content_length);
  request_.body = in_.substr(head_end, length);
  if (request_.body.size() < length) {
    std::string().swap(in_);
    state_ = State::kReadingBody;
    events_ = POLLIN;
    return;
  }
  Dispatch(now, router, counters);
}

bool HttpConnection::DoReadBody(Nanos now, const HttpRouter& router, HttpCounters& counters) {
  char buf[4096];
  const size_t length = static_cast<size_t>(request_.content_length);
  while (request_.body.size() < length) {
    size_t n = 0;
    Io io = Receive(buf, std::min(length - request_.body.size(), sizeof(buf)), &n);
    if (io == Io::kWait) return false;
    if (io != Io::kProgress) {  // gone before the whole body: nobody to answer
      state_ = State::kDone;
      return false;
    }
    request_.body.append(buf, n);
  }
  Dispatch(now, router, counters);
  return true;
}

void HttpConnection::Dispatch(Nanos now, const HttpRouter& router, HttpCounters& counters) {
  HttpCounters::Bump(counters.requests);
  HttpRouter::Outcome outcome = router.Dispatch(request_);
  if (outcome.handler_failed) HttpCounters::Bump(counters.handler_errors);
  // No HEAD response carries a body, not even a 404's or a 405's.
  const bool head_only = outcome.head_only || request_.method == "HEAD";
  request_ = HttpRequest();
  Respond(now, outcome.response, head_only);
}

void HttpConnection::RespondError(Nanos now, int status, std::string_view detail) {
  std::string body = std::to_string(status) + " " + std::string(ReasonPhrase(status)) + ": ";
  body += detail;
  body += "\n";
  Respond(now, HttpResponse::Text(status, std::move(body)), false);
}

void HttpConnection::Respond(Nanos now, const HttpResponse& response, bool head_only) {
  out_ = SerializeResponse(response, head_only, HttpDate(std::time(nullptr)));
  out_offset_ = 0;
  std::string().swap(in_);
  state_ = State::kWriting;
  events_ = POLLOUT;
  deadline_ = now + limits_.write_timeout_ns;
}

bool HttpConnection::DoWrite(Nanos now) {
  while (out_offset_ < out_.size()) {
    size_t n = 0;
    Io io = Send(out_.data() + out_offset_, out_.size() - out_offset_, &n);
    if (io == Io::kWait) return false;
    if (io != Io::kProgress) {
      state_ = State::kDone;
      return false;
    }
    out_offset_ += n;
  }
  StartLinger(now);
  return true;
}

void HttpConnection::StartLinger(Nanos now) {
  std::string().swap(out_);
  if (tls_) tls_->Shutdown();  // close_notify: the response is complete
  ::shutdown(fd_.get(), SHUT_WR);
  state_ = State::kLingering;
  events_ = POLLIN;
  deadline_ = std::min(deadline_, now + kLingerNs);
}

bool HttpConnection::DoLinger() {
  // Raw reads, TLS or not: nothing the client sends now is looked at.
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (n > 0) {
      lingered_bytes_ += static_cast<size_t>(n);
      if (lingered_bytes_ <= kMaxLingerBytes) continue;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      events_ = POLLIN;
      return false;
    }
    state_ = State::kDone;  // EOF, error, or enough discarded
    return false;
  }
}

HttpConnection::Io HttpConnection::Receive(char* buf, size_t len, size_t* n) {
  if (tls_) return TlsOutcome(tls_->Read(buf, len, n));
  for (;;) {
    ssize_t rc = ::recv(fd_.get(), buf, len, 0);
    if (rc > 0) {
      *n = static_cast<size_t>(rc);
      return Io::kProgress;
    }
    if (rc == 0) return Io::kEof;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      events_ = POLLIN;
      return Io::kWait;
    }
    return Io::kError;
  }
}

HttpConnection::Io HttpConnection::Send(const char* buf, size_t len, size_t* n) {
  if (tls_) return TlsOutcome(tls_->Write(buf, len, n));
  for (;;) {
    ssize_t rc = ::send(fd_.get(), buf, len, MSG_NOSIGNAL);
    if (rc >= 0) {
      *n = static_cast<size_t>(rc);
      return Io::kProgress;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      events_ = POLLOUT;
      return Io::kWait;
    }
    return Io::kError;
  }
}

HttpConnection::Io HttpConnection::TlsOutcome(TlsSession::Io io) {
  switch (io) {
    case TlsSession::Io::kDone:
      return Io::kProgress;
    case TlsSession::Io::kWantRead:
      events_ = POLLIN;
      return Io::kWait;
    case TlsSession::Io::kWantWrite:
      events_ = POLLOUT;
      return Io::kWait;
    case TlsSession::Io::kEof:
      return Io::kEof;
    case TlsSession::Io::kError:
      break;
  }
  return Io::kError;
}

}  // namespace memkv::http
