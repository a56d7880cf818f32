// Values and receive buffers of one value size, shared by the memkv cells and
// the raw reference cells so both move the same bytes from the same memory.
//
// The value of key i is the window [i * kStrideBytes, i * kStrideBytes + size)
// of one pseudo-random pattern: every key's bytes differ (a value read back
// under the wrong key is caught), yet no per-key copy or per-op stamping is
// needed, and a value can be checked against the pattern in place.
//
// Every page is touched at construction so no cell pays first-touch faults.
// Thread-safety: the pattern is read-only after construction; receive buffer
// t belongs to thread t of the running cell.
#ifndef MEMKV_BENCH_PAYLOAD_H_
#define MEMKV_BENCH_PAYLOAD_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace memkv::bench {

class Payloads {
 public:
  static constexpr uint64_t kStrideBytes = 64;

  Payloads(uint64_t size_bytes, uint64_t keys, uint32_t threads);

  uint64_t size_bytes() const { return size_bytes_; }
  uint64_t keys() const { return keys_; }

  // The value of key `key` (< keys()).
  std::span<const uint8_t> Value(uint64_t key) const;
  // Thread `thread`'s receive buffer, exactly size_bytes() long.
  std::span<uint8_t> Buffer(uint32_t thread) const;

  // Cheap check for every timed get: the first and last 8 bytes.
  bool QuickCheck(uint64_t key, std::span<const uint8_t> got) const;
  // Byte-exact comparison.
  bool FullCheck(uint64_t key, std::span<const uint8_t> got) const;

 private:
  uint64_t size_bytes_;
  uint64_t keys_;
  std::vector<uint8_t> pattern_;
  std::vector<std::unique_ptr<uint8_t[]>> buffers_;
};

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_PAYLOAD_H_
