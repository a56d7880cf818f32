#include "drive/aligned_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/log.h"

namespace memkv::drive {

Result<AlignedBuffer> AlignedBuffer::Allocate(size_t size) {
  if (size == 0) return AlignedBuffer();
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Internal("mmap(" + std::to_string(size) + " bytes) for an I/O buffer: " + std::strerror(errno));
  }
  // Transparent huge pages where the kernel allows (madvise mode): an
  // O_DIRECT request over a buffer is cut where its pages are not
  // contiguous, so a 4 MiB read into 4 KiB pages can become several device
  // requests (max_segments) where 2 MiB pages make one. Measured on a virtio
  // disk: 4 MiB gets at queue depth 1 went from 0.53-0.65x fio read to
  // 0.9-1.15x (docs/benchmarks.md). Advice only: without THP nothing changes.
  (void)::madvise(p, size, MADV_HUGEPAGE);
  return AlignedBuffer(static_cast<uint8_t*>(p), size);
}

AlignedBuffer::~AlignedBuffer() {
  if (data_ != nullptr && ::munmap(data_, size_) != 0) {
    LOG_ERROR_C("drive") << "munmap of a " << size_ << "-byte I/O buffer: " << std::strerror(errno);
  }
}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    AlignedBuffer dying(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace memkv::drive
