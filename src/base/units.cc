#include "base/units.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace memkv {

Result<uint64_t> ParseSize(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument("'" + std::string(text) +
                           "' is not a size; use a number with an optional unit: B, KiB, MiB, "
                           "GiB, TiB (or KB, MB, GB, TB), e.g. '2 MiB'");
  };
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t num_start = i;
  bool seen_dot = false;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '.' && !seen_dot))) {
    if (text[i] == '.') seen_dot = true;
    ++i;
  }
  if (i == num_start) return bad();
  std::string number(text.substr(num_start, i - num_start));
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::string unit;
  for (; i < text.size(); ++i) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) break;
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  }
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i != text.size()) return bad();

  uint64_t multiplier = 0;
  if (unit.empty() || unit == "b") multiplier = 1;
  else if (unit == "k" || unit == "kib") multiplier = kKiB;
  else if (unit == "m" || unit == "mib") multiplier = kMiB;
  else if (unit == "g" || unit == "gib") multiplier = kGiB;
  else if (unit == "t" || unit == "tib") multiplier = kTiB;
  else if (unit == "kb") multiplier = 1000ULL;
  else if (unit == "mb") multiplier = 1000ULL * 1000;
  else if (unit == "gb") multiplier = 1000ULL * 1000 * 1000;
  else if (unit == "tb") multiplier = 1000ULL * 1000 * 1000 * 1000;
  else return bad();

  if (!seen_dot) {
    char* end = nullptr;
    errno = 0;
    unsigned long long n = std::strtoull(number.c_str(), &end, 10);
    if (errno != 0 || n > UINT64_MAX / multiplier) {
      return InvalidArgument("'" + std::string(text) + "' is too large (limit is 2^64-1 bytes)");
    }
    return static_cast<uint64_t>(n) * multiplier;
  }
  double value = std::strtod(number.c_str(), nullptr) * static_cast<double>(multiplier);
  if (!(value < 1.8e19)) return InvalidArgument("'" + std::string(text) + "' is too large");
  double rounded = std::round(value);
  if (std::fabs(value - rounded) > 1e-6) {
    return InvalidArgument("'" + std::string(text) + "' is not a whole number of bytes");
  }
  return static_cast<uint64_t>(rounded);
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

}  // namespace memkv
