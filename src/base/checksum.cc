#include "base/checksum.h"

// Inline the implementation: the hot loop then compiles into this file at full
// optimisation instead of going through the shared library.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace memkv {

uint64_t Checksum(const void* data, size_t size) { return XXH3_64bits(data, size); }

uint64_t ChecksumIov(std::span<const iovec> iov) {
  if (iov.size() == 1) return XXH3_64bits(iov[0].iov_base, iov[0].iov_len);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  for (const iovec& v : iov) XXH3_64bits_update(&state, v.iov_base, v.iov_len);
  return XXH3_64bits_digest(&state);
}

}  // namespace memkv
