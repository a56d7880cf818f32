// Human-readable sizes: "2 MiB", "247GiB", "4096", "1.5 GiB", "64 KB", "2Mi".
//
// A size is a number (digits, optionally a '.' and more digits) and an
// optional unit, with or without spaces between them; units ignore case:
//   none, B                          bytes
//   KiB Ki K, MiB Mi M, GiB Gi G,    powers of 1024 (a bare K/M/G/T has always
//   TiB Ti T                         been binary here; existing configs keep it)
//   KB, MB, GB, TB                   powers of 1000
// The result is exact: a fraction must come to a whole number of bytes
// ("1.5 KiB" is 1536, "0.3 B" is refused), and anything past 2^64-1 bytes is
// refused rather than wrapped. No sign, no exponent, no digit separators.
// Pure functions.
#ifndef MEMKV_BASE_UNITS_H_
#define MEMKV_BASE_UNITS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "memkv/status.h"

namespace memkv {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;
inline constexpr uint64_t kTiB = 1024 * kGiB;

// InvalidArgument naming the text, what is wrong with it and the accepted
// units; a size past 2^64-1 bytes says it is too large.
Result<uint64_t> ParseSize(std::string_view text);
// The shortest exact form where one exists ("2 MiB"), else bytes ("1000 B").
std::string FormatSize(uint64_t bytes);
// For people: the largest unit with one decimal ("1.5 MiB", "3 MiB", "1000 B").
std::string FormatSizeRounded(uint64_t bytes);

}  // namespace memkv

#endif  // MEMKV_BASE_UNITS_H_
