#include "http/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <memory>

#include "base/clock.h"
#include "base/errno_text.h"
#include "base/unique_fd.h"
#include "base/version.h"
#include "http/tls_context.h"
#include "io/socket.h"

namespace memkv::http {
namespace {

constexpr size_t kReadChunkBytes = 16384;

// Blocks SIGPIPE on this thread for the object's life, as libpq does: OpenSSL
// writes with write(2), which cannot say MSG_NOSIGNAL. A SIGPIPE raised
// meanwhile is consumed unless one was already pending before.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old_);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ~ScopedSigpipeBlock() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      timespec zero{};
      while (sigtimedwait(&pipe, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t old_;
  bool was_pending_ = false;
};

struct CtxDeleter {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, CtxDeleter>;

std::string HostForUrl(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

int64_t MillisLeft(Nanos deadline) {
  Nanos left = deadline - MonotonicNanos();
  return left <= 0 ? 0 : (left + 999'999) / 1'000'000;
}

// One exchange: the socket, maybe a TLS session over it, and the deadline.
// `what` names the step under way, for the timeout message.
class Exchange {
 public:
  Exchange(const HttpGetOptions& options, Nanos deadline)
      : options_(options), url_(HttpUrl(options)), deadline_(deadline) {}

  Status Connect();
  Status Handshake();
  Status SendRequest();
  Result<HttpClientResponse> ReadResponse();

 private:
  // Waits for `events` until the deadline; DeadlineExceeded naming `what`.
  Status Wait(short events, const char* what);
  // Reads some bytes into `buf`: their count, 0 at the end of the stream.
  Result<size_t> ReadSome(char* buf, size_t size);
  Status WriteAll(std::string_view bytes);
  // Runs an OpenSSL call until it is done or fails: its result (> 0), 0 for a
  // clean close, or an error naming `what`.
  Result<int> DriveTls(const std::function<int()>& call, const char* what);
  Status Fail(StatusCode code, const std::string& message) const { return Status(code, url_ + ": " + message); }

  const HttpGetOptions& options_;
  const std::string url_;
  const Nanos deadline_;
  UniqueFd fd_;
  SslCtxPtr ctx_;
  SslPtr ssl_;  // after fd_ and ctx_: freed first
};

Status Exchange::Wait(short events, const char* what) {
  for (;;) {
    int64_t left_ms = MillisLeft(deadline_);
    if (left_ms <= 0) {
      return Fail(StatusCode::kDeadlineExceeded,
                  std::string(what) + " timed out (deadline " + std::to_string(options_.timeout_ms) + " ms)");
    }
    pollfd p{fd_.get(), events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 60'000)));
    if (rc > 0) return Status::Ok();
    if (rc < 0 && errno != EINTR) return Fail(StatusCode::kInternal, std::string("poll: ") + ErrnoText(errno));
  }
}

Status Exchange::Connect() {
  Result<UniqueFd> fd = io::ConnectTcp(options_.host, options_.port, deadline_);
  if (!fd.ok()) {
    if (fd.status().code() == StatusCode::kDeadlineExceeded) {
      return Fail(StatusCode::kDeadlineExceeded,
                  "connect timed out (deadline " + std::to_string(options_.timeout_ms) + " ms)");
    }
    return fd.status().WithContext(url_);
  }
  fd_ = std::move(fd).value();
  return Status::Ok();
}

Result<int> Exchange::DriveTls(const std::function<int()>& call, const char* what) {
  for (;;) {
    ERR_clear_error();
    errno = 0;
    int rc = call();
    if (rc > 0) return rc;
    int err = SSL_get_error(ssl_.get(), rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      MEMKV_RETURN_IF_ERROR(Wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, what));
      continue;
    }
    if (err == SSL_ERROR_ZERO_RETURN) return 0;
    if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
      if (errno == 0) return Fail(StatusCode::kUnavailable, std::string(what) + ": the server closed the connection");
      return Fail(StatusCode::kUnavailable, std::string(what) + ": " + ErrnoText(errno));
    }
    return Fail(StatusCode::kUnavailable, std::string(what) + ": " + DrainOpenSslErrors());
  }
}

Status Exchange::Handshake() {
  ERR_clear_error();
  ctx_.reset(SSL_CTX_new(TLS_client_method()));
  if (!ctx_) return Fail(StatusCode::kInternal, "SSL_CTX_new: " + DrainOpenSslErrors());
  SSL_CTX* ctx = ctx_.get();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
    return Fail(StatusCode::kInternal, "SSL_CTX_set_min_proto_version(TLS1_2): " + DrainOpenSslErrors());
  }
  // The body's length is checked against Content-Length (or the last chunk),
  // so a close without close_notify is an ordinary end of stream here.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
  if (options_.insecure) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  } else {
    if (!options_.ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(ctx, options_.ca_file.c_str(), nullptr) != 1) {
        return InvalidArgument("CA file " + options_.ca_file + ": cannot load the PEM certificates: " +
                               DrainOpenSslErrors());
      }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      return Fail(StatusCode::kInternal, "cannot load the system's trusted certificates: " + DrainOpenSslErrors());
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  }
  ssl_.reset(SSL_new(ctx));
  if (!ssl_ || SSL_set_fd(ssl_.get(), fd_.get()) != 1) {
    return Fail(StatusCode::kInternal, "SSL_new: " + DrainOpenSslErrors());
  }
  SSL* ssl = ssl_.get();
  if (!options_.insecure && SSL_set1_host(ssl, options_.host.c_str()) != 1) {  // IP addresses too (OpenSSL 3)
    return Fail(StatusCode::kInternal, "SSL_set1_host(" + options_.host + "): " + DrainOpenSslErrors());
  }
  // SNI takes host names only, never addresses.
  in6_addr ignored;
  if (::inet_pton(AF_INET, options_.host.c_str(), &ignored) != 1 &&
      ::inet_pton(AF_INET6, options_.host.c_str(), &ignored) != 1) {
    SSL_set_tlsext_host_name(ssl, options_.host.c_str());
  }
  SSL_set_connect_state(ssl);
  Result<int> rc = DriveTls([ssl] { return SSL_connect(ssl); }, "TLS handshake");
  if (!rc.ok()) {
    const long verify = SSL_get_verify_result(ssl);
    if (!options_.insecure && verify != X509_V_OK && rc.status().code() == StatusCode::kUnavailable) {
      return Fail(StatusCode::kUnavailable,
                  std::string("TLS handshake: certificate verify failed: ") + X509_verify_cert_error_string(verify) +
                      (options_.ca_file.empty() ? " (against the system's trusted certificates)"
                                                : " (against " + options_.ca_file + ")"));
    }
    return rc.status();
  }
  if (*rc == 0) return Fail(StatusCode::kUnavailable, "TLS handshake: the server closed the connection");
  return Status::Ok();
}

Status Exchange::WriteAll(std::string_view bytes) {
  if (!ssl_) {
    iovec v{const_cast<char*>(bytes.data()), bytes.size()};
    Status s = io::SendAll(fd_.get(), std::span<iovec>(&v, 1), deadline_);
    if (s.code() == StatusCode::kDeadlineExceeded) {
      return Fail(StatusCode::kDeadlineExceeded,
                  "sending the request timed out (deadline " + std::to_string(options_.timeout_ms) + " ms)");
    }
    return s.ok() ? s : s.WithContext(url_ + ": sending the request");
  }
  SSL* ssl = ssl_.get();
  while (!bytes.empty()) {
    Result<int> n = DriveTls(
        [ssl, bytes] { return SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size())); }, "sending the request");
    if (!n.ok()) return n.status();
    if (*n == 0) return Fail(StatusCode::kUnavailable, "sending the request: the server closed the connection");
    bytes.remove_prefix(static_cast<size_t>(*n));
  }
  return Status::Ok();
}

Status Exchange::SendRequest() {
  std::string host = HostForUrl(options_.host);
  if (options_.port != (options_.https ? 443 : 80)) host += ":" + std::to_string(options_.port);
  std::string request = options_.method + " " + options_.path + " HTTP/1.1\r\nHost: " + host +
                        "\r\nUser-Agent: memkv/" + kMemkvVersion + "\r\nAccept: */*\r\nConnection: close\r\n";
  for (const HttpHeader& h : options_.headers) request += h.name + ": " + h.value + "\r\n";
  if (options_.method != "GET") request += "Content-Length: " + std::to_string(options_.body.size()) + "\r\n";
  request += "\r\n";
  if (options_.method != "GET") request += options_.body;
  return WriteAll(request);
}

Result<size_t> Exchange::ReadSome(char* buf, size_t size) {
  if (ssl_) {
    SSL* ssl = ssl_.get();
    int want = static_cast<int>(std::min<size_t>(size, 1 << 30));
    Result<int> n = DriveTls([ssl, buf, want] { return SSL_read(ssl, buf, want); }, "reading the response");
    if (!n.ok()) return n.status();
    return static_cast<size_t>(*n);
  }
  for (;;) {
    ssize_t n = ::recv(fd_.get(), buf, size, 0);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      MEMKV_RETURN_IF_ERROR(Wait(POLLIN, "reading the response"));
      continue;
    }
    return Fail(StatusCode::kUnavailable, "reading the response: " + ErrnoText(errno));
  }
}

Result<HttpClientResponse> Exchange::ReadResponse() {
  const size_t cap = options_.max_response_bytes;
  std::string in;
  std::optional<HttpResponseHead> head;
  size_t head_end = 0;
  char buf[kReadChunkBytes];
  for (;;) {
    Result<size_t> n = ReadSome(buf, sizeof(buf));
    if (!n.ok()) return n.status();
    const bool eof = *n == 0;
    const size_t from = in.size();
    in.append(buf, *n);
    if (!head) {
      head_end = FindHeadEnd(in, from);
      if (head_end == 0) {
        if (in.size() > cap) return Fail(StatusCode::kTooLarge, "response head over " + std::to_string(cap) + " bytes");
        if (eof) {
          return Fail(StatusCode::kProtocolError, in.empty() ? "the server closed the connection without a response"
                                                             : "the server closed the connection after " +
                                                                   std::to_string(in.size()) +
                                                                   " bytes, before the end of the response head");
        }
        continue;
      }
      Result<HttpResponseHead> parsed = ParseResponseHead(std::string_view(in).substr(0, head_end));
      if (!parsed.ok()) return Fail(StatusCode::kProtocolError, "malformed response: " + parsed.status().message());
      head = std::move(parsed).value();
      if (head->content_length && *head->content_length > cap - std::min(cap, head_end)) {
        return Fail(StatusCode::kTooLarge, "response body of " + std::to_string(*head->content_length) +
                                               " bytes is over the limit of " + std::to_string(cap) + " bytes");
      }
    }
    std::string_view body = std::string_view(in).substr(head_end);
    HttpClientResponse& response = head->response;
    if (head->no_body) return std::move(response);
    if (head->content_length) {
      if (body.size() >= *head->content_length) {
        response.body = std::string(body.substr(0, *head->content_length));
        return std::move(response);
      }
      if (eof) {
        return Fail(StatusCode::kProtocolError, "the server closed the connection after " +
                                                    std::to_string(body.size()) + " of " +
                                                    std::to_string(*head->content_length) + " body bytes");
      }
      continue;  // within the cap: checked against Content-Length above
    }
    if (in.size() > cap) return Fail(StatusCode::kTooLarge, "response over " + std::to_string(cap) + " bytes");
    if (head->chunked) {
      // Only a body that ends in an empty line can be complete: walk it then.
      const bool may_end = body.ends_with("\n\n") || body.ends_with("\r\n\r\n");
      if (eof || (may_end && ChunkedComplete(body))) {
        Result<std::string> decoded = DecodeChunked(body);
        if (!decoded.ok()) return Fail(StatusCode::kProtocolError, "malformed response: " + decoded.status().message());
        response.body = std::move(decoded).value();
        return std::move(response);
      }
    } else if (eof) {  // delimited by the close
      response.body = std::string(body);
      return std::move(response);
    }
  }
}

}  // namespace

std::string HttpUrl(const HttpGetOptions& options) {
  return std::string(options.https ? "https://" : "http://") + HostForUrl(options.host) + ":" +
         std::to_string(options.port) + options.path;
}

Result<HttpClientResponse> HttpGet(const HttpGetOptions& options) {
  const std::string url = HttpUrl(options);
  if (options.host.empty()) return InvalidArgument(url + ": no host given");
  if (options.port == 0) return InvalidArgument(url + ": port 0");
  if (options.timeout_ms <= 0) return InvalidArgument(url + ": timeout_ms must be at least 1");
  if (options.path.empty() || options.path.front() != '/' ||
      options.path.find_first_of(std::string_view(" \r\n\0", 4)) != std::string::npos) {
    return InvalidArgument(url + ": the path must start with '/' and hold no spaces or line breaks");
  }
  if (options.max_response_bytes == 0) return InvalidArgument(url + ": max_response_bytes is 0");
  const bool token = !options.method.empty() && std::all_of(options.method.begin(), options.method.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '-';
  });
  if (!token) return InvalidArgument(url + ": method '" + options.method + "' is not a token");
  for (const HttpHeader& h : options.headers) {
    if (h.name.empty() || h.name.find_first_of(std::string_view(" :\r\n\0", 5)) != std::string::npos ||
        h.value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return InvalidArgument(url + ": header '" + h.name + "' holds a space, colon or line break");
    }
  }
  ScopedSigpipeBlock no_sigpipe;
  Exchange exchange(options, MonotonicNanos() + Nanos(options.timeout_ms) * 1'000'000);
  MEMKV_RETURN_IF_ERROR(exchange.Connect());
  if (options.https) MEMKV_RETURN_IF_ERROR(exchange.Handshake());
  MEMKV_RETURN_IF_ERROR(exchange.SendRequest());
  return exchange.ReadResponse();
}

}  // namespace memkv::http
