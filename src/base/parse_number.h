// ParseDecimal and ParseHex: a whole unsigned number from text, the one parser
// every config reader, CLI flag and /proc or sysfs reader uses.
//
// The text must be digits only: no sign, no spaces, no "0x" prefix, no unit.
// Callers trim or split first where their input allows more, and turn a
// nullopt into their own message (which names the flag or field). Pure
// functions, header-only so that small tools can use them without a library.
#ifndef MEMKV_BASE_PARSE_NUMBER_H_
#define MEMKV_BASE_PARSE_NUMBER_H_

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace memkv {

namespace parse_number_internal {
inline std::optional<uint64_t> ParseBase(std::string_view text, int base) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  // from_chars takes no '+' or leading spaces; for an unsigned type, no '-'.
  auto [ptr, ec] = std::from_chars(text.data(), end, value, base);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}
}  // namespace parse_number_internal

// "4096" -> 4096. nullopt for empty text, any character other than 0-9, or a
// value past UINT64_MAX.
inline std::optional<uint64_t> ParseDecimal(std::string_view text) {
  return parse_number_internal::ParseBase(text, 10);
}

// "ff" or "FF" -> 255 (no "0x"). nullopt for empty text, any character other
// than 0-9, a-f, A-F, or a value past UINT64_MAX.
inline std::optional<uint64_t> ParseHex(std::string_view text) {
  return parse_number_internal::ParseBase(text, 16);
}

}  // namespace memkv

#endif  // MEMKV_BASE_PARSE_NUMBER_H_
