#include "base/checksum.h"

#include "base/checksum_internal.h"

// Inline the implementation: the hot loop then compiles into this file at full
// optimisation instead of going through the shared library.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace memkv {
namespace {

uint64_t ChecksumIovPortable(const iovec* iov, size_t count) {
  if (count == 1) return XXH3_64bits(iov[0].iov_base, iov[0].iov_len);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  for (size_t i = 0; i < count; ++i) XXH3_64bits_update(&state, iov[i].iov_base, iov[i].iov_len);
  return XXH3_64bits_digest(&state);
}

void ChecksumUpdatePortable(void* state, const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, size);
}

// XXH3 runs about four times faster with AVX2 than with the SSE2 baseline,
// and AVX-512 about 1.4 times faster again (60 against 85 GB/s on the 2-core
// AMD EPYC of docs/benchmarks-history.md), which matters when every byte stored or
// read is hashed on both ends. Every variant computes the same hash.
struct ChecksumImpl {
  uint64_t (*iov)(const iovec*, size_t);
  void (*update)(void*, const void*, size_t);
};

ChecksumImpl PickImplementation() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {&internal::ChecksumIovAvx512, &internal::ChecksumUpdateAvx512};
  if (__builtin_cpu_supports("avx2")) return {&internal::ChecksumIovAvx2, &internal::ChecksumUpdateAvx2};
  return {&ChecksumIovPortable, &ChecksumUpdatePortable};
}

const ChecksumImpl& Implementation() {
  static const ChecksumImpl impl = PickImplementation();
  return impl;
}

}  // namespace

uint64_t Checksum(const void* data, size_t size) {
  iovec v{const_cast<void*>(data), size};
  return Implementation().iov(&v, 1);
}

uint64_t ChecksumIov(std::span<const iovec> iov) { return Implementation().iov(iov.data(), iov.size()); }

}  // namespace memkv

namespace memkv {

ChecksumStream::ChecksumStream() : state_(XXH3_createState()) { Reset(); }
ChecksumStream::~ChecksumStream() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }
void ChecksumStream::Reset() { XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_)); }
void ChecksumStream::Update(const void* data, size_t size) { Implementation().update(state_, data, size); }
uint64_t ChecksumStream::Digest() const { return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_)); }

}  // namespace memkv
