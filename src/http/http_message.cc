#include "http/http_message.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

namespace memkv::http {
namespace {

constexpr size_t kMaxMethodBytes = 32;
// Content-Length values past this many digits could overflow; none is valid here anyway.
constexpr size_t kMaxContentLengthDigits = 18;

bool IsTchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTchar);
}

// A field value may hold visible ASCII, SP, HT and obs-text (bytes >= 0x80).
bool IsFieldValue(std::string_view v) {
  for (char ch : v) {
    auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Visible ASCII only: no spaces, controls or 8-bit bytes in a target.
bool IsTargetChars(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return c > 0x20 && c < 0x7f;
  });
}

// Splits the next line off `rest` (LF-terminated, an optional CR before it).
std::string_view NextLine(std::string_view* rest) {
  size_t lf = rest->find('\n');
  std::string_view line = rest->substr(0, lf);
  rest->remove_prefix(lf == std::string_view::npos ? rest->size() : lf + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

Status ParseTarget(std::string_view target, HttpRequest* request) {
  if (target.empty() || !IsTargetChars(target)) return ProtocolError("request target has invalid characters");
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() >= scheme.size() && EqualsIgnoreCase(target.substr(0, scheme.size()), scheme)) {
      target.remove_prefix(scheme.size());
      size_t slash = target.find_first_of("/?");
      target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
      if (target.front() == '?') return ProtocolError("absolute-form target without a path");
      break;
    }
  }
  if (target != "*" && target.front() != '/') return ProtocolError("request target must start with '/'");
  size_t q = target.find('?');
  request->path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) request->query = std::string(target.substr(q + 1));
  return Status::Ok();
}

Status ParseRequestLine(std::string_view line, HttpRequest* request) {
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return ProtocolError("request line is not 'METHOD TARGET HTTP/1.x'");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method) || method.size() > kMaxMethodBytes) return ProtocolError("invalid method");
  if (version.size() != 8 || version.substr(0, 7) != "HTTP/1." || version[7] < '0' || version[7] > '9') {
    return ProtocolError("unsupported protocol version (this server speaks HTTP/1.x)");
  }
  request->method = std::string(method);
  request->version_minor = version[7] - '0';
  return ParseTarget(target, request);
}

Status ParseHeaderLine(std::string_view line, HttpRequest* request) {
  if (line.front() == ' ' || line.front() == '\t') return ProtocolError("obsolete header line folding");
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return ProtocolError("header line without ':'");
  std::string_view name = line.substr(0, colon);
  std::string_view value = TrimOws(line.substr(colon + 1));
  if (!IsToken(name)) return ProtocolError("invalid header name");
  if (!IsFieldValue(value)) return ProtocolError("control character in header value");
  HttpHeader header;
  header.name.resize(name.size());
  std::transform(name.begin(), name.end(), header.name.begin(), AsciiToLower);
  header.value = std::string(value);
  request->headers.push_back(std::move(header));
  return Status::Ok();
}

// Reads Content-Length into request->content_length; refuses a body over
// `max_body_bytes` (0: no body at all) and any Transfer-Encoding, before a
// byte of the body is read.
Status CheckBody(HttpRequest* request, size_t max_body_bytes) {
  std::optional<std::string_view> length;
  for (const HttpHeader& h : request->headers) {
    if (h.name == "transfer-encoding") {
      return TooLarge(max_body_bytes == 0 ? std::string("request bodies are not accepted")
                                          : "Transfer-Encoding is not accepted; send the body with Content-Length");
    }
    if (h.name != "content-length") continue;
    if (h.value.empty() || h.value.size() > kMaxContentLengthDigits ||
        !std::all_of(h.value.begin(), h.value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return ProtocolError("invalid Content-Length");
    }
    if (length && *length != h.value) return ProtocolError("conflicting Content-Length headers");
    length = h.value;
  }
  if (!length) return Status::Ok();
  uint64_t n = 0;
  for (char c : *length) n = n * 10 + static_cast<uint64_t>(c - '0');
  if (n == 0) return Status::Ok();
  if (max_body_bytes == 0) return TooLarge("request bodies are not accepted");
  if (n > max_body_bytes) {
    return TooLarge("a request body of " + std::to_string(n) + " bytes is over the limit of " +
                    std::to_string(max_body_bytes) + " bytes");
  }
  request->content_length = n;
  return Status::Ok();
}

bool IsReservedResponseHeader(std::string_view name) {
  for (std::string_view reserved :
       {"content-type", "content-length", "connection", "transfer-encoding", "date", "server"}) {
    if (EqualsIgnoreCase(name, reserved)) return true;
  }
  return false;
}

bool HasLineBreakOrNul(std::string_view s) { return s.find_first_of(std::string_view("\r\n\0", 3)) != s.npos; }

}  // namespace

std::optional<std::string_view> HttpRequest::Header(std::string_view name) const {
  for (const HttpHeader& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) return std::string_view(h.value);
  }
  return std::nullopt;
}

HttpResponse HttpResponse::Text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

size_t FindHeadEnd(std::string_view data, size_t from) {
  // A terminator may straddle the previous and the new bytes.
  size_t i = from > 3 ? from - 3 : 0;
  for (; i < data.size(); ++i) {
    if (data[i] != '\n') continue;
    if (i + 1 < data.size() && data[i + 1] == '\n') return i + 2;
    if (i + 2 < data.size() && data[i + 1] == '\r' && data[i + 2] == '\n') return i + 3;
  }
  return 0;
}

Result<HttpRequest> ParseRequestHead(std::string_view head, size_t max_body_bytes) {
  HttpRequest request;
  std::string_view rest = head;
  MEMKV_RETURN_IF_ERROR(ParseRequestLine(NextLine(&rest), &request));
  while (!rest.empty()) {
    std::string_view line = NextLine(&rest);
    if (line.empty()) break;  // the blank line that ends the head
    MEMKV_RETURN_IF_ERROR(ParseHeaderLine(line, &request));
  }
  MEMKV_RETURN_IF_ERROR(CheckBody(&request, max_body_bytes));
  return request;
}

int HttpStatusForParseError(const Status& status) {
  return status.code() == StatusCode::kTooLarge ? 413 : 400;
}

Status ValidateResponse(const HttpResponse& response) {
  if (response.status < 200 || response.status > 599) {
    return InvalidArgument("status " + std::to_string(response.status) + " outside 200..599");
  }
  if (HasLineBreakOrNul(response.content_type)) return InvalidArgument("content_type holds CR, LF or NUL");
  for (const HttpHeader& h : response.headers) {
    if (!IsToken(h.name)) return InvalidArgument("invalid header name '" + h.name + "'");
    if (IsReservedResponseHeader(h.name)) return InvalidArgument("header " + h.name + " is written by the server");
    if (HasLineBreakOrNul(h.value)) return InvalidArgument("header " + h.name + " value holds CR, LF or NUL");
  }
  return Status::Ok();
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: break;
  }
  if (status >= 200 && status < 300) return "OK";
  if (status >= 400 && status < 500) return "Client Error";
  if (status >= 500 && status < 600) return "Server Error";
  return "Status";
}

std::string HttpDate(std::time_t unix_seconds) {
  static constexpr std::array<const char*, 7> kDays = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr std::array<const char*, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::tm tm{};
  if (gmtime_r(&unix_seconds, &tm) == nullptr) return "Thu, 01 Jan 1970 00:00:00 GMT";
  char buf[40];
  // Formatted by hand: strftime's names follow the locale.
  std::snprintf(buf, sizeof(buf), "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday % 7], tm.tm_mday,
                kMonths[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::string SerializeResponse(const HttpResponse& response, bool head_only, std::string_view date) {
  const bool no_body = response.status == 204 || response.status == 304;
  std::string out;
  out.reserve(192 + response.body.size());
  out += "HTTP/1.1 ";
  out += std::to_string(response.status);
  out += ' ';
  out += ReasonPhrase(response.status);
  out += "\r\nContent-Type: ";
  out += response.content_type.empty() ? std::string_view("application/octet-stream")
                                       : std::string_view(response.content_type);
  if (!no_body) {
    out += "\r\nContent-Length: ";
    out += std::to_string(response.body.size());
  }
  out += "\r\nConnection: close\r\nDate: ";
  out += date;
  out += "\r\nServer: memkv\r\n";
  for (const HttpHeader& h : response.headers) {
    out += h.name;
    out += ": ";
    out += h.value;
    out += "\r\n";
  }
  out += "\r\n";
  if (!head_only && !no_body) out += response.body;
  return out;
}

char AsciiToLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiToLower(a[i]) != AsciiToLower(b[i])) return false;
  }
  return true;
}

}  // namespace memkv::http
