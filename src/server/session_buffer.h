// InputBuffer: a connection's buffer for frame headers and metas, sized to
// what the connection needs right now.
//
// A connection that has not authenticated, or is idle, must cost a few KiB:
// the buffer is allocated on the first read (kInitialBytes, enough for any
// Connect), grows by doubling up to kMaxBytes while reads keep filling it (a
// busy pipelining client), and Release() frees it when it holds nothing (the
// owner calls it for idle connections). Bytes are never zero-filled, so only
// pages that data actually landed in become resident. Buffers above
// kMaxMallocBytes are mmap(2)ed and munmap(2)ed, so their memory goes back to
// the kernel on release instead of staying in a malloc arena.
//
// Payload bytes do not live here for long: the connection copies what was
// read together with a header into the payload's pool chunks and reads the
// rest straight from the socket into them. A connection sending small
// frames (FitFrames: a header, meta and payload of at most kSmallFrameBytes)
// gets room for two of them, so one recv(2) takes a whole put of a few KiB
// and comes back short: no readv(2) of the payload's tail and no recv that
// finds the socket empty (three system calls become one).
//
// Owned by one Session; not thread-safe.
#ifndef MEMKV_SERVER_SESSION_BUFFER_H_
#define MEMKV_SERVER_SESSION_BUFFER_H_

#include <cstddef>
#include <cstdint>

namespace memkv::server {

class InputBuffer {
 public:
  static constexpr size_t kInitialBytes = 4 * 1024;
  static constexpr size_t kMaxBytes = 256 * 1024;
  static constexpr size_t kMaxMallocBytes = 32 * 1024;
  static constexpr size_t kSmallFrameBytes = 16 * 1024;

  InputBuffer() = default;
  ~InputBuffer() { Free(); }
  InputBuffer(const InputBuffer&) = delete;
  InputBuffer& operator=(const InputBuffer&) = delete;

  // Unparsed bytes.
  const uint8_t* data() const { return data_ + start_; }
  size_t size() const { return end_ - start_; }
  bool empty() const { return start_ == end_; }
  void Consume(size_t n) { start_ += n; }
  size_t capacity() const { return capacity_; }

  // Room to read into at the end (allocating, compacting and, when `grow`
  // and the buffer is full, doubling up to kMaxBytes first). Empty when
  // there is no room (the parser must consume first) or no memory.
  uint8_t* Space(bool grow, size_t* room);
  // `n` bytes were read into Space().
  void Commit(size_t n) { end_ += n; }
  // A frame of `bytes` in all is arriving: when it is small, the buffer grows
  // (at the next Space() with `grow`) to hold two such frames.
  void FitFrames(size_t bytes);
  // Frees the memory when no unparsed bytes are held; false otherwise.
  bool Release();

 private:
  bool Resize(size_t capacity);
  void Free();

  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
  size_t wanted_ = kInitialBytes;  // FitFrames' capacity
  size_t start_ = 0;
  size_t end_ = 0;
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_SESSION_BUFFER_H_
