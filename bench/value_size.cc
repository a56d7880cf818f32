// ParseValueSize and FormatValueSize (flags.h), apart from flags.cc: they
// need the tree's size units, and the programs that link only the public
// library (memkv-batch-get-bench, memkv-kv-store-bench) share flags.cc.
#include "base/units.h"
#include "bench/flags.h"

namespace memkv::bench {

Result<uint64_t> ParseValueSize(std::string_view text) {
  uint64_t total = 0;
  size_t start = 0;
  for (;;) {
    const size_t plus = text.find('+', start);
    const std::string_view term = text.substr(start, plus == std::string_view::npos ? plus : plus - start);
    Result<uint64_t> size = ParseSize(term);
    if (!size.ok()) return InvalidArgument("'" + std::string(text) + "': " + size.status().message());
    if (*size > UINT64_MAX - total) return InvalidArgument("'" + std::string(text) + "' is too large");
    total += *size;
    if (plus == std::string_view::npos) return total;
    start = plus + 1;
  }
}

std::string FormatValueSize(uint64_t bytes) {
  if (bytes < kKiB || bytes % kKiB == 0) return FormatSize(bytes);
  const uint64_t rest = bytes % kKiB;
  return FormatSize(bytes - rest) + "+" + std::to_string(rest);
}

}  // namespace memkv::bench
