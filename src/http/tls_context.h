// TlsContext: the server side of TLS for the admin endpoint, over OpenSSL
// (memkv_http_tls; the HTTP server reaches it through tls.h's seam). Owns one
// SSL_CTX holding the PEM certificate chain and private key; TLS 1.2 is the
// minimum, renegotiation is off, writes may be partial (the connection is
// non-blocking).
//
// Create() loads and cross-checks both files up front, so a bad file fails the
// server's Create and not the first client. Its errors name the option, the
// file and OpenSSL's reason ("tls_key_path /etc/memkv/k.pem: cannot load the
// private key: No such file or directory").
//
// Thread-safety: after Create, NewSession may be called from any thread
// (OpenSSL locks the SSL_CTX internally). Each SSL belongs to one connection
// and is used by one thread.
#ifndef MEMKV_HTTP_TLS_CONTEXT_H_
#define MEMKV_HTTP_TLS_CONTEXT_H_

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "http/tls.h"
#include "memkv/status.h"

namespace memkv::http {

struct SslDeleter {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};
// One TLS session. Frees the SSL only; the socket has its own owner, which
// must outlive it (SSL_set_fd does not take the descriptor).
using SslPtr = std::unique_ptr<SSL, SslDeleter>;

// Every error on this thread's OpenSSL queue as "lib: reason; lib: reason"
// ("unknown error" when empty); empties the queue.
std::string DrainOpenSslErrors();

class TlsContext final : public TlsServer {
 public:
  static Result<TlsContext> Create(const std::string& cert_path, const std::string& key_path);

  // A server-side session over `fd`, ready for SSL_accept. Unavailable (with
  // OpenSSL's reason) when OpenSSL cannot allocate one.
  Result<SslPtr> NewSsl(int fd) const;
  Result<std::unique_ptr<TlsSession>> NewSession(int fd) const override;

 private:
  struct CtxDeleter {
    void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
  };
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}

  std::unique_ptr<SSL_CTX, CtxDeleter> ctx_;
};

// The factory HttpServerOptions::tls takes for HTTPS over OpenSSL.
Result<std::unique_ptr<TlsServer>> CreateOpenSslServer(const std::string& cert_path, const std::string& key_path);

}  // namespace memkv::http

#endif  // MEMKV_HTTP_TLS_CONTEXT_H_
