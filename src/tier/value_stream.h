// ValueStream: a value moved between a connection and the drives in pieces,
// for a value too large to stage whole in DRAM or in a buffer (TieredStore,
// "Values in pieces"). The stream owns one buffer, the window, of at most
// kWindowBytes: a put fills it with the next piece and the tier writes it to
// the value's reserved extents; a get has the tier read the next piece into
// it and sends it. So neither end holds more of the value than the window.
//
// Shared (shared_ptr) between its caller and the I/O thread moving a piece:
// a caller that goes away mid-piece leaves the stream to the last holder,
// and a put never published frees its extents when the stream goes.
//
// One piece at a time: the caller touches the window only between pieces.
#ifndef MEMKV_TIER_VALUE_STREAM_H_
#define MEMKV_TIER_VALUE_STREAM_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "drive/extent_store.h"
#include "memkv/put_options.h"

namespace memkv::tier {

class ValueStream {
 public:
  // A multiple of the drive unit (every piece but the last is one window).
  static constexpr uint64_t kWindowBytes = uint64_t{16} << 20;

  ValueStream(const ValueStream&) = delete;
  ValueStream& operator=(const ValueStream&) = delete;

  bool is_put() const { return writer_ != nullptr; }
  uint64_t size() const { return size_; }
  // get: the value's checksum, from its record (sent before its bytes).
  uint64_t checksum() const { return checksum_; }
  // Bytes moved to or from the drives so far.
  uint64_t moved() const { return moved_; }
  uint64_t left() const { return size_ - moved_; }
  const std::string& key() const { return key_; }
  // The length of the next piece.
  uint64_t next_piece() const { return std::min(left(), kWindowBytes); }
  // The length of the piece the last move moved.
  uint64_t last_piece() const { return last_piece_; }
  // The window: a put fills [0, next_piece()) before each move; after a get's
  // move, [0, the piece moved) holds it.
  uint8_t* window() { return window_.get(); }

 private:
  friend class TieredStore;
  ValueStream(std::string key, uint64_t size)
      : key_(std::move(key)), size_(size),
        window_(std::make_unique_for_overwrite<uint8_t[]>(std::max<uint64_t>(1, std::min(size, kWindowBytes)))) {}

  std::string key_;
  uint64_t size_ = 0;
  uint64_t checksum_ = 0;
  uint64_t moved_ = 0;
  uint64_t last_piece_ = 0;
  std::unique_ptr<uint8_t[]> window_;
  PutOptions options_;                           // a put's
  QuotaHold hold_;                               // a put's: its tenant's drive quota, until published
  std::unique_ptr<drive::ExtentWriter> writer_;  // a put
  std::unique_ptr<drive::ExtentReader> reader_;  // a get
};

}  // namespace memkv::tier

#endif  // MEMKV_TIER_VALUE_STREAM_H_
