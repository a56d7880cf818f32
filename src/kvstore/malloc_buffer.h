// MallocBuffer: bytes in a malloc() block, the form the kv_store ABI hands
// to its caller (who free()s it). Move-only; the destructor frees what was
// not released.
//
// Allocation failure throws std::bad_alloc, as every other allocation in
// this library does; the C edge (vtable.cc) turns it into
// KV_STORE_ERR_NO_MEMORY.
#ifndef MEMKV_KVSTORE_MALLOC_BUFFER_H_
#define MEMKV_KVSTORE_MALLOC_BUFFER_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <utility>

namespace memkv::kvstore {

// std::bad_alloc that says what could not be allocated.
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

class MallocBuffer {
 public:
  MallocBuffer() = default;
  // `capacity` bytes, uninitialised (a 0-byte buffer still owns a block, so
  // data() is never NULL: the ABI promises a non-NULL *out on success).
  static MallocBuffer Allocate(size_t capacity) {
    void* p = std::malloc(capacity == 0 ? 1 : capacity);
    if (p == nullptr) throw OutOfMemory("malloc of " + std::to_string(capacity) + " bytes failed");
    return MallocBuffer(static_cast<uint8_t*>(p), capacity);
  }
  // `capacity` bytes that a receive will fill, for a caller that frees them.
  // From kHugePageBytes up, the block is aligned to a huge page and its
  // whole huge pages are marked MADV_HUGEPAGE: a restore of large chunks
  // then takes a page fault per 2 MiB instead of per 4 KiB. The caller
  // frees such outputs, so whether malloc hands the next restore pages it
  // kept or fresh ones is not ours to choose, and fresh 4 KiB pages cost
  // about 1.4 us each here: 280 ms of a 768 MiB restore that took 520 ms.
  static MallocBuffer AllocateForReceive(size_t capacity) {
    if (capacity < kHugePageBytes) return Allocate(capacity);
    void* p = nullptr;
    if (::posix_memalign(&p, kHugePageBytes, capacity) != 0 || p == nullptr) {
      throw OutOfMemory("malloc of " + std::to_string(capacity) + " bytes failed");
    }
    // Advice only: where the kernel has no transparent huge pages it fails
    // and the pages stay 4 KiB.
    (void)::madvise(p, capacity & ~(kHugePageBytes - 1), MADV_HUGEPAGE);
    return MallocBuffer(static_cast<uint8_t*>(p), capacity);
  }
  static MallocBuffer CopyOf(std::span<const uint8_t> bytes) {
    MallocBuffer b = Allocate(bytes.size());
    if (!bytes.empty()) std::memcpy(b.data_, bytes.data(), bytes.size());
    return b;
  }

  MallocBuffer(MallocBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  MallocBuffer& operator=(MallocBuffer&& other) noexcept {
    if (this != &other) {
      std::free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  MallocBuffer(const MallocBuffer&) = delete;
  MallocBuffer& operator=(const MallocBuffer&) = delete;
  ~MallocBuffer() { std::free(data_); }

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty_handle() const { return data_ == nullptr; }
  std::span<uint8_t> span() const { return {data_, size_}; }

  // Keeps the first `size` bytes (size <= size()); gives the rest back to
  // malloc when that saves a meaningful amount.
  void Shrink(size_t size) {
    if (size >= size_) return;
    if (size_ - size >= 4096) {
      if (void* p = std::realloc(data_, size == 0 ? 1 : size); p != nullptr) data_ = static_cast<uint8_t*>(p);
    }
    size_ = size;
  }

  // Hands the block to the caller, who frees it with free().
  uint8_t* Release() {
    size_ = 0;
    return std::exchange(data_, nullptr);
  }

 private:
  MallocBuffer(uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace memkv::kvstore

#endif  // MEMKV_KVSTORE_MALLOC_BUFFER_H_
