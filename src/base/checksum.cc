#include "base/checksum.h"

// Inline the implementation: the hot loop then compiles into this file at full
// optimisation instead of going through the shared library.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace memkv {
namespace internal {
uint64_t ChecksumIovAvx2(const iovec* iov, size_t count);
}  // namespace internal

namespace {

uint64_t ChecksumIovPortable(const iovec* iov, size_t count) {
  if (count == 1) return XXH3_64bits(iov[0].iov_base, iov[0].iov_len);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  for (size_t i = 0; i < count; ++i) XXH3_64bits_update(&state, iov[i].iov_base, iov[i].iov_len);
  return XXH3_64bits_digest(&state);
}

// XXH3 runs about four times faster with AVX2 than with the SSE2 baseline,
// which matters when every byte stored or read is hashed on both ends.
using ChecksumFn = uint64_t (*)(const iovec*, size_t);
ChecksumFn PickImplementation() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? &internal::ChecksumIovAvx2 : &ChecksumIovPortable;
}

ChecksumFn Implementation() {
  static const ChecksumFn fn = PickImplementation();
  return fn;
}

}  // namespace

uint64_t Checksum(const void* data, size_t size) {
  iovec v{const_cast<void*>(data), size};
  return Implementation()(&v, 1);
}

uint64_t ChecksumIov(std::span<const iovec> iov) { return Implementation()(iov.data(), iov.size()); }

}  // namespace memkv
