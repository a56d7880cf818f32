#include "http/tls_context.h"

#include <openssl/err.h>
#include <openssl/x509.h>

#include <algorithm>
#include <climits>

#include "base/errno_text.h"

namespace memkv::http {

std::string DrainOpenSslErrors() {
  std::string out;
  const char* data = nullptr;
  int flags = 0;
  while (unsigned long e = ERR_get_error_all(nullptr, nullptr, nullptr, &data, &flags)) {
    // "system lib" entries only point back at the system error already listed.
    if (ERR_GET_REASON(e) == ERR_R_SYS_LIB) continue;
    if (!out.empty()) out += "; ";
    if (ERR_SYSTEM_ERROR(e)) {
      out += ErrnoText(static_cast<int>(ERR_GET_REASON(e)));
    } else {
      const char* lib = ERR_lib_error_string(e);
      const char* reason = ERR_reason_error_string(e);
      if (lib != nullptr) {
        out += lib;
        out += ": ";
      }
      out += reason != nullptr ? reason : "error " + std::to_string(ERR_GET_REASON(e));
    }
    if ((flags & ERR_TXT_STRING) != 0 && data != nullptr && *data != '\0') {
      out += " (";
      out += data;
      out += ")";
    }
  }
  return out.empty() ? "unknown error" : out;
}

Result<TlsContext> TlsContext::Create(const std::string& cert_path, const std::string& key_path) {
  ERR_clear_error();
  SSL_CTX* raw = SSL_CTX_new(TLS_server_method());
  if (raw == nullptr) return Internal("SSL_CTX_new: " + DrainOpenSslErrors());
  TlsContext tls(raw);
  if (SSL_CTX_set_min_proto_version(raw, TLS1_2_VERSION) != 1) {
    return Internal("SSL_CTX_set_min_proto_version(TLS1_2): " + DrainOpenSslErrors());
  }
  SSL_CTX_set_options(raw, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Non-blocking sockets: a write may finish in parts and be retried from a
  // moved buffer; idle connections give their buffers back.
  SSL_CTX_set_mode(raw, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_use_certificate_chain_file(raw, cert_path.c_str()) != 1) {
    return InvalidArgument("tls_cert_path " + cert_path + ": cannot load the PEM certificate: " +
                           DrainOpenSslErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(raw, key_path.c_str(), SSL_FILETYPE_PEM) != 1) {
    unsigned long first = ERR_peek_error();
    if (ERR_GET_LIB(first) == ERR_LIB_X509 && ERR_GET_REASON(first) == X509_R_KEY_VALUES_MISMATCH) {
      return InvalidArgument("tls_key_path " + key_path + " does not match the certificate in tls_cert_path " +
                             cert_path + ": " + DrainOpenSslErrors());
    }
    return InvalidArgument("tls_key_path " + key_path + ": cannot load the PEM private key: " +
                           DrainOpenSslErrors());
  }
  if (SSL_CTX_check_private_key(raw) != 1) {
    return InvalidArgument("tls_key_path " + key_path + " does not match the certificate in tls_cert_path " +
                           cert_path + ": " + DrainOpenSslErrors());
  }
  return tls;
}

Result<SslPtr> TlsContext::NewSsl(int fd) const {
  ERR_clear_error();
  SslPtr ssl(SSL_new(ctx_.get()));
  if (!ssl) return Unavailable("SSL_new: " + DrainOpenSslErrors());
  if (SSL_set_fd(ssl.get(), fd) != 1) return Unavailable("SSL_set_fd: " + DrainOpenSslErrors());
  SSL_set_accept_state(ssl.get());
  return ssl;
}

namespace {

class OpenSslSession final : public TlsSession {
 public:
  explicit OpenSslSession(SslPtr ssl) : ssl_(std::move(ssl)) {}

  Io Accept(std::string* why, bool* plain_http) override {
    ERR_clear_error();
    int rc = SSL_accept(ssl_.get());
    if (rc == 1) return Io::kDone;
    int err = SSL_get_error(ssl_.get(), rc);
    if (err == SSL_ERROR_WANT_READ) return Io::kWantRead;
    if (err == SSL_ERROR_WANT_WRITE) return Io::kWantWrite;
    unsigned long first = ERR_peek_error();
    *plain_http = ERR_GET_LIB(first) == ERR_LIB_SSL &&
                  (ERR_GET_REASON(first) == SSL_R_HTTP_REQUEST || ERR_GET_REASON(first) == SSL_R_HTTPS_PROXY_REQUEST);
    *why = err == SSL_ERROR_SYSCALL ? std::string("connection closed or reset") : DrainOpenSslErrors();
    ERR_clear_error();
    return Io::kError;
  }

  Io Read(char* buf, size_t len, size_t* n) override {
    ERR_clear_error();
    return Outcome(SSL_read(ssl_.get(), buf, static_cast<int>(std::min<size_t>(len, INT_MAX))), n);
  }

  Io Write(const char* buf, size_t len, size_t* n) override {
    ERR_clear_error();
    return Outcome(SSL_write(ssl_.get(), buf, static_cast<int>(std::min<size_t>(len, INT_MAX))), n);
  }

  void Shutdown() override {
    ERR_clear_error();
    SSL_shutdown(ssl_.get());
    ERR_clear_error();
  }

 private:
  Io Outcome(int rc, size_t* n) {
    if (rc > 0) {
      *n = static_cast<size_t>(rc);
      return Io::kDone;
    }
    int err = SSL_get_error(ssl_.get(), rc);
    ERR_clear_error();
    switch (err) {
      case SSL_ERROR_WANT_READ: return Io::kWantRead;
      case SSL_ERROR_WANT_WRITE: return Io::kWantWrite;
      case SSL_ERROR_ZERO_RETURN: return Io::kEof;
      default: return Io::kError;
    }
  }

  SslPtr ssl_;
};

}  // namespace

Result<std::unique_ptr<TlsSession>> TlsContext::NewSession(int fd) const {
  MEMKV_ASSIGN_OR_RETURN(SslPtr ssl, NewSsl(fd));
  return std::unique_ptr<TlsSession>(new OpenSslSession(std::move(ssl)));
}

Result<std::unique_ptr<TlsServer>> CreateOpenSslServer(const std::string& cert_path, const std::string& key_path) {
  MEMKV_ASSIGN_OR_RETURN(TlsContext context, TlsContext::Create(cert_path, key_path));
  return std::unique_ptr<TlsServer>(new TlsContext(std::move(context)));
}

}  // namespace memkv::http
