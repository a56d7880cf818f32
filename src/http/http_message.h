// HTTP/1.1 messages of the admin endpoint: the request-head parser and the
// response writer. Pure functions over bytes, no I/O, so they can be fuzzed
// and unit-tested alone; the connection (http_connection.h) feeds them.
//
// What the parser accepts (RFC 9112, minus what a GET-only admin server never
// needs):
//   - the request line "METHOD SP request-target SP HTTP/1.<digit>", single
//     spaces; the target in origin form ("/v1/status?x=1"), absolute form
//     ("http://host/v1/status", reduced to its path) or "*";
//   - header fields "name: value"; no whitespace before the colon, no
//     obsolete line folding, no control characters in values;
//   - lines end in CRLF or a bare LF (as netcat users type them);
//   - a request body only with Content-Length and at most max_body_bytes
//     (0, the default: none at all); a longer one, or any
//     Transfer-Encoding, is refused (TooLarge -> 413) before a byte of it is
//     read.
// The path is matched as sent: it is not percent-decoded or normalized.
// A missing Host header is tolerated (simple probes omit it).
//
// Thread-safety: values and free functions; no shared state.
#ifndef MEMKV_HTTP_HTTP_MESSAGE_H_
#define MEMKV_HTTP_HTTP_MESSAGE_H_

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/status.h"

namespace memkv::http {

struct HttpHeader {
  std::string name;
  std::string value;
};

struct HttpRequest {
  std::string method;        // as sent, case-sensitive ("GET")
  std::string path;          // target up to '?', not percent-decoded
  std::string query;         // after '?', without it; empty when none
  int version_minor = 1;     // HTTP/1.<minor>
  std::vector<HttpHeader> headers;  // names lowercased, values trimmed, in order
  std::string peer;          // "127.0.0.1:53122"; filled in by the server
  uint64_t content_length = 0;  // the announced body length (0: none)
  std::string body;          // filled in by the connection once it arrived whole

  // First value of the header `name` (any case), or nullopt.
  std::optional<std::string_view> Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;  // 200..599; anything else is answered as 500
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Extra fields (e.g. Allow, Cache-Control). The server writes Content-Type,
  // Content-Length, Connection, Date and Server itself; a handler setting one
  // of those, or a name/value with CR, LF or NUL, gets a 500 instead.
  std::vector<HttpHeader> headers;

  // A text/plain response.
  static HttpResponse Text(int status, std::string body);
};

// A handler answers one request. It runs on the server's thread (see
// http_server.h), must be quick and may throw: a throw is answered with 500.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// The offset just past the blank line that ends a request head ("\r\n\r\n" or
// "\n\n"), or 0 while incomplete. `from` is where new bytes begin: the scan
// restarts a few bytes before it, so feeding a byte at a time stays linear.
size_t FindHeadEnd(std::string_view data, size_t from = 0);

// Parses a complete head (as delimited by FindHeadEnd). ProtocolError for
// anything malformed, TooLarge for a request that announces a body over
// `max_body_bytes` (0: any body) or uses Transfer-Encoding; the message says
// what was wrong, for the response body.
Result<HttpRequest> ParseRequestHead(std::string_view head, size_t max_body_bytes = 0);

// The status to answer a ParseRequestHead error with: 413 or 400.
int HttpStatusForParseError(const Status& status);

// Ok when a handler's response may be written as is; otherwise why not.
Status ValidateResponse(const HttpResponse& response);

// "Not Found" for 404; a generic phrase for codes without a common one.
std::string_view ReasonPhrase(int status);

// An IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") for the Date header.
std::string HttpDate(std::time_t unix_seconds);

// The bytes on the wire: status line, Content-Type, Content-Length (not for
// 204/304, which carry no body), Connection: close, Date, Server, the extra
// headers, then the body unless `head_only` (a HEAD request: same headers,
// Content-Length of the body that is left out). `response` must pass
// ValidateResponse.
std::string SerializeResponse(const HttpResponse& response, bool head_only, std::string_view date);

// ASCII case folding, as header names and tokens compare.
char AsciiToLower(char c);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace memkv::http

#endif  // MEMKV_HTTP_HTTP_MESSAGE_H_
