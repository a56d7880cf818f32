// Copies between a flat buffer and a scattered one (a list of iovecs read as
// one contiguous byte string). Pure functions; the caller guarantees that
// [offset, offset + len) lies within the iovecs' total length.
#ifndef MEMKV_BASE_IOV_H_
#define MEMKV_BASE_IOV_H_

#include <sys/uio.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

namespace memkv {

inline uint64_t IovBytes(std::span<const iovec> iov) {
  uint64_t total = 0;
  for (const iovec& v : iov) total += v.iov_len;
  return total;
}

// Visits the pieces of [offset, offset + len) in order: fn(piece, piece_len, done_so_far).
template <typename Fn>
void ForEachIovPiece(std::span<const iovec> iov, uint64_t offset, uint64_t len, Fn fn) {
  uint64_t done = 0;
  for (const iovec& v : iov) {
    if (done == len) return;
    if (offset >= v.iov_len) {
      offset -= v.iov_len;
      continue;
    }
    const uint64_t take = std::min<uint64_t>(v.iov_len - offset, len - done);
    fn(static_cast<uint8_t*>(v.iov_base) + offset, take, done);
    done += take;
    offset = 0;
  }
}

// dst[0, len) = iov bytes [offset, offset + len).
inline void CopyFromIov(std::span<const iovec> iov, uint64_t offset, void* dst, uint64_t len) {
  ForEachIovPiece(iov, offset, len, [dst](const uint8_t* p, uint64_t n, uint64_t done) {
    std::memcpy(static_cast<uint8_t*>(dst) + done, p, n);
  });
}

// iov bytes [offset, offset + len) = src[0, len).
inline void CopyToIov(std::span<const iovec> iov, uint64_t offset, const void* src, uint64_t len) {
  ForEachIovPiece(iov, offset, len, [src](uint8_t* p, uint64_t n, uint64_t done) {
    std::memcpy(p, static_cast<const uint8_t*>(src) + done, n);
  });
}

}  // namespace memkv

#endif  // MEMKV_BASE_IOV_H_
