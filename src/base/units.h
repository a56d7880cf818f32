// Human-readable sizes: "2 MiB", "247GiB", "4096", "1.5 GiB", "64 KB".
//
// Binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB, TB) units are accepted,
// as are K/M/G/T (binary) and a bare byte count or "B". Pure functions.
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

// InvalidArgument naming the text and the accepted forms on failure.
Result<uint64_t> ParseSize(std::string_view text);
// The shortest exact form where one exists ("2 MiB"), else bytes ("1000 B").
std::string FormatSize(uint64_t bytes);

}  // namespace memkv

#endif  // MEMKV_BASE_UNITS_H_
