// AlignedBuffer: move-only owner of page-aligned memory for O_DIRECT I/O.
//
// Anonymous mmap, so the memory is page-aligned (4096, which satisfies every
// logical block size the drive layer accepts), zero-filled, advised to use
// transparent huge pages (fewer segments per O_DIRECT request), and returned
// to the OS on destruction. Not thread-safe; the bytes may be shared by whoever owns it.
#ifndef MEMKV_DRIVE_ALIGNED_BUFFER_H_
#define MEMKV_DRIVE_ALIGNED_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "memkv/status.h"

namespace memkv::drive {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // Internal (naming size and errno) when the mapping fails. size 0 is allowed.
  static Result<AlignedBuffer> Allocate(size_t size);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<uint8_t> span() const { return {data_, size_}; }

 private:
  AlignedBuffer(uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_ALIGNED_BUFFER_H_
