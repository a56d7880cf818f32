#include "kvstore/uri.h"

#include <algorithm>
#include <cctype>

namespace memkv::kvstore {
namespace {

constexpr std::string_view kScheme = "memkv://";
constexpr std::string_view kForm = "expected memkv://host:port[,host:port...]/namespace";
// Characters a namespace segment may hold (besides letters and digits).
constexpr std::string_view kNamespacePunctuation = "-._~:@+=";

Status Bad(std::string_view uri, const std::string& what) {
  return InvalidArgument("URI '" + std::string(uri) + "': " + what + "; " + std::string(kForm));
}

bool IsNamespaceChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || kNamespacePunctuation.find(c) != std::string_view::npos;
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

std::string NamespaceProblem(std::string_view ns) {
  if (ns.empty()) return "the namespace after the servers is empty";
  if (ns.size() > kMaxNamespaceBytes) {
    return "the namespace is " + std::to_string(ns.size()) + " bytes, more than the " +
           std::to_string(kMaxNamespaceBytes) + " allowed";
  }
  if (ns.find("//") != std::string_view::npos || ns.front() == '/') {
    return "the namespace '" + std::string(ns) + "' has an empty segment ('//')";
  }
  for (char c : ns) {
    if (c != '/' && !IsNamespaceChar(c)) {
      const auto byte = static_cast<unsigned char>(c);
      std::string shown = std::isprint(byte) != 0 ? std::string("'") + c + "'" : "byte " + std::to_string(byte);
      return "the namespace '" + std::string(ns) + "' holds " + shown +
             "; allowed: letters, digits, '/' between segments and " + std::string(kNamespacePunctuation);
    }
  }
  return "";
}

}  // namespace

Result<StoreUri> ParseStoreUri(std::string_view uri) {
  if (uri.size() < kScheme.size() ||
      !std::equal(kScheme.begin(), kScheme.end(), uri.begin(),
                  [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); })) {
    return Bad(uri, "the scheme must be memkv://");
  }
  std::string_view rest = uri.substr(kScheme.size());
  if (size_t at = rest.find_first_of("?#"); at != std::string_view::npos) {
    return Bad(uri, std::string(rest[at] == '?' ? "a query ('?')" : "a fragment ('#')") + " is not allowed");
  }
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return Bad(uri, "there is no namespace after the servers");
  std::string_view authority = rest.substr(0, slash);
  std::string_view ns = rest.substr(slash + 1);
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
  if (std::string problem = NamespaceProblem(ns); !problem.empty()) return Bad(uri, problem);
  out.name_space = std::string(ns);
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
