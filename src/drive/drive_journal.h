// DriveJournal: one drive's copy of the extent store's journal.
//
// The journal region of a drive holds two areas of equal size. Each starts
// with a JournalAreaHeader; the valid header with the higher epoch marks the
// active area, whose records follow its header back to back, each linked to
// the one before (format.h). Appends go at the tail of the active area. A
// checkpoint writes the live state into the other area, syncs it, and only
// then writes that area's header with epoch + 1: until that header is
// durable, the old area stays the one replay reads, so a crash in the middle
// of a checkpoint loses nothing.
//
// Writes are whole 4 KiB blocks (O_DIRECT). An append rewrites the partly
// filled block at the tail with the same leading bytes it already held, so a
// torn append can only damage records of its own, unacknowledged batch.
//
// The journal does I/O only through the IoOps it prepares; the caller runs
// them (batched with the other drives' journals) and reports success back.
// Not thread-safe: the extent store's commit leader owns all journals.
#ifndef MEMKV_DRIVE_DRIVE_JOURNAL_H_
#define MEMKV_DRIVE_DRIVE_JOURNAL_H_

#include <cstdint>
#include <span>
#include <vector>

#include "drive/aligned_buffer.h"
#include "drive/format.h"
#include "drive/io_engine.h"
#include "memkv/status.h"

namespace memkv::drive {

struct ReplayedJournal {
  std::vector<JournalRecord> records;  // in log order
  uint64_t epoch = 0;
  uint64_t base_sequence = 0;          // from the active area's header
  uint64_t base_generation = 0;
  uint64_t used_bytes = 0;             // of the active area, header included
};

class DriveJournal {
 public:
  DriveJournal() = default;
  DriveJournal(uint32_t drive, const Superblock& sb);
  DriveJournal(DriveJournal&&) noexcept = default;
  DriveJournal& operator=(DriveJournal&&) noexcept = default;

  // Encodes the two area headers a freshly formatted drive gets: area 0
  // active (epoch 1, empty), area 1 invalid. `area0` and `area1` are 4 KiB.
  static void EncodeFresh(const Superblock& sb, std::span<uint8_t, kDriveHeaderBytes> area0,
                          std::span<uint8_t, kDriveHeaderBytes> area1);

  // Reads the active area through `io` and positions the tail after its last
  // valid record. IoError when a read fails; Corruption when neither area
  // header is valid for this drive (the journal cannot be trusted).
  Result<ReplayedJournal> Replay(IoEngine& io);
  // Forget the on-drive contents (a readmitted drive): the next checkpoint
  // starts over in the other area. Appends are refused until then.
  void Reset();

  // Encodes `records` after the tail and describes the one write that puts
  // them there; the write stays valid until Finish/the next Prepare.
  // ResourceExhausted when they do not fit in the rest of the active area.
  Status PrepareAppend(std::span<const JournalRecord> records, IoOp* write);
  // The write and a sync of the drive succeeded: the records are in the log.
  void FinishAppend();

  // Encodes a checkpoint (the records of the live state) into the other area.
  // `record_writes` then `header_write` must be run in that order, each
  // followed by a sync. ResourceExhausted when the area cannot hold them.
  Status PrepareCheckpoint(std::span<const JournalRecord> records, uint64_t base_sequence,
                           uint64_t base_generation, std::vector<IoOp>* record_writes, IoOp* header_write);
  void FinishCheckpoint();

  bool appendable() const { return appendable_; }
  uint64_t used_bytes() const { return tail_; }
  uint64_t area_bytes() const { return sb_.journal_area_bytes; }
  uint64_t epoch() const { return epoch_; }

 private:
  uint64_t AreaOffset(int area) const { return sb_.journal_area_offset(area); }

  uint32_t drive_ = 0;
  Superblock sb_;
  bool appendable_ = false;
  int active_ = 0;
  uint64_t epoch_ = 0;
  uint64_t tail_ = kDriveHeaderBytes;  // offset in the active area of the next record
  uint64_t last_link_ = 0;             // checksum of the last record (the nonce when none)
  std::vector<uint8_t> tail_block_;    // bytes of the tail's 4 KiB block before the tail

  // An append in preparation.
  AlignedBuffer append_buf_;
  uint64_t pending_tail_ = 0;
  uint64_t pending_link_ = 0;
  uint64_t pending_block_start_ = 0;

  // A checkpoint in preparation.
  AlignedBuffer checkpoint_buf_;
  AlignedBuffer header_buf_;
  uint64_t checkpoint_epoch_ = 0;
  uint64_t checkpoint_tail_ = 0;
  uint64_t checkpoint_link_ = 0;
};

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_DRIVE_JOURNAL_H_
