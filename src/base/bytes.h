// Little-endian integer load/store and hex helpers. Pure functions.
#ifndef MEMKV_BASE_BYTES_H_
#define MEMKV_BASE_BYTES_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memkv {

// One unaligned load or store each. LittleEndian swaps the bytes on a
// big-endian host (its own inverse: it converts both ways).
template <class T>
inline T LittleEndian(T v) {
  if constexpr (std::endian::native == std::endian::big) {
    if constexpr (sizeof v == 2) v = __builtin_bswap16(v);
    if constexpr (sizeof v == 4) v = __builtin_bswap32(v);
    if constexpr (sizeof v == 8) v = __builtin_bswap64(v);
  }
  return v;
}
template <class T>
inline T LoadLe(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return LittleEndian(v);
}
template <class T>
inline void StoreLe(uint8_t* p, T v) {
  v = LittleEndian(v);
  std::memcpy(p, &v, sizeof v);
}
inline void StoreLe16(uint8_t* p, uint16_t v) { StoreLe(p, v); }
inline void StoreLe32(uint8_t* p, uint32_t v) { StoreLe(p, v); }
inline void StoreLe64(uint8_t* p, uint64_t v) { StoreLe(p, v); }
inline uint16_t LoadLe16(const uint8_t* p) { return LoadLe<uint16_t>(p); }
inline uint32_t LoadLe32(const uint8_t* p) { return LoadLe<uint32_t>(p); }
inline uint64_t LoadLe64(const uint8_t* p) { return LoadLe<uint64_t>(p); }

// Lower-case hex of bytes.
std::string HexEncode(const uint8_t* data, size_t size);
// Decodes hex (either case); nullopt on odd length or a non-hex character.
std::optional<std::vector<uint8_t>> HexDecode(std::string_view hex);

}  // namespace memkv

#endif  // MEMKV_BASE_BYTES_H_
