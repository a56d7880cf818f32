// SmallVector<T, N>: a vector of trivially copyable T that holds its first N
// elements in place and goes to the heap only past them.
//
// For the lists nearly every value has one element of (a DRAM value's pool
// runs and iovecs): a std::vector costs each of them an allocation and a
// free on the request path, and 24 bytes plus a heap chunk of the entry's
// memory; SmallVector<T, 1> of a 16-byte T is 24 bytes and allocates
// nothing until a second element comes.
//
// What it offers is what those lists use: push_back, reserve, clear (which
// keeps the capacity), indexing, back, iteration over pointers (so a
// std::span views it), equality, copies and moves. A moved-from vector is
// empty. Not thread-safe, as std::vector.
#ifndef MEMKV_BASE_SMALL_VECTOR_H_
#define MEMKV_BASE_SMALL_VECTOR_H_

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <new>
#include <type_traits>

namespace memkv {

template <typename T, uint32_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector copies its elements as bytes");
  static_assert(N >= 1, "SmallVector needs room for one element in place");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() = default;
  SmallVector(std::initializer_list<T> init) {
    reserve(init.size());
    for (const T& v : init) push_back(v);
  }
  SmallVector(const SmallVector& other) { CopyFrom(other); }
  SmallVector(SmallVector&& other) noexcept { TakeFrom(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      size_ = 0;
      CopyFrom(other);
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      FreeHeap();
      TakeFrom(other);
    }
    return *this;
  }
  ~SmallVector() { FreeHeap(); }

  T* data() { return on_heap() ? room_.heap : reinterpret_cast<T*>(room_.in_place); }
  const T* data() const { return on_heap() ? room_.heap : reinterpret_cast<const T*>(room_.in_place); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  // Whether the elements live on the heap (more than N were ever reserved).
  bool on_heap() const { return capacity_ > N; }

  T& operator[](size_t i) {
    assert(i < size_);
    return data()[i];
  }
  const T& operator[](size_t i) const {
    assert(i < size_);
    return data()[i];
  }
  T& back() {
    assert(size_ > 0);
    return data()[size_ - 1];
  }
  const T& back() const {
    assert(size_ > 0);
    return data()[size_ - 1];
  }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

  void push_back(const T& v) {
    if (size_ == capacity_) {
      const T copy = v;  // `v` may be one of ours, which Grow moves
      Grow(size_t(capacity_) * 2);
      ::new (static_cast<void*>(data() + size_)) T(copy);
      ++size_;
      return;
    }
    ::new (static_cast<void*>(data() + size_)) T(v);
    ++size_;
  }
  void reserve(size_t n) {
    if (n > capacity_) Grow(n);
  }
  // Empties it; the room stays (on the heap too), for the next elements.
  void clear() { size_ = 0; }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  void Grow(size_t n) {
    assert(n <= UINT32_MAX);
    T* grown = static_cast<T*>(::operator new(n * sizeof(T)));
    if (size_ > 0) std::memcpy(grown, data(), size_ * sizeof(T));
    FreeHeap();
    room_.heap = grown;
    capacity_ = static_cast<uint32_t>(n);
  }
  void FreeHeap() {
    if (on_heap()) {
      ::operator delete(room_.heap);
      capacity_ = N;
    }
  }
  // Into an empty vector with its own room (in place, or a heap block).
  void CopyFrom(const SmallVector& other) {
    reserve(other.size_);
    if (other.size_ > 0) std::memcpy(data(), other.data(), other.size_ * sizeof(T));
    size_ = other.size_;
  }
  // Into a vector whose heap block, if any, was freed: the room's bytes
  // whole, a fixed-size copy of the heap block's address or of the elements
  // in place, whichever they are.
  void TakeFrom(SmallVector& other) {
    std::memcpy(&room_, &other.room_, sizeof(room_));
    capacity_ = other.capacity_;
    size_ = other.size_;
    other.capacity_ = N;
    other.size_ = 0;
  }

  // The heap block's address, or the first N elements as bytes (T need not
  // be default-constructible; memcpy and placement new make the objects).
  union Room {
    T* heap;
    alignas(T) unsigned char in_place[N * sizeof(T)];
  };
  Room room_;
  uint32_t size_ = 0;
  uint32_t capacity_ = N;
};

}  // namespace memkv

#endif  // MEMKV_BASE_SMALL_VECTOR_H_
