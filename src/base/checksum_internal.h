// The vector builds of the checksum loop (checksum_vector.inc): checksum.cc
// picks the one the CPU runs; tests call each directly.
#ifndef MEMKV_BASE_CHECKSUM_INTERNAL_H_
#define MEMKV_BASE_CHECKSUM_INTERNAL_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace memkv::internal {

uint64_t ChecksumIovAvx2(const iovec* iov, size_t count);
void ChecksumUpdateAvx2(void* state, const void* data, size_t size);
uint64_t ChecksumIovAvx512(const iovec* iov, size_t count);
void ChecksumUpdateAvx512(void* state, const void* data, size_t size);

}  // namespace memkv::internal

#endif  // MEMKV_BASE_CHECKSUM_INTERNAL_H_
