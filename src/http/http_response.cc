// The pure half of http_client.h: the response-head parser and the chunked
// body decoder. No I/O, so they can be unit-tested and fuzzed alone.
#include <algorithm>
#include <cstring>

#include "base/parse_number.h"
#include "http/http_client.h"

namespace memkv::http {
namespace {

// Content-Length values past this many digits could overflow uint64_t.
constexpr size_t kMaxLengthDigits = 18;
// A chunk size line is hex digits, maybe extensions; 16 digits fill 64 bits.
constexpr size_t kMaxChunkSizeDigits = 15;

bool IsTchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Visible ASCII, SP, HT and obs-text (bytes >= 0x80).
bool IsFieldValue(std::string_view v) {
  return std::none_of(v.begin(), v.end(), [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return (c < 0x20 && c != '\t') || c == 0x7f;
  });
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits the next line off `rest`; nullopt when no LF is left. The CR
// before the LF, if any, is dropped.
std::optional<std::string_view> NextLine(std::string_view* rest) {
  size_t lf = rest->find('\n');
  if (lf == std::string_view::npos) return std::nullopt;
  std::string_view line = rest->substr(0, lf);
  rest->remove_prefix(lf + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// "HTTP/1.1 200 OK" (the reason may be empty, and so may the space before it).
Status ParseStatusLine(std::string_view line, HttpClientResponse* response) {
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[7] < '0' || line[7] > '9' || line[8] != ' ') {
    return ProtocolError("not an HTTP/1.x status line: '" + std::string(line.substr(0, 40)) + "'");
  }
  std::string_view code = line.substr(9, 3);
  if (!IsDigits(code) || code[0] == '0' || (line.size() > 12 && line[12] != ' ')) {
    return ProtocolError("invalid status code in '" + std::string(line.substr(0, 40)) + "'");
  }
  response->status = (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
  if (response->status > 599) return ProtocolError("status code " + std::string(code) + " out of range");
  std::string_view reason = line.size() > 13 ? line.substr(13) : std::string_view();
  if (!IsFieldValue(reason)) return ProtocolError("control character in the reason phrase");
  response->reason = std::string(reason);
  return Status::Ok();
}

Status ParseHeaderLine(std::string_view line, HttpClientResponse* response) {
  if (line.front() == ' ' || line.front() == '\t') return ProtocolError("obsolete header line folding");
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return ProtocolError("header line without ':'");
  std::string_view name = line.substr(0, colon);
  std::string_view value = TrimOws(line.substr(colon + 1));
  if (name.empty() || !std::all_of(name.begin(), name.end(), IsTchar)) return ProtocolError("invalid header name");
  if (!IsFieldValue(value)) return ProtocolError("control character in header value");
  HttpHeader header;
  header.name.resize(name.size());
  std::transform(name.begin(), name.end(), header.name.begin(), AsciiToLower);
  header.value = std::string(value);
  response->headers.push_back(std::move(header));
  return Status::Ok();
}

// Content-Length and Transfer-Encoding, as RFC 9112 §6.3 reads them.
Status ParseFraming(HttpResponseHead* head) {
  const int status = head->response.status;
  head->no_body = status < 200 || status == 204 || status == 304;
  for (const HttpHeader& h : head->response.headers) {
    if (h.name == "transfer-encoding") {
      if (!EqualsIgnoreCase(h.value, "chunked")) {
        return ProtocolError("unsupported Transfer-Encoding '" + h.value + "' (only chunked)");
      }
      head->chunked = true;
    } else if (h.name == "content-length") {
      if (!IsDigits(h.value) || h.value.size() > kMaxLengthDigits) return ProtocolError("invalid Content-Length");
      uint64_t length = ParseDecimal(h.value).value_or(0);  // digits, at most kMaxLengthDigits
      if (head->content_length && *head->content_length != length) {
        return ProtocolError("conflicting Content-Length headers");
      }
      head->content_length = length;
    }
  }
  // Chunked wins over a Content-Length sent along with it (§6.3 item 3).
  if (head->chunked) head->content_length.reset();
  return Status::Ok();
}

// Parses a chunk-size line ("1a;ext=1"): the size, or nullopt if malformed.
std::optional<uint64_t> ChunkSize(std::string_view line) {
  size_t end = line.find_first_of("; \t");
  std::string_view hex = line.substr(0, end);
  if (hex.empty() || hex.size() > kMaxChunkSizeDigits) return std::nullopt;
  uint64_t size = 0;
  for (char c : hex) {
    int digit = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (digit < 0) return std::nullopt;
    size = size * 16 + static_cast<uint64_t>(digit);
  }
  return size;
}

// Walks a chunked body. Ok with *complete true once the last chunk and the
// trailers are in; Ok with *complete false while more bytes are needed;
// ProtocolError when malformed. `out` (may be null) receives the data.
Status WalkChunked(std::string_view body, std::string* out, bool* complete) {
  *complete = false;
  std::string_view rest = body;
  for (;;) {
    std::optional<std::string_view> line = NextLine(&rest);
    if (!line) return Status::Ok();
    std::optional<uint64_t> size = ChunkSize(*line);
    if (!size) return ProtocolError("invalid chunk size line '" + std::string(line->substr(0, 40)) + "'");
    if (*size == 0) break;
    if (rest.size() < *size) return Status::Ok();
    if (out != nullptr) out->append(rest.substr(0, *size));
    rest.remove_prefix(*size);
    std::optional<std::string_view> end = NextLine(&rest);
    if (!end) return Status::Ok();
    if (!end->empty()) return ProtocolError("chunk data longer than its size");
  }
  // Trailer fields up to an empty line; their content is ignored.
  for (;;) {
    std::optional<std::string_view> trailer = NextLine(&rest);
    if (!trailer) return Status::Ok();
    if (trailer->empty()) break;
  }
  *complete = true;
  return Status::Ok();
}

}  // namespace

std::optional<std::string_view> HttpClientResponse::Header(std::string_view name) const {
  for (const HttpHeader& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) return std::string_view(h.value);
  }
  return std::nullopt;
}

Result<HttpResponseHead> ParseResponseHead(std::string_view head) {
  HttpResponseHead parsed;
  std::string_view rest = head;
  std::optional<std::string_view> line = NextLine(&rest);
  if (!line) return ProtocolError("incomplete response head");
  MEMKV_RETURN_IF_ERROR(ParseStatusLine(*line, &parsed.response));
  for (;;) {
    line = NextLine(&rest);
    if (!line) return ProtocolError("response head does not end in an empty line");
    if (line->empty()) break;
    MEMKV_RETURN_IF_ERROR(ParseHeaderLine(*line, &parsed.response));
  }
  if (!rest.empty()) return ProtocolError("bytes after the end of the response head");
  MEMKV_RETURN_IF_ERROR(ParseFraming(&parsed));
  return parsed;
}

Result<std::string> DecodeChunked(std::string_view body) {
  std::string out;
  bool complete = false;
  MEMKV_RETURN_IF_ERROR(WalkChunked(body, &out, &complete));
  if (!complete) return ProtocolError("chunked body ends before its last chunk");
  return out;
}

bool ChunkedComplete(std::string_view body) {
  bool complete = false;
  return WalkChunked(body, nullptr, &complete).ok() && complete;
}

}  // namespace memkv::http
