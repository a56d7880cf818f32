// The TLS seam of the HTTP server: what a connection needs from a TLS
// library, without naming one. memkv_http itself has no TLS library;
// OpenSSL's implementation lives in memkv_http_tls (tls_context.h), and a
// program that serves HTTPS passes its factory in HttpServerOptions. So a
// program whose HTTP server is plain (libmemkv's client /metrics endpoint)
// does not link libssl at all.
//
// Thread-safety: a TlsServer's NewSession may be called from any thread;
// each TlsSession belongs to one connection and is used by one thread.
#ifndef MEMKV_HTTP_TLS_H_
#define MEMKV_HTTP_TLS_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "memkv/status.h"

namespace memkv::http {

// The server side of one TLS session over a connected non-blocking socket
// it does not own (the socket must outlive it).
class TlsSession {
 public:
  enum class Io { kDone, kWantRead, kWantWrite, kEof, kError };

  virtual ~TlsSession() = default;
  // The handshake. kError: *why says why; *plain_http is true when the peer
  // sent plain HTTP to this TLS port (it can then be answered in plain HTTP).
  virtual Io Accept(std::string* why, bool* plain_http) = 0;
  // kDone with *n bytes moved, or why not.
  virtual Io Read(char* buf, size_t len, size_t* n) = 0;
  virtual Io Write(const char* buf, size_t len, size_t* n) = 0;
  // Best effort close_notify: tells the client the response is complete.
  virtual void Shutdown() = 0;
};

// A server certificate and key, loaded: makes sessions.
class TlsServer {
 public:
  virtual ~TlsServer() = default;
  virtual Result<std::unique_ptr<TlsSession>> NewSession(int fd) const = 0;
};

// Loads the PEM certificate chain and private key. Errors name the option
// and the file ("tls_key_path /etc/memkv/k.pem: cannot load ...").
using TlsServerFactory =
    std::function<Result<std::unique_ptr<TlsServer>>(const std::string& cert_path, const std::string& key_path)>;

}  // namespace memkv::http

#endif  // MEMKV_HTTP_TLS_H_
