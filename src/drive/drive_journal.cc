#include "drive/drive_journal.h"

#include <sys/random.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "base/bytes.h"

namespace memkv::drive {
namespace {

constexpr uint64_t kBlock = kDriveHeaderBytes;
constexpr size_t kReplayChunkBytes = 1 << 20;
constexpr uint32_t kMaxWriteBytes = 4u << 20;  // a checkpoint is written in pieces of this

uint64_t RoundUp(uint64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }
uint64_t RoundDown(uint64_t n) { return n / kBlock * kBlock; }

uint64_t RandomNonce() {
  Uuid u = Uuid::Random();
  return LoadLe64(u.bytes.data()) ^ LoadLe64(u.bytes.data() + 8);
}

Status EnsureSize(AlignedBuffer* buf, size_t size) {
  if (buf->size() >= size) return Status::Ok();
  size_t want = std::max<size_t>(RoundUp(size), 2 * buf->size());
  MEMKV_ASSIGN_OR_RETURN(*buf, AlignedBuffer::Allocate(want));
  return Status::Ok();
}

}  // namespace

DriveJournal::DriveJournal(uint32_t drive, const Superblock& sb) : drive_(drive), sb_(sb) {}

void DriveJournal::EncodeFresh(const Superblock& sb, std::span<uint8_t, kDriveHeaderBytes> area0,
                               std::span<uint8_t, kDriveHeaderBytes> area1) {
  JournalAreaHeader h;
  h.epoch = 1;
  h.nonce = RandomNonce();
  h.store_uuid = sb.store_uuid;
  h.drive_uuid = sb.drive_uuid;
  h.base_sequence = 1;
  h.base_generation = 1;
  EncodeJournalAreaHeader(h, area0);
  std::memset(area1.data(), 0, area1.size());
}

Result<ReplayedJournal> DriveJournal::Replay(IoEngine& io) {
  appendable_ = false;
  MEMKV_ASSIGN_OR_RETURN(AlignedBuffer headers, AlignedBuffer::Allocate(2 * kBlock));
  IoOp ops[2];
  for (int a = 0; a < 2; ++a) {
    ops[a] = IoOp{.kind = IoKind::kRead, .drive = drive_, .offset = AreaOffset(a),
                  .buf = headers.data() + a * kBlock, .length = uint32_t(kBlock)};
  }
  io.Run(ops);
  for (const IoOp& op : ops) {
    if (!op.ok()) {
      return IoError("reading journal area header at " + std::to_string(op.offset) + ": errno " +
                     std::to_string(op.error()));
    }
  }
  int active = -1;
  JournalAreaHeader header;
  for (int a = 0; a < 2; ++a) {
    auto h = DecodeJournalAreaHeader(std::span<const uint8_t>(headers.data() + a * kBlock, kBlock));
    if (!h.ok()) {
      if (h.status().code() == StatusCode::kUnsupportedVersion) return h.status();
      continue;
    }
    if (h->store_uuid != sb_.store_uuid || h->drive_uuid != sb_.drive_uuid) continue;
    if (active < 0 || h->epoch > header.epoch) {
      active = a;
      header = *h;
    }
  }
  if (active < 0) return Corruption("no valid journal area header");

  ReplayedJournal out;
  out.epoch = header.epoch;
  out.base_sequence = header.base_sequence;
  out.base_generation = header.base_generation;

  const uint64_t area = sb_.journal_area_bytes;
  MEMKV_ASSIGN_OR_RETURN(AlignedBuffer chunk, AlignedBuffer::Allocate(kReplayChunkBytes));
  std::vector<uint8_t> window;   // bytes of the area from window_start on, not yet discarded
  uint64_t window_start = kBlock;
  uint64_t read_pos = kBlock;    // next area offset to read
  uint64_t parse_pos = kBlock;   // area offset of the next record
  uint64_t link = header.nonce;
  JournalRecord rec;
  for (;;) {
    size_t off = parse_pos - window_start;
    bool need_more = false;
    for (;;) {
      std::span<const uint8_t> rest(window.data() + off, window.size() - off);
      size_t n = 0;
      uint64_t sum = 0;
      if (DecodeRecord(rest, link, &rec, &n, &sum)) {
        out.records.push_back(std::move(rec));
        rec = JournalRecord();
        link = sum;
        off += n;
        parse_pos += n;
        continue;
      }
      // Not a record here, or not all of it read yet.
      bool more_on_drive = read_pos < area;
      if (rest.size() < kRecordHeadBytes + 8) {
        need_more = more_on_drive;
      } else if (std::memcmp(rest.data(), "MKJR", 4) == 0) {
        uint32_t len = LoadLe32(rest.data() + 8);
        need_more = more_on_drive && len > rest.size() && len <= area - parse_pos;
      }
      break;
    }
    if (!need_more) break;
    // Drop what was parsed, keeping the block the tail sits in.
    uint64_t keep_from = RoundDown(parse_pos);
    window.erase(window.begin(), window.begin() + ptrdiff_t(keep_from - window_start));
    window_start = keep_from;
    uint32_t len = uint32_t(std::min<uint64_t>(kReplayChunkBytes, area - read_pos));
    IoOp op{.kind = IoKind::kRead, .drive = drive_, .offset = AreaOffset(active) + read_pos, .buf = chunk.data(),
            .length = len};
    io.Run(std::span<IoOp>(&op, 1));
    if (!op.ok()) {
      return IoError("reading the journal at " + std::to_string(op.offset) + ": errno " + std::to_string(op.error()));
    }
    window.insert(window.end(), chunk.data(), chunk.data() + len);
    read_pos += len;
  }

  active_ = active;
  epoch_ = header.epoch;
  tail_ = parse_pos;
  last_link_ = link;
  uint64_t block_start = RoundDown(parse_pos);
  tail_block_.assign(window.begin() + ptrdiff_t(block_start - window_start),
                     window.begin() + ptrdiff_t(parse_pos - window_start));
  out.used_bytes = tail_;
  appendable_ = true;
  return out;
}

void DriveJournal::Reset() {
  appendable_ = false;
  tail_block_.clear();
}

Status DriveJournal::PrepareAppend(std::span<const JournalRecord> records, IoOp* write) {
  if (!appendable_) return FailedPrecondition("journal of drive " + std::to_string(drive_) + " is not open for appends");
  std::vector<uint8_t> encoded;
  uint64_t link = last_link_;
  for (const JournalRecord& r : records) link = EncodeRecord(r, link, &encoded);
  const uint64_t block_start = RoundDown(tail_);
  const uint64_t used = tail_ - block_start + encoded.size();
  const uint64_t write_len = RoundUp(used);
  if (block_start + write_len > sb_.journal_area_bytes) {
    return ResourceExhausted("journal area of drive " + std::to_string(drive_) + " is full");
  }
  MEMKV_RETURN_IF_ERROR(EnsureSize(&append_buf_, write_len));
  uint8_t* p = append_buf_.data();
  if (!tail_block_.empty()) std::memcpy(p, tail_block_.data(), tail_block_.size());
  if (!encoded.empty()) std::memcpy(p + tail_block_.size(), encoded.data(), encoded.size());
  std::memset(p + used, 0, write_len - used);
  pending_tail_ = tail_ + encoded.size();
  pending_link_ = link;
  pending_block_start_ = block_start;
  *write = IoOp{.kind = IoKind::kWrite, .drive = drive_, .offset = AreaOffset(active_) + block_start, .buf = p,
                .length = uint32_t(write_len)};
  return Status::Ok();
}

void DriveJournal::FinishAppend() {
  const uint64_t new_block = RoundDown(pending_tail_);
  const uint8_t* p = append_buf_.data() + (new_block - pending_block_start_);
  tail_block_.assign(p, p + (pending_tail_ - new_block));
  tail_ = pending_tail_;
  last_link_ = pending_link_;
}

Status DriveJournal::PrepareCheckpoint(std::span<const JournalRecord> records, uint64_t base_sequence,
                                       uint64_t base_generation, std::vector<IoOp>* record_writes,
                                       IoOp* header_write) {
  const int other = 1 - active_;
  JournalAreaHeader h;
  h.epoch = epoch_ + 1;
  h.nonce = RandomNonce();
  h.store_uuid = sb_.store_uuid;
  h.drive_uuid = sb_.drive_uuid;
  h.base_sequence = base_sequence;
  h.base_generation = base_generation;

  std::vector<uint8_t> encoded;
  uint64_t link = h.nonce;
  for (const JournalRecord& r : records) link = EncodeRecord(r, link, &encoded);
  const uint64_t write_len = RoundUp(encoded.size());
  if (kBlock + write_len > sb_.journal_area_bytes) {
    return ResourceExhausted("journal area of drive " + std::to_string(drive_) + " (" +
                             std::to_string(sb_.journal_area_bytes) + " bytes) cannot hold the live index (" +
                             std::to_string(encoded.size()) + " bytes)");
  }
  // At least one zeroed block, so that nothing stale follows an empty checkpoint.
  const uint64_t buf_len = std::max(write_len, kBlock);
  MEMKV_RETURN_IF_ERROR(EnsureSize(&checkpoint_buf_, buf_len));
  MEMKV_RETURN_IF_ERROR(EnsureSize(&header_buf_, kBlock));
  if (!encoded.empty()) std::memcpy(checkpoint_buf_.data(), encoded.data(), encoded.size());
  std::memset(checkpoint_buf_.data() + encoded.size(), 0, buf_len - encoded.size());
  EncodeJournalAreaHeader(h, std::span<uint8_t, kDriveHeaderBytes>(header_buf_.data(), kDriveHeaderBytes));

  record_writes->clear();
  for (uint64_t off = 0; off < buf_len; off += kMaxWriteBytes) {
    uint32_t len = uint32_t(std::min<uint64_t>(kMaxWriteBytes, buf_len - off));
    if (kBlock + off + len > sb_.journal_area_bytes) break;  // an area exactly full of records
    record_writes->push_back(IoOp{.kind = IoKind::kWrite, .drive = drive_,
                                  .offset = AreaOffset(other) + kBlock + off,
                                  .buf = checkpoint_buf_.data() + off, .length = len});
  }
  *header_write = IoOp{.kind = IoKind::kWrite, .drive = drive_, .offset = AreaOffset(other),
                       .buf = header_buf_.data(), .length = uint32_t(kBlock)};
  checkpoint_epoch_ = h.epoch;
  checkpoint_tail_ = kBlock + encoded.size();
  checkpoint_link_ = link;
  return Status::Ok();
}

void DriveJournal::FinishCheckpoint() {
  active_ = 1 - active_;
  epoch_ = checkpoint_epoch_;
  tail_ = checkpoint_tail_;
  last_link_ = checkpoint_link_;
  const uint64_t block_start = RoundDown(tail_);
  const uint8_t* p = checkpoint_buf_.data() + (block_start - kBlock);
  tail_block_.assign(p, p + (tail_ - block_start));
  appendable_ = true;
}

}  // namespace memkv::drive
