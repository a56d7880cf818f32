#include "base/utf8.h"

#include <cstdint>

namespace memkv {
namespace {

// The length of the well-formed UTF-8 sequence at the start of `s`, or 0.
size_t SequenceLength(std::string_view s) {
  const auto b = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t c = b(0);
  if (c < 0x80) return 1;
  size_t n;
  uint8_t lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;  // overlong
    if (c == 0xf4) hi = 0x8f;  // past U+10FFFF
  } else {
    return 0;  // a continuation byte, 0xc0, 0xc1 or 0xf5..0xff
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (b(i) < 0x80 || b(i) > 0xbf) return 0;
  }
  return n;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  while (!text.empty()) {
    const size_t n = SequenceLength(text);
    if (n == 0) return false;
    text.remove_prefix(n);
  }
  return true;
}

std::string PrintableUtf8(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const size_t n = SequenceLength(text);
    if (n == 0) {
      const uint8_t c = static_cast<uint8_t>(text[0]);
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      text.remove_prefix(1);
      continue;
    }
    out.append(text.substr(0, n));
    text.remove_prefix(n);
  }
  return out;
}

}  // namespace memkv
