// Test clients for the admin HTTP server: plain TCP and TLS peers that send
// exactly the bytes they are given and read until the server closes, every
// wait bounded by a deadline (poll(2), never sleep). Plus the small fixtures
// the tests share: a temporary directory and shell commands.
//
// Test-only; each object is used by one thread.
#ifndef MEMKV_HTTP_HTTP_TEST_UTIL_H_
#define MEMKV_HTTP_HTTP_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/temp_dir.h"
#include "base/unique_fd.h"
#include "http/tls_context.h"
#include "memkv/status.h"

namespace memkv::http::testing {

Nanos DeadlineIn(int timeout_ms);

// A response as read up to the server's close.
struct ParsedResponse {
  int status = 0;  // 0: the bytes were not an HTTP/1.1 response
  std::map<std::string, std::string> headers;  // lowercased names
  std::string body;
  std::string raw;
  bool HasHeader(const std::string& name) const { return headers.count(name) > 0; }
};
ParsedResponse ParseResponse(const std::string& raw);

// "GET <path> HTTP/1.1" with a Host header and nothing else.
std::string Request(std::string_view method, std::string_view path);

// Connects to 127.0.0.1:port; a non-blocking socket.
Result<UniqueFd> Connect(uint16_t port);
Status SendString(int fd, std::string_view bytes, Nanos deadline);
// Reads until EOF or a reset (what arrived before it is returned);
// DeadlineExceeded while the server keeps the connection open.
Result<std::string> ReadToClose(int fd, Nanos deadline);
// Connect, send `request`, read to close.
Result<ParsedResponse> PlainExchange(uint16_t port, std::string_view request, int timeout_ms = 10000);

struct TlsClientOptions {
  std::string ca_file;  // verify the server against it; empty: no verification
  int max_version = 0;  // e.g. TLS1_1_VERSION to offer only old versions; 0: default
};

// A TLS client over a non-blocking socket.
class TlsClient {
 public:
  // TCP connect plus TLS handshake. Unavailable with OpenSSL's reason when the
  // handshake fails.
  static Result<TlsClient> Connect(uint16_t port, const TlsClientOptions& options, Nanos deadline);

  Status Send(std::string_view bytes, Nanos deadline);
  // Reads until close_notify, EOF or a reset.
  Result<std::string> ReadToClose(Nanos deadline);

 private:
  struct CtxDeleter {
    void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
  };
  TlsClient() = default;
  // Repeats `call` while OpenSSL asks for I/O; its result (> 0), 0 on a clean
  // close, or an error.
  Result<int> Drive(const std::function<int()>& call, Nanos deadline);

  UniqueFd fd_;
  std::unique_ptr<SSL_CTX, CtxDeleter> ctx_;
  SslPtr ssl_;  // after fd_ and ctx_: freed first
};

Result<ParsedResponse> TlsExchange(uint16_t port, const std::string& ca_file, std::string_view request,
                                   int timeout_ms = 10000);

// Polls `condition` every millisecond until it holds or `timeout_ms` passes.
bool WaitUntil(const std::function<bool()>& condition, int timeout_ms = 10000);

// Runs `command` with sh -c; its output (stdout), and the exit status in *status.
std::string RunShell(const std::string& command, int* status);
bool HaveCommand(const std::string& name);

}  // namespace memkv::http::testing

#endif  // MEMKV_HTTP_HTTP_TEST_UTIL_H_
