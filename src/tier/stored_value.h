// StoredValue: a value read for a response. Either pinned in the DRAM pool (a
// ReadHandle: its bytes stay where they are, unevictable, until the value is
// destroyed) or, read from a drive and not copied into DRAM, held in a buffer
// of its own. Either way iov() is valid as long as the StoredValue lives, also
// across moves, so a response can send straight from it. A value too large
// for either is streamed(): its bytes are still on the drives, to be read a
// piece at a time through stream() (TieredStore::MoveStreamPiece), and iov()
// is empty.
//
// Move-only. Not thread-safe; may be moved to and destroyed on any thread,
// but must not outlive the store it came from.
#ifndef MEMKV_TIER_STORED_VALUE_H_
#define MEMKV_TIER_STORED_VALUE_H_

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "storage/memory_store.h"
#include "tier/value_stream.h"

namespace memkv::tier {

class StoredValue {
 public:
  StoredValue() = default;
  StoredValue(StoredValue&&) noexcept = default;
  StoredValue& operator=(StoredValue&&) noexcept = default;
  StoredValue(const StoredValue&) = delete;
  StoredValue& operator=(const StoredValue&) = delete;

  static StoredValue Pinned(storage::ReadHandle pin) {
    StoredValue v;
    v.pinned_ = true;
    v.pin_ = std::move(pin);
    return v;
  }
  // `checksum` is Checksum() of `bytes` (the drive checked it on the read).
  static StoredValue Owned(std::vector<uint8_t> bytes, uint64_t checksum) {
    StoredValue v;
    v.bytes_ = std::move(bytes);
    v.checksum_ = checksum;
    // The vector's buffer keeps its address when the vector is moved.
    v.bytes_iov_ = {v.bytes_.data(), v.bytes_.size()};
    return v;
  }

  static StoredValue Streamed(std::shared_ptr<ValueStream> stream) {
    StoredValue v;
    v.stream_ = std::move(stream);
    return v;
  }

  // In the DRAM pool (an RDMA READ can be granted on it).
  bool pinned() const { return pinned_; }
  // On the drives, to be read in pieces through stream().
  bool streamed() const { return stream_ != nullptr; }
  const std::shared_ptr<ValueStream>& stream() const { return stream_; }
  uint64_t size() const { return pinned_ ? pin_.size() : stream_ ? stream_->size() : bytes_.size(); }
  uint64_t checksum() const { return pinned_ ? pin_.checksum() : stream_ ? stream_->checksum() : checksum_; }
  // The bytes, in order (empty for an empty value).
  std::span<const iovec> iov() const {
    if (pinned_) return pin_.iov();
    return bytes_.empty() ? std::span<const iovec>() : std::span<const iovec>(&bytes_iov_, 1);
  }
  // For a value got with ReadCheck::kLater, once its bytes are sent: checks
  // them, and drops a DRAM value that fails (ReadHandle::CheckLater). Ok for
  // a value already checked (and for bytes a drive read checked).
  Status CheckLater() { return pinned_ ? pin_.CheckLater() : Status::Ok(); }
  // The DRAM pin, for a holder that outlives this value (pinned() only).
  storage::ReadHandle TakePin() { return std::move(pin_); }

 private:
  bool pinned_ = false;
  storage::ReadHandle pin_;
  std::vector<uint8_t> bytes_;
  iovec bytes_iov_{};
  uint64_t checksum_ = 0;
  std::shared_ptr<ValueStream> stream_;
};

}  // namespace memkv::tier

#endif  // MEMKV_TIER_STORED_VALUE_H_
