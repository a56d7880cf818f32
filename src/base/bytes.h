// Little-endian integer load/store and hex helpers. Pure functions.
#ifndef MEMKV_BASE_BYTES_H_
#define MEMKV_BASE_BYTES_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memkv {

inline void StoreLe16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v); p[1] = uint8_t(v >> 8); }
inline void StoreLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline void StoreLe64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline uint16_t LoadLe16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t LoadLe32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Lower-case hex of bytes.
std::string HexEncode(const uint8_t* data, size_t size);
// Decodes hex (either case); nullopt on odd length or a non-hex character.
std::optional<std::vector<uint8_t>> HexDecode(std::string_view hex);

}  // namespace memkv

#endif  // MEMKV_BASE_BYTES_H_
