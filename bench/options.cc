#include "bench/options.h"

#include <cmath>
#include <cstdlib>
#include <string_view>

#include "base/units.h"
#include "bench/flags.h"

namespace memkv::bench {
namespace {

constexpr uint64_t kMaxValueBytes = 256ULL << 20;  // the protocol's value limit
constexpr uint32_t kMaxConns = 1024;

bool ParseSizes(const std::string& text, BenchOptions* o, std::string* error) {
  o->sizes_bytes.clear();
  for (const std::string& item : SplitComma(text)) {
    Result<uint64_t> size = ParseValueSize(item);
    if (!size.ok() || *size == 0 || *size > kMaxValueBytes) {
      *error = "--sizes: '" + item + "' is not a size between 1 B and 256 MiB (64KiB, 2MiB+1, ...)";
      return false;
    }
    o->sizes_bytes.push_back(*size);
  }
  if (o->sizes_bytes.empty()) *error = "--sizes: empty list";
  return !o->sizes_bytes.empty();
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
  if (flag == "--conns") return ParseCountList(flag, value, kMaxConns, "count", &o->conns, error);
  if (flag == "--seconds") return ParseSeconds(value, o, error);
  if (flag == "--repeat") return ParseCount(flag, value, 100, "count", &o->repeat, error);
  if (flag == "--ops") return ParseOpList(value, &o->put, &o->get, error);
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
  auto toggle = [&o](const std::string& flag) {
    if (flag == "--cold") o.warm_pool = false;
    else if (flag == "--no-auth-cost") o.auth_cost = false;
    else if (flag == "--no-prefault") o.prefault = false;
    else return false;
    return true;
  };
  auto apply = [&o](const std::string& flag, const std::string& value, std::string* err) {
    return ApplyFlag(flag, value, &o, err);
  };
  if (!WalkFlags(args, toggle, IsKnownFlag, apply, help, error)) return std::nullopt;
  return o;
}

}  // namespace memkv::bench
