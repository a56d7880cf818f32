// Block checksums: XXH3-64 (xxhash), chosen for speed (tens of GB/s per core)
// so that verifying every read costs a small fraction of moving the bytes.
// It detects corruption; it is not a MAC (see docs/wire-protocol.md).
#ifndef MEMKV_BASE_CHECKSUM_H_
#define MEMKV_BASE_CHECKSUM_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace memkv {

uint64_t Checksum(const void* data, size_t size);
// Checksum of the concatenation of the iovecs; equals Checksum() of the same bytes.
uint64_t ChecksumIov(std::span<const iovec> iov);

// Incremental checksum: Update() over consecutive pieces, then Digest() equals
// Checksum() of their concatenation. Lets a receiver hash bytes as they
// arrive, while they are still in cache. Not thread-safe; reusable after Reset().
class ChecksumStream {
 public:
  ChecksumStream();
  ~ChecksumStream();
  ChecksumStream(const ChecksumStream&) = delete;
  ChecksumStream& operator=(const ChecksumStream&) = delete;

  void Reset();
  void Update(const void* data, size_t size);
  uint64_t Digest() const;

 private:
  void* state_;  // XXH3_state_t, 64-byte aligned
};

}  // namespace memkv

#endif  // MEMKV_BASE_CHECKSUM_H_
