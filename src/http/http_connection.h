// HttpConnection: one accepted admin connection, stepped by the server thread.
//
// A non-blocking state machine that never waits by itself: the server polls
// the socket for events() and calls Step() when it is ready or when
// deadline() has passed.
//
//   [TLS handshake] -> read the request head -> [read the body]
//                   -> write the response
//                   -> lingering close -> done
//
// One request per connection; every response says "Connection: close".
//
// Deadlines and limits, the defences against slow or hostile clients:
//   - the TLS handshake and the whole request head must arrive within
//     read_timeout of accept. The deadline is absolute, so trickling a byte at
//     a time does not extend it; a late head is answered 408, a late
//     handshake just closed;
//   - at most max_header_bytes of head are buffered; more is answered 431;
//   - a body (Content-Length, at most max_body_bytes, else 413 unread) must
//     arrive within the same read deadline as the head;
//   - the response must be taken within write_timeout;
//   - then the server shuts down its sending side and discards what the
//     client still sends, for at most kLingerNs and kMaxLingerBytes. Closing
//     with unread input would send a reset that can destroy the response
//     before the client reads it (e.g. after a 413 for an unread body).
// A connection in Mode::kRejectBusy (over max_connections) skips reading and
// answers 503 (after the handshake, for TLS).
//
// Plain HTTP sent to a TLS port is answered with a plain-text 400 naming
// HTTPS, instead of a silent close.
//
// Owned by HttpServer's connection list; used only by its thread.
#ifndef MEMKV_HTTP_HTTP_CONNECTION_H_
#define MEMKV_HTTP_HTTP_CONNECTION_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/unique_fd.h"
#include "http/http_message.h"
#include "http/http_router.h"
#include "http/http_stats.h"
#include "http/tls.h"

namespace memkv::http {

struct HttpConnectionLimits {
  size_t max_header_bytes = 8192;
  size_t max_body_bytes = 0;  // 0: requests with a body are answered 413
  Nanos read_timeout_ns = 5'000'000'000;
  Nanos write_timeout_ns = 5'000'000'000;
};

class HttpConnection {
 public:
  enum class Mode { kServe, kRejectBusy };

  static constexpr Nanos kLingerNs = 1'000'000'000;
  static constexpr size_t kMaxLingerBytes = 64 * 1024;

  // `fd` is a connected non-blocking socket; `tls` is its TLS session, or
  // null for plain HTTP. `now` starts the read deadline.
  HttpConnection(UniqueFd fd, std::unique_ptr<TlsSession> tls, std::string peer, Mode mode, const HttpConnectionLimits& limits,
                 Nanos now);
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Makes all the progress the socket allows without blocking, then acts on
  // an expired deadline. Never throws.
  void Step(Nanos now, const HttpRouter& router, HttpCounters& counters);

  bool done() const { return state_ == State::kDone; }
  int fd() const { return fd_.get(); }
  short events() const { return events_; }  // POLLIN or POLLOUT
  Nanos deadline() const { return deadline_; }
  Mode mode() const { return mode_; }
  Nanos accepted_at() const { return accepted_at_; }
  const std::string& peer() const { return peer_; }
  // No response is being written: the connection still waits for (the rest
  // of) its request, or was answered and lingers. The server may close such
  // a connection to make room for a new one (HttpServer::Admit).
  bool Sheddable() const { return state_ != State::kWriting && state_ != State::kDone; }
  // Closes the connection now, unanswered; done() is true afterwards.
  void Shed() { state_ = State::kDone; }

 private:
  enum class State { kHandshake, kReading, kReadingBody, kWriting, kLingering, kDone };
  enum class Io { kProgress, kWait, kEof, kError };

  void Advance(Nanos now, const HttpRouter& router, HttpCounters& counters);
  // Each returns true when the state changed and Advance should go on.
  bool DoHandshake(Nanos now, HttpCounters& counters);
  bool DoRead(Nanos now, const HttpRouter& router, HttpCounters& counters);
  bool DoReadBody(Nanos now, const HttpRouter& router, HttpCounters& counters);
  bool DoWrite(Nanos now);
  bool DoLinger();
  void Expire(Nanos now, HttpCounters& counters);

  void HandleHead(Nanos now, size_t head_end, const HttpRouter& router, HttpCounters& counters);
  void Dispatch(Nanos now, const HttpRouter& router, HttpCounters& counters);
  void Respond(Nanos now, const HttpResponse& response, bool head_only);
  void RespondError(Nanos now, int status, std::string_view detail);
  void StartLinger(Nanos now);

  Io Receive(char* buf, size_t len, size_t* n);
  Io Send(const char* buf, size_t len, size_t* n);
  Io TlsOutcome(TlsSession::Io io);  // and sets events_ for a wait

  UniqueFd fd_;
  std::unique_ptr<TlsSession> tls_;  // declared after fd_, so freed before the socket closes
  std::string peer_;
  Mode mode_;
  HttpConnectionLimits limits_;
  State state_;
  short events_;
  Nanos deadline_;
  Nanos accepted_at_;
  std::string in_;   // request head bytes so far
  HttpRequest request_;  // parsed head while its body is read
  std::string out_;  // the serialized response
  size_t out_offset_ = 0;
  size_t lingered_bytes_ = 0;
};

}  // namespace memkv::http

#endif  // MEMKV_HTTP_HTTP_CONNECTION_H_
