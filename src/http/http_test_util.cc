#include "http/http_test_util.h"

#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "base/errno_text.h"
#include "io/socket.h"

namespace memkv::http::testing {
namespace {

// Waits for `events` on fd until the deadline.
Status WaitFd(int fd, short events, Nanos deadline) {
  for (;;) {
    Nanos left = deadline - MonotonicNanos();
    if (left <= 0) return DeadlineExceeded("test client: deadline passed waiting on the socket");
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<Nanos>((left + 999'999) / 1'000'000, 60'000)));
    if (rc > 0) return Status::Ok();
    if (rc < 0 && errno != EINTR) return Internal("poll: " + ErrnoText(errno));
  }
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

Nanos DeadlineIn(int timeout_ms) { return MonotonicNanos() + Nanos(timeout_ms) * 1'000'000; }

ParsedResponse ParseResponse(const std::string& raw) {
  ParsedResponse r;
  r.raw = raw;
  size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || head_end == std::string::npos || raw.size() < 12) return r;
  r.status = std::atoi(raw.substr(9, 3).c_str());
  size_t pos = raw.find("\r\n") + 2;
  while (pos < head_end) {
    size_t eol = raw.find("\r\n", pos);
    std::string line = raw.substr(pos, eol - pos);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      r.headers[Lower(line.substr(0, colon))] = value;
    }
    pos = eol + 2;
  }
  r.body = raw.substr(head_end + 4);
  return r;
}

std::string Request(std::string_view method, std::string_view path) {
  return std::string(method) + " " + std::string(path) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
}

Result<UniqueFd> Connect(uint16_t port) { return io::ConnectTcp("127.0.0.1", port, DeadlineIn(10000)); }

Status SendString(int fd, std::string_view bytes, Nanos deadline) {
  iovec v{const_cast<char*>(bytes.data()), bytes.size()};
  return io::SendAll(fd, std::span<iovec>(&v, 1), deadline);
}

Result<std::string> ReadToClose(int fd, Nanos deadline) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return out;
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) return out;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return Unavailable("recv: " + ErrnoText(errno));
    MEMKV_RETURN_IF_ERROR(WaitFd(fd, POLLIN, deadline));
  }
}

Result<ParsedResponse> PlainExchange(uint16_t port, std::string_view request, int timeout_ms) {
  Nanos deadline = DeadlineIn(timeout_ms);
  MEMKV_ASSIGN_OR_RETURN(UniqueFd fd, Connect(port));
  MEMKV_RETURN_IF_ERROR(SendString(fd.get(), request, deadline));
  MEMKV_ASSIGN_OR_RETURN(std::string raw, ReadToClose(fd.get(), deadline));
  return ParseResponse(raw);
}

Result<TlsClient> TlsClient::Connect(uint16_t port, const TlsClientOptions& options, Nanos deadline) {
  TlsClient client;
  MEMKV_ASSIGN_OR_RETURN(client.fd_, io::ConnectTcp("127.0.0.1", port, deadline));
  ERR_clear_error();
  client.ctx_.reset(SSL_CTX_new(TLS_client_method()));
  if (!client.ctx_) return Internal("SSL_CTX_new: " + DrainOpenSslErrors());
  if (options.max_version != 0) {
    // Offer only old versions: drop the library's own floor to be able to.
    SSL_CTX_set_security_level(client.ctx_.get(), 0);
    SSL_CTX_set_min_proto_version(client.ctx_.get(), TLS1_VERSION);
    SSL_CTX_set_max_proto_version(client.ctx_.get(), options.max_version);
    SSL_CTX_set_cipher_list(client.ctx_.get(), "DEFAULT:@SECLEVEL=0");
  }
  if (!options.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(client.ctx_.get(), options.ca_file.c_str(), nullptr) != 1) {
      return Internal("load CA " + options.ca_file + ": " + DrainOpenSslErrors());
    }
    SSL_CTX_set_verify(client.ctx_.get(), SSL_VERIFY_PEER, nullptr);
  }
  client.ssl_.reset(SSL_new(client.ctx_.get()));
  if (!client.ssl_ || SSL_set_fd(client.ssl_.get(), client.fd_.get()) != 1) {
    return Internal("SSL_new: " + DrainOpenSslErrors());
  }
  SSL* ssl = client.ssl_.get();
  Result<int> rc = client.Drive([ssl] { return SSL_connect(ssl); }, deadline);
  if (!rc.ok()) return rc.status().WithContext("TLS handshake");
  if (*rc <= 0) return Unavailable("TLS handshake: server closed the connection");
  return client;
}

Status TlsClient::Send(std::string_view bytes, Nanos deadline) {
  while (!bytes.empty()) {
    SSL* ssl = ssl_.get();
    Result<int> n = Drive([ssl, bytes] { return SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size())); },
                          deadline);
    if (!n.ok()) return n.status();
    if (*n <= 0) return Unavailable("TLS write: connection closed");
    bytes.remove_prefix(static_cast<size_t>(*n));
  }
  return Status::Ok();
}

Result<std::string> TlsClient::ReadToClose(Nanos deadline) {
  std::string out;
  char buf[4096];
  for (;;) {
    SSL* ssl = ssl_.get();
    Result<int> n = Drive([ssl, &buf] { return SSL_read(ssl, buf, sizeof(buf)); }, deadline);
    if (!n.ok()) {
      if (n.status().code() == StatusCode::kDeadlineExceeded || out.empty()) return n.status();
      return out;  // an EOF without close_notify after the response
    }
    if (*n == 0) return out;
    out.append(buf, static_cast<size_t>(*n));
  }
}

Result<int> TlsClient::Drive(const std::function<int()>& call, Nanos deadline) {
  for (;;) {
    ERR_clear_error();
    int rc = call();
    if (rc > 0) return rc;
    int err = SSL_get_error(ssl_.get(), rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      MEMKV_RETURN_IF_ERROR(WaitFd(fd_.get(), err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline));
      continue;
    }
    if (err == SSL_ERROR_ZERO_RETURN) return 0;
    if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) return Unavailable("connection closed or reset");
    return Unavailable("SSL error " + std::to_string(err) + ": " + DrainOpenSslErrors());
  }
}

Result<ParsedResponse> TlsExchange(uint16_t port, const std::string& ca_file, std::string_view request,
                                   int timeout_ms) {
  Nanos deadline = DeadlineIn(timeout_ms);
  TlsClientOptions options;
  options.ca_file = ca_file;
  MEMKV_ASSIGN_OR_RETURN(TlsClient client, TlsClient::Connect(port, options, deadline));
  MEMKV_RETURN_IF_ERROR(client.Send(request, deadline));
  MEMKV_ASSIGN_OR_RETURN(std::string raw, client.ReadToClose(deadline));
  return ParseResponse(raw);
}

bool WaitUntil(const std::function<bool()>& condition, int timeout_ms) {
  Nanos deadline = DeadlineIn(timeout_ms);
  while (!condition()) {
    if (MonotonicNanos() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

std::string RunShell(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  int rc = ::pclose(pipe);
  *status = (rc != -1 && WIFEXITED(rc)) ? WEXITSTATUS(rc) : -1;
  return out;
}

bool HaveCommand(const std::string& name) {
  int status = 0;
  RunShell("command -v " + name + " >/dev/null 2>&1", &status);
  return status == 0;
}

}  // namespace memkv::http::testing
