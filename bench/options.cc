#include "bench/options.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "base/units.h"

namespace memkv::bench {
namespace {

constexpr uint64_t kMaxValueBytes = 256ULL << 20;  // the protocol's value limit
constexpr uint32_t kMaxConns = 1024;

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool ParseSizes(const std::string& text, BenchOptions* o, std::string* error) {
  o->sizes_bytes.clear();
  for (const std::string& item : SplitComma(text)) {
    Result<uint64_t> size = ParseSize(item);
    if (!size.ok() || *size == 0 || *size > kMaxValueBytes) {
      *error = "--sizes: '" + item + "' is not a size between 1 B and 256 MiB";
      return false;
    }
    o->sizes_bytes.push_back(*size);
  }
  if (o->sizes_bytes.empty()) *error = "--sizes: empty list";
  return !o->sizes_bytes.empty();
}

bool ParseConns(const std::string& text, BenchOptions* o, std::string* error) {
  o->conns.clear();
  for (const std::string& item : SplitComma(text)) {
    uint32_t n = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (ec != std::errc() || ptr != item.data() + item.size() || n == 0 || n > kMaxConns) {
      *error = "--conns: '" + item + "' is not a count between 1 and " + std::to_string(kMaxConns);
      return false;
    }
    o->conns.push_back(n);
  }
  if (o->conns.empty()) *error = "--conns: empty list";
  return !o->conns.empty();
}

bool ParseRepeat(const std::string& text, BenchOptions* o, std::string* error) {
  uint32_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || ptr != text.data() + text.size() || n == 0 || n > 100) {
    *error = "--repeat: '" + text + "' is not a count between 1 and 100";
    return false;
  }
  o->repeat = n;
  return true;
}

bool ParseSeconds(const std::string& text, BenchOptions* o, std::string* error) {
  char* end = nullptr;
  double s = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(s) || s <= 0 || s > 3600) {
    *error = "--seconds: '" + text + "' is not a number of seconds in (0, 3600]";
    return false;
  }
  o->seconds = s;
  return true;
}

bool ParseOps(const std::string& text, BenchOptions* o, std::string* error) {
  o->put = o->get = false;
  for (const std::string& item : SplitComma(text)) {
    if (item == "put") {
      o->put = true;
    } else if (item == "get") {
      o->get = true;
    } else {
      *error = "--ops: '" + item + "' is not put or get";
      return false;
    }
  }
  if (!o->put && !o->get) *error = "--ops: empty list";
  return o->put || o->get;
}

bool ParsePool(const std::string& text, BenchOptions* o, std::string* error) {
  Result<uint64_t> size = ParseSize(text);
  if (!size.ok() || *size < (64ULL << 20)) {
    *error = "--pool: '" + text + "' is not a size of at least 64 MiB";
    return false;
  }
  o->pool_bytes = *size;
  return true;
}

bool IsKnownFlag(std::string_view flag) {
  for (std::string_view known :
       {"--sizes", "--conns", "--seconds", "--repeat", "--ops", "--pool", "--json", "--memkv", "--servers"}) {
    if (flag == known) return true;
  }
  return false;
}

bool ApplyFlag(const std::string& flag, const std::string& value, BenchOptions* o, std::string* error) {
  if (flag == "--sizes") return ParseSizes(value, o, error);
  if (flag == "--conns") return ParseConns(value, o, error);
  if (flag == "--seconds") return ParseSeconds(value, o, error);
  if (flag == "--repeat") return ParseRepeat(value, o, error);
  if (flag == "--ops") return ParseOps(value, o, error);
  if (flag == "--pool") return ParsePool(value, o, error);
  if (flag == "--json") {
    o->json_path = value;
  } else if (flag == "--memkv") {
    o->memkv_path = value;
  } else if (flag == "--servers") {
    o->servers = SplitComma(value);
    if (o->servers.empty()) *error = "--servers: empty list";
    return !o->servers.empty();
  } else {
    *error = "unknown option '" + flag + "'";
    return false;
  }
  return true;
}

}  // namespace

std::optional<BenchOptions> ParseOptions(const std::vector<std::string>& args, bool* help,
                                         std::string* error) {
  BenchOptions o;
  o.sizes_bytes = {4 * kKiB, 64 * kKiB, 256 * kKiB, kMiB, 2 * kMiB, 4 * kMiB, 16 * kMiB};
  o.conns = {1, 4, 16, 64};
  *help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    if (flag == "--help" || flag == "-h") {
      *help = true;
      return o;
    }
    if (flag == "--cold") {
      o.warm_pool = false;
      continue;
    }
    if (flag == "--no-auth-cost") {
      o.auth_cost = false;
      continue;
    }
    if (size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      *error = IsKnownFlag(flag) ? flag + " needs a value" : "unknown option '" + flag + "'";
      return std::nullopt;
    }
    if (!ApplyFlag(flag, value, &o, error)) return std::nullopt;
  }
  return o;
}

}  // namespace memkv::bench
