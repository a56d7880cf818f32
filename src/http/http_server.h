// HttpServer: the small embedded HTTP/1.1 (optionally HTTPS) server behind
// MemKV's admin endpoint (/v1/health, /v1/ready, /v1/status, /v1/metrics).
//
//   auto server = HttpServer::Create(options);         // binds: port() is known
//   server.value()->Handle("GET", "/v1/health", fn);   // routes, before Start
//   server.value()->Start();                           // serves on its own thread
//   ...
//   server.value()->Stop();                            // or just destroy it
//
// Threads: Start() spawns one thread that owns the listener and every
// connection and multiplexes them with poll(2) over non-blocking sockets
// (TLS included), so the data plane never waits on it and one slow or
// hostile client never holds up another. Handlers run on that thread, one at
// a time: they must be quick (read counters, take a snapshot) and must not
// block; they may throw (answered 500). The data plane shares nothing with
// this thread but what the handlers read.
//
// Protocol (details in http_connection.h, http_message.h, http_router.h):
// one request per connection ("Connection: close" on every response, which
// always carries Content-Type and Content-Length, except 204/304 which carry
// no body); HEAD is served by the GET handler without the body; unknown path
// 404; wrong method 405 with Allow; malformed request or a version other than
// HTTP/1.x 400; head over max_header_bytes 431; a request body over
// max_body_bytes (by default any) 413 (not read); request head not complete within read_timeout_ms of accept 408.
// Every error response closes the connection.
//
// Connections: at most max_connections are served at once. A new one that
// finds them all taken closes the oldest that has no response in progress
// (no complete request yet, or answered and lingering), counted in
// HttpServerStats::shed with one WARN line per 10 s, so clients that open
// the port and send nothing (or trickle half a request) cannot keep a quick
// request such as a health probe out. Only when every slot is writing a
// response is the newcomer answered 503 (further ones beyond twice
// max_connections are closed at accept).
//
// TLS: both tls_cert_path and tls_key_path set = HTTPS (TLS 1.2+, PEM
// files, loaded by Create). A failed handshake closes that connection only.
//
// Stop() may be called from any thread, any number of times; it closes every
// connection at once (responses in flight are cut) and joins the thread.
// A handler may call Stop() (it then returns without joining), but must not
// destroy the server. Handle() and Start() belong to the owner's thread.
#ifndef MEMKV_HTTP_HTTP_SERVER_H_
#define MEMKV_HTTP_HTTP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/unique_fd.h"
#include "http/http_message.h"
#include "http/http_router.h"
#include "http/tls.h"
#include "http/http_stats.h"
#include "memkv/status.h"

namespace memkv::http {

class HttpConnection;

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // numeric address or name to bind
  uint16_t port = 0;               // 0 = any free port
  // Both set: HTTPS. One alone is InvalidArgument naming the missing one.
  std::string tls_cert_path;       // PEM certificate chain
  std::string tls_key_path;        // PEM private key
  // Loads them (CreateOpenSslServer in http/tls_context.h, memkv_http_tls).
  // Unset while the paths are set: InvalidArgument, HTTPS is not built in.
  TlsServerFactory tls;
  size_t max_header_bytes = 8192;  // request line + headers; 64 .. 1 MiB
  // A request body (Content-Length only) up to this many bytes is read and
  // handed to the handler in HttpRequest::body; a longer one is answered 413
  // unread. 0: no body at all. At most 1 MiB.
  size_t max_body_bytes = 0;
  uint32_t read_timeout_ms = 5000;   // accept -> complete request head (and TLS handshake)
  uint32_t write_timeout_ms = 5000;  // response written -> taken by the client
  int max_connections = 64;          // open at once; 1 .. 4096
  // Where the server thread's log lines go (a library client's own target);
  // null: the process-wide logging. Must outlive the server.
  const LogTarget* log_target = nullptr;
};

class HttpServer {
 public:
  // Validates the options, loads the TLS files and binds the listener.
  // InvalidArgument for bad options or TLS files; Unavailable naming
  // host:port and the errno text when the bind fails.
  static Result<std::unique_ptr<HttpServer>> Create(const HttpServerOptions& options);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers a handler for exact `path` and `method` (see HttpRouter::Add).
  // FailedPrecondition once Start() was called.
  Status Handle(const std::string& method, const std::string& path, HttpHandler handler);

  // Starts serving on the server thread. FailedPrecondition when called
  // twice or after Stop().
  Status Start();
  void Stop();

  uint16_t port() const { return port_; }
  std::string_view scheme() const { return tls_ ? "https" : "http"; }
  HttpServerStats stats() const { return counters_.Snapshot(); }

 private:
  HttpServer(const HttpServerOptions& options, UniqueFd listener, UniqueFd wake, uint16_t port,
             std::unique_ptr<TlsServer> tls);

  void Run();
  void AcceptSome(Nanos now);
  void Admit(UniqueFd fd, std::string peer, Nanos now);
  // Closes the connection accepted first among those without a response in
  // progress (HttpConnection::Sheddable), to admit `for_peer`; none: nothing.
  void ShedOldest(Nanos now, const std::string& for_peer);
  void Reap();

  const HttpServerOptions options_;
  UniqueFd listener_;
  UniqueFd wake_;  // eventfd: Stop() wakes the poll loop with it
  const uint16_t port_;
  std::unique_ptr<TlsServer> tls_;  // null: plain HTTP
  HttpRouter router_;                // read-only once started
  HttpCounters counters_;
  std::atomic<bool> started_{false};
  std::atomic<bool> stopping_{false};
  Mutex mu_;
  std::thread thread_ MEMKV_GUARDED_BY(mu_);  // Start's spawn, Stop's join

  // Owned by the server thread.
  std::vector<std::unique_ptr<HttpConnection>> connections_;
  int serving_ = 0;            // connections in Mode::kServe
  int rejecting_ = 0;          // connections answering 503
  Nanos accept_paused_until_ = 0;  // after EMFILE and the like
  LogRateLimiter accept_warnings_;  // one "pausing accepts" line per 10 s
  LogRateLimiter shed_warnings_;    // one "closing the oldest" line per 10 s
};

}  // namespace memkv::http

#endif  // MEMKV_HTTP_HTTP_SERVER_H_
