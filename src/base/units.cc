#include "base/units.h"

#include <cctype>
#include <cstdio>

namespace memkv {

namespace {

// Wide enough for the integer part times any unit, and for up to
// kMaxFractionDigits of fraction times any unit, so every size is computed
// exactly (no floating point: "0.1 KB" is 100 bytes, not 100.000000001).
__extension__ typedef unsigned __int128 Wide;

constexpr size_t kMaxFractionDigits = 24;

constexpr const char* kAllowedUnits =
    "use a number of bytes with an optional unit: B; KiB, MiB, GiB, TiB (also Ki/K, Mi/M, Gi/G, Ti/T), "
    "powers of 1024; KB, MB, GB, TB, powers of 1000; any case, e.g. '2 MiB', '2Mi', '1.5G', '500MB'";

struct SizeUnit {
  std::string_view name;  // lowercase
  uint64_t bytes;
};

// A bare K/M/G/T is binary, as it always was here; only the B-suffixed
// two-letter forms are decimal.
constexpr SizeUnit kSizeUnits[] = {
    {"", 1},          {"b", 1},
    {"k", kKiB},      {"ki", kKiB},    {"kib", kKiB},
    {"m", kMiB},      {"mi", kMiB},    {"mib", kMiB},
    {"g", kGiB},      {"gi", kGiB},    {"gib", kGiB},
    {"t", kTiB},      {"ti", kTiB},    {"tib", kTiB},
    {"kb", 1000ULL},  {"mb", 1000ULL * 1000},  {"gb", 1000ULL * 1000 * 1000},
    {"tb", 1000ULL * 1000 * 1000 * 1000},
};

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  auto refuse = [&](const std::string& why) {
    return InvalidArgument(Quoted(text) + " is not a size (" + why + "); " + kAllowedUnits);
  };
  std::string_view rest = text;
  while (!rest.empty() && IsSpace(rest.front())) rest.remove_prefix(1);
  while (!rest.empty() && IsSpace(rest.back())) rest.remove_suffix(1);
  if (rest.empty()) return refuse("it is empty");

  size_t i = 0;
  while (i < rest.size() && IsDigit(rest[i])) ++i;
  const std::string_view whole = rest.substr(0, i);
  std::string_view fraction;
  if (i < rest.size() && rest[i] == '.') {
    const size_t start = ++i;
    while (i < rest.size() && IsDigit(rest[i])) ++i;
    fraction = rest.substr(start, i - start);
  }
  if (whole.empty() && fraction.empty()) return refuse("it does not start with a number");
  while (i < rest.size() && IsSpace(rest[i])) ++i;
  const std::string_view unit_text = rest.substr(i);

  std::string unit(unit_text);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const SizeUnit* found = nullptr;
  for (const SizeUnit& u : kSizeUnits) {
    if (u.name == unit) found = &u;
  }
  if (found == nullptr) return refuse("unknown unit " + Quoted(unit_text));
  const Wide multiplier = found->bytes;

  auto too_large = [&] {
    return InvalidArgument(Quoted(text) + " is too large (the limit is 2^64-1 bytes, just under 16 EiB)");
  };
  Wide bytes = 0;
  for (char c : whole) {
    bytes = bytes * 10 + static_cast<unsigned>(c - '0');
    if (bytes > UINT64_MAX) return too_large();
  }
  bytes *= multiplier;
  if (bytes > UINT64_MAX) return too_large();

  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  if (!fraction.empty()) {
    if (fraction.size() > kMaxFractionDigits) return refuse("too many digits after the point");
    Wide numerator = 0;
    Wide denominator = 1;
    for (char c : fraction) {
      numerator = numerator * 10 + static_cast<unsigned>(c - '0');
      denominator *= 10;
    }
    numerator *= multiplier;  // < 10^24 * 2^40 < 2^120
    if (numerator % denominator != 0) {
      return InvalidArgument(Quoted(text) + " is not a whole number of bytes");
    }
    bytes += numerator / denominator;
    if (bytes > UINT64_MAX) return too_large();
  }
  return static_cast<uint64_t>(bytes);
}

std::string FormatSize(uint64_t bytes) {
  struct Unit {
    uint64_t size;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{kTiB, "TiB"}, {kGiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}};
  for (const Unit& u : kUnits) {
    if (bytes >= u.size && bytes % u.size == 0) return std::to_string(bytes / u.size) + " " + u.name;
  }
  return std::to_string(bytes) + " B";
}

std::string FormatSizeRounded(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0 || v == double(uint64_t(v))) std::snprintf(buf, sizeof(buf), "%.0f %s", v, kUnits[u]);
  else std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[u]);
  return buf;
}

}  // namespace memkv
