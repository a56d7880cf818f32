#include "kvstore/uri.h"

#include <algorithm>
#include <cctype>
#include <iterator>

namespace memkv::kvstore {
namespace {

constexpr std::string_view kScheme = "memkv://";
constexpr std::string_view kForm = "expected memkv://host:port[,host:port...]/namespace[?field=value&...]";
// Characters the key form of a namespace keeps as they are (besides ASCII
// letters, digits and '/' between segments).
constexpr std::string_view kNamespacePunctuation = "-._~:@+=";

Status Bad(std::string_view uri, const std::string& what) {
  return InvalidArgument("URI '" + std::string(uri) + "': " + what + "; " + std::string(kForm));
}

// ASCII only, whatever the process's locale: two processes must derive the
// same keys from the same namespace.
bool IsNamespaceChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         kNamespacePunctuation.find(c) != std::string_view::npos;
}

// "host:port" or "[v6]:port" with a port in 1..65535. The host itself is
// checked by the client when the handle opens (it names the entry too).
std::string ServerProblem(std::string_view entry) {
  if (entry.empty()) return "an empty server entry (two commas, or a comma at an end)";
  const std::string quoted = "server '" + std::string(entry) + "'";
  if (entry.find('@') != std::string_view::npos) return quoted + " has user information, which is not allowed";
  const size_t colon = entry.rfind(':');
  if (colon == std::string_view::npos) return quoted + " has no port; write host:port";
  std::string_view host = entry.substr(0, colon);
  std::string_view port = entry.substr(colon + 1);
  if (host.empty()) return quoted + " has no host";
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) return quoted + ": an IPv6 host is written [address]";
  } else if (host.find(':') != std::string_view::npos) {
    return quoted + ": an IPv6 host needs brackets, [address]:port";
  }
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) {
        return c >= '0' && c <= '9';
      })) {
    return quoted + ": the port must be a decimal number in 1..65535";
  }
  const int value = std::stoi(std::string(port));
  if (value < 1 || value > 65535) return quoted + ": the port must be a decimal number in 1..65535";
  return "";
}

bool IsFieldNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-';
}

// Where the query's '?' is in `path` (the text after the servers' '/'): the
// first '?' followed by a field name and '='; npos when there is none.
size_t QueryStart(std::string_view path) {
  for (size_t q = path.find('?'); q != std::string_view::npos; q = path.find('?', q + 1)) {
    size_t end = q + 1;
    while (end < path.size() && IsFieldNameChar(path[end])) ++end;
    if (end > q + 1 && end < path.size() && path[end] == '=') return q;
  }
  return std::string_view::npos;
}

std::string AllowedFields() {
  std::string out;
  for (std::string_view f : kIdentityFields) out.append(out.empty() ? "" : ", ").append(f);
  return out + ", " + std::string(kExtraPrefix) + "NAME";
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX -> the byte; '+' stays a plus sign (RFC 3986, not HTML forms).
// An error text, or "" with `out` set.
std::string PercentDecode(std::string_view text, std::string* out) {
  out->clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out->push_back(text[i]);
      continue;
    }
    const int hi = i + 1 < text.size() ? HexValue(text[i + 1]) : -1;
    const int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
    if (hi < 0 || lo < 0) return "a '%' not followed by two hex digits (write a '%' as %25)";
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return "";
}

// The query's fields (the text after its '?'), or an error text.
std::string ParseQuery(std::string_view query, std::vector<std::pair<std::string, std::string>>* fields) {
  const std::string allowed = "; allowed fields: " + AllowedFields();
  if (query.find('#') != std::string_view::npos) return "the query holds a '#' (write it as %23)";
  size_t start = 0;
  while (true) {
    const size_t amp = query.find('&', start);
    std::string_view item = query.substr(start, amp == std::string_view::npos ? amp : amp - start);
    if (item.empty()) return "an empty query field (two '&' together, or one at an end)" + allowed;
    const size_t eq = item.find('=');
    const std::string name(item.substr(0, eq));
    const bool known = std::find(std::begin(kIdentityFields), std::end(kIdentityFields), name) !=
                       std::end(kIdentityFields);
    const bool extra = name.size() > kExtraPrefix.size() && name.starts_with(kExtraPrefix) &&
                       std::all_of(name.begin() + kExtraPrefix.size(), name.end(), IsFieldNameChar);
    if (!known && !extra) return "unknown query field '" + name + "'" + allowed;
    if (eq == std::string_view::npos || eq + 1 == item.size()) {
      return "query field '" + name + "' has no value; write " + name + "=value";
    }
    for (const auto& [seen, value] : *fields) {
      if (seen == name) return "query field '" + name + "' is given twice; allowed: each field once";
    }
    std::string value;
    if (std::string problem = PercentDecode(item.substr(eq + 1), &value); !problem.empty()) {
      return "query field '" + name + "': " + problem;
    }
    fields->emplace_back(name, std::move(value));
    if (amp == std::string_view::npos) return "";
    start = amp + 1;
  }
}

// FNV-1a, 64 bits: stable across builds and platforms, which a key needs.
uint64_t NameHash(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::string NamespaceKeyForm(std::string_view name_space) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(name_space.size());
  for (size_t i = 0; i < name_space.size(); ++i) {
    const char c = name_space[i];
    const bool starts_empty_segment = c == '/' && (i == 0 || name_space[i - 1] == '/');
    if ((c == '/' && !starts_empty_segment) || IsNamespaceChar(c)) {
      out.push_back(c);
    } else {
      const auto byte = static_cast<unsigned char>(c);
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xf]);
    }
  }
  if (out.size() <= kMaxNamespaceBytes) return out;
  // "~" and 16 hex digits of the whole namespace's hash after a prefix that
  // splits no %XX escape.
  size_t keep = kMaxNamespaceBytes - 17;
  if (out[keep - 1] == '%') {
    keep -= 1;
  } else if (out[keep - 2] == '%') {
    keep -= 2;
  }
  out.resize(keep);
  static constexpr char kLowerHex[] = "0123456789abcdef";
  const uint64_t h = NameHash(name_space);
  out.push_back('~');
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kLowerHex[(h >> shift) & 0xf]);
  return out;
}

Result<StoreUri> ParseStoreUri(std::string_view uri) {
  if (uri.size() < kScheme.size() ||
      !std::equal(kScheme.begin(), kScheme.end(), uri.begin(),
                  [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); })) {
    return Bad(uri, "the scheme must be memkv://");
  }
  std::string_view rest = uri.substr(kScheme.size());
  const size_t slash = rest.find('/');
  // After the servers' '/' every byte is the namespace's ('?' and '#' too: a
  // model name may hold them) up to the query (QueryStart); before it there
  // is no query or fragment.
  if (size_t at = rest.substr(0, slash).find_first_of("?#"); at != std::string_view::npos) {
    return Bad(uri, std::string(rest[at] == '?' ? "a query ('?') is not allowed before the namespace"
                                                : "a fragment ('#') is not allowed"));
  }
  if (slash == std::string_view::npos) return Bad(uri, "there is no namespace after the servers");
  std::string_view authority = rest.substr(0, slash);
  std::string_view ns = rest.substr(slash + 1);
  std::string_view query;
  if (const size_t q = QueryStart(ns); q != std::string_view::npos) {
    query = ns.substr(q + 1);
    ns = ns.substr(0, q);
  }
  while (!ns.empty() && ns.back() == '/') ns.remove_suffix(1);  // "memkv://h:1/ns/" is "ns"

  StoreUri out;
  if (authority.empty()) return Bad(uri, "there are no servers");
  size_t start = 0;
  while (true) {
    const size_t comma = authority.find(',', start);
    std::string_view entry = authority.substr(start, comma == std::string_view::npos ? comma : comma - start);
    if (std::string problem = ServerProblem(entry); !problem.empty()) return Bad(uri, problem);
    out.servers.emplace_back(entry);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (ns.empty()) return Bad(uri, "the namespace after the servers is empty");
  out.name_space = NamespaceKeyForm(ns);
  if (!query.empty()) {
    if (std::string problem = ParseQuery(query, &out.identity); !problem.empty()) return Bad(uri, problem);
  }
  return out;
}

std::string ChunkKey(std::string_view name_space, std::span<const uint8_t> hash) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key;
  key.reserve(name_space.size() + 3 + 2 * hash.size());
  key.append(name_space).append("/c/");
  for (uint8_t b : hash) {
    key.push_back(kHex[b >> 4]);
    key.push_back(kHex[b & 0xf]);
  }
  return key;
}

std::string ManifestKey(std::string_view name_space, std::string_view name) {
  std::string key;
  key.reserve(name_space.size() + 3 + name.size());
  key.append(name_space).append("/m/").append(name);
  return key;
}

}  // namespace memkv::kvstore
