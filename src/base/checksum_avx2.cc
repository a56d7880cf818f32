// The AVX2 build of the checksum loop (compiled with -mavx2; called only when
// the CPU has AVX2, see checksum.cc). It includes nothing but xxhash and C
// headers, so no inline C++ library code compiled for AVX2 can be merged into
// the rest of the program.
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace memkv::internal {

uint64_t ChecksumIovAvx2(const iovec* iov, size_t count) {
  if (count == 1) return XXH3_64bits(iov[0].iov_base, iov[0].iov_len);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  for (size_t i = 0; i < count; ++i) XXH3_64bits_update(&state, iov[i].iov_base, iov[i].iov_len);
  return XXH3_64bits_digest(&state);
}

void ChecksumUpdateAvx2(void* state, const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, size);
}

}  // namespace memkv::internal
