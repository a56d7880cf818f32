// HttpGet: a small blocking HTTP/1.1 (optionally HTTPS) GET client, for
// reading another server's admin endpoint (`memkv admin status`).
//
//   HttpGetOptions o;
//   o.host = "10.0.0.7"; o.port = 9901; o.path = "/v1/status";
//   o.https = true; o.ca_file = "/etc/memkv/admin-ca.pem";
//   Result<HttpClientResponse> r = HttpGet(o);
//
// One request per connection: the request says "Connection: close", and the
// body ends at Content-Length, at the last chunk of a chunked body, or at the
// server's close. Every wait (connect, TLS handshake, write, read) is a
// poll(2) on a non-blocking socket bounded by one deadline, `timeout_ms` after
// the call began, so a silent or slow peer cannot hold the caller longer.
//
// TLS: TLS 1.2 or later. By default the server's certificate chain is
// verified against the system's trust store and must name `host` (a DNS
// name, or for an IP address an iPAddress subjectAltName: OpenSSL does not
// match IP addresses against the CN); `ca_file` replaces the system store
// with that PEM file; `insecure` verifies nothing (the traffic is encrypted,
// but to whoever answered).
//
// Errors name the URL and what failed: Unavailable for a refused or reset
// connection and a failed TLS handshake (with OpenSSL's reason, or the
// certificate check that failed), DeadlineExceeded naming the step that was
// under way, ProtocolError for a malformed response, TooLarge beyond
// `max_response_bytes`, InvalidArgument for bad options or an unreadable
// `ca_file`. A non-2xx status is not an error: it is in the response.
//
// Threads: HttpGet may be called from any number of threads at once; it
// shares nothing between calls. While it runs it blocks SIGPIPE on the
// calling thread (OpenSSL writes with write(2)) and restores the mask after,
// discarding only a SIGPIPE it raised itself.
#ifndef MEMKV_HTTP_HTTP_CLIENT_H_
#define MEMKV_HTTP_HTTP_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/http_message.h"
#include "memkv/status.h"

namespace memkv::http {

inline constexpr size_t kDefaultMaxResponseBytes = size_t{4} << 20;  // 4 MiB

struct HttpGetOptions {
  std::string host;         // name or numeric address (IPv6 without brackets)
  uint16_t port = 0;
  std::string path = "/";   // origin form, as sent: "/v1/status"
  int timeout_ms = 5000;    // deadline over connect, TLS handshake, request and response; >= 1
  bool https = false;
  std::string ca_file;      // https: trust this PEM file instead of the system store
  bool insecure = false;    // https: no certificate verification at all
  size_t max_response_bytes = kDefaultMaxResponseBytes;  // head and body together
  // Another method (a token: "POST") with a body (sent with Content-Length,
  // also when empty) and extra header fields (no CR, LF or NUL), e.g. the
  // signed `memkv admin reload`. GET sends no body.
  std::string method = "GET";
  std::vector<HttpHeader> headers;
  std::string body;
};

struct HttpClientResponse {
  int status = 0;                   // 100..599
  std::string reason;               // the reason phrase, possibly empty
  std::vector<HttpHeader> headers;  // names lowercased, values trimmed, in order
  std::string body;                 // de-chunked

  // First value of the header `name` (any case), or nullopt.
  std::optional<std::string_view> Header(std::string_view name) const;
};

// GETs (or options.method) `options.path` from host:port; see the file
// comment for errors.
Result<HttpClientResponse> HttpGet(const HttpGetOptions& options);

// "http://host:port/path" ("https://[::1]:9901/v1/status"), for messages.
std::string HttpUrl(const HttpGetOptions& options);

// ---- the pure parts, for tests and fuzzing ----

// A parsed response head (status line and header fields) and how its body
// is delimited.
struct HttpResponseHead {
  HttpClientResponse response;          // body empty
  std::optional<uint64_t> content_length;
  bool chunked = false;                 // Transfer-Encoding: chunked
  bool no_body = false;                 // 1xx, 204, 304: no body whatever the headers say
};

// Parses a complete head as delimited by FindHeadEnd (http_message.h):
// "HTTP/1.<digit> SP 3DIGIT [SP reason]" then header fields; lines end in
// CRLF or LF. ProtocolError naming what is wrong.
Result<HttpResponseHead> ParseResponseHead(std::string_view head);

// Decodes a whole chunked body (chunk extensions and trailers ignored).
// ProtocolError when it is malformed or ends before the last chunk.
Result<std::string> DecodeChunked(std::string_view body);

// True when a chunked body is complete: its last chunk and trailers are in
// `body` (false also when it is malformed; DecodeChunked then says why).
bool ChunkedComplete(std::string_view body);

}  // namespace memkv::http

#endif  // MEMKV_HTTP_HTTP_CLIENT_H_
