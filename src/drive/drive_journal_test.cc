#include "drive/drive_journal.h"

#include <gtest/gtest.h>

#include <cstring>

#include "drive/drive_file.h"
#include "drive/test_util.h"

namespace memkv::drive {
namespace {

class DriveJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto f = DriveFile::Open(dir_.File("j"), {.create_bytes = 4 << 20});
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    file_ = std::move(f).value();
    sb_.store_uuid = Uuid::Random();
    sb_.drive_uuid = Uuid::Random();
    sb_.journal_offset = kDriveHeaderBytes;
    sb_.journal_area_bytes = 64 << 10;
    io_ = CreateSyncIoEngine({file_.fd()});
    auto buf = AlignedBuffer::Allocate(2 * kDriveHeaderBytes);
    ASSERT_TRUE(buf.ok());
    DriveJournal::EncodeFresh(sb_, std::span<uint8_t, kDriveHeaderBytes>(buf->data(), kDriveHeaderBytes),
                              std::span<uint8_t, kDriveHeaderBytes>(buf->data() + kDriveHeaderBytes, kDriveHeaderBytes));
    ASSERT_TRUE(file_.WriteAt(sb_.journal_area_offset(0), std::span(buf->data(), kDriveHeaderBytes)).ok());
    ASSERT_TRUE(file_.WriteAt(sb_.journal_area_offset(1), std::span(buf->data() + kDriveHeaderBytes, kDriveHeaderBytes)).ok());
  }

  static JournalRecord Put(uint64_t seq, const std::string& key, uint64_t slot) {
    JournalRecord r;
    r.type = RecordType::kPut;
    r.sequence = seq;
    r.generation = seq;
    r.key = key;
    r.value_bytes = 100;
    r.extents = {{.drive = 0, .unit = slot, .units = 1}};
    return r;
  }

  Result<ReplayedJournal> Reopen() {
    journal_ = DriveJournal(0, sb_);
    return journal_.Replay(*io_);
  }

  void Append(std::vector<JournalRecord> recs) {
    IoOp op;
    ASSERT_TRUE(journal_.PrepareAppend(recs, &op).ok());
    io_->Run(std::span(&op, 1));
    ASSERT_TRUE(op.ok());
    journal_.FinishAppend();
  }

  TempDir dir_;
  DriveFile file_;
  Superblock sb_;
  std::unique_ptr<IoEngine> io_;
  DriveJournal journal_;
};

TEST_F(DriveJournalTest, FreshJournalReplaysEmpty) {
  auto r = Reopen();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->records.empty());
  EXPECT_EQ(r->epoch, 1u);
  EXPECT_EQ(r->used_bytes, kDriveHeaderBytes);
}

TEST_F(DriveJournalTest, AppendsSurviveReopenInOrder) {
  ASSERT_TRUE(Reopen().ok());
  Append({Put(1, "a", 0), Put(2, "b", 1)});
  Append({Put(3, "c", 2)});  // rewrites the tail block, keeping a and b
  for (int i = 4; i < 200; ++i) Append({Put(uint64_t(i), "k" + std::to_string(i), uint64_t(i))});
  auto r = Reopen();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->records.size(), 199u);
  for (size_t i = 0; i < r->records.size(); ++i) EXPECT_EQ(r->records[i].sequence, i + 1);
  EXPECT_EQ(r->records[2].key, "c");
  // And appending after a replay continues the chain.
  Append({Put(200, "z", 7)});
  r = Reopen();
  ASSERT_EQ(r->records.size(), 200u);
  EXPECT_EQ(r->records.back().key, "z");
}

TEST_F(DriveJournalTest, TornTailEndsTheLogAndIsOverwrittenCleanly) {
  ASSERT_TRUE(Reopen().ok());
  Append({Put(1, "a", 0)});
  const uint64_t tail = journal_.used_bytes();
  Append({Put(2, "b-unacknowledged", 1), Put(3, "c-unacknowledged", 2)});
  // The crash tore the second batch: its first record's bytes are damaged,
  // the record after it landed intact.
  const uint64_t at = sb_.journal_area_offset(0) + tail;
  std::vector<uint8_t> block = ReadRaw(file_.path(), at / 4096 * 4096, 4096);
  ASSERT_EQ(block.size(), 4096u);
  block[at % 4096 + 20] ^= 0xff;
  WriteRaw(file_.path(), at / 4096 * 4096, block);

  auto r = Reopen();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->records.size(), 1u) << "the intact record after the torn one is not taken";
  EXPECT_EQ(journal_.used_bytes(), tail);
  // The next session appends a shorter record where the torn one was; the
  // old intact record behind it must stay dead (the chain links say so).
  Append({Put(2, "x", 5)});
  r = Reopen();
  ASSERT_EQ(r->records.size(), 2u);
  EXPECT_EQ(r->records[1].key, "x");
}

TEST_F(DriveJournalTest, CheckpointSwitchesAreasOnlyWhenItsHeaderLands) {
  ASSERT_TRUE(Reopen().ok());
  for (int i = 1; i <= 10; ++i) Append({Put(uint64_t(i), "k" + std::to_string(i), uint64_t(i))});
  std::vector<JournalRecord> live = {Put(11, "k9", 9), Put(12, "k10", 10)};
  std::vector<IoOp> writes;
  IoOp header;
  ASSERT_TRUE(journal_.PrepareCheckpoint(live, 13, 13, &writes, &header).ok());
  io_->Run(writes);
  // Crash before the header: the old area is still the log.
  auto r = Reopen();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->records.size(), 10u);
  EXPECT_EQ(r->epoch, 1u);

  ASSERT_TRUE(journal_.PrepareCheckpoint(live, 13, 13, &writes, &header).ok());
  io_->Run(writes);
  io_->Run(std::span(&header, 1));
  ASSERT_TRUE(header.ok());
  journal_.FinishCheckpoint();
  Append({Put(13, "k13", 13)});
  r = Reopen();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->epoch, 2u);
  EXPECT_EQ(r->base_sequence, 13u);
  ASSERT_EQ(r->records.size(), 3u);
  EXPECT_EQ(r->records[0].key, "k9");
  EXPECT_EQ(r->records[2].key, "k13");

  // A second checkpoint goes back to area 0, whose old records must not
  // come back behind the new ones.
  ASSERT_TRUE(journal_.PrepareCheckpoint({}, 20, 20, &writes, &header).ok());
  io_->Run(writes);
  io_->Run(std::span(&header, 1));
  journal_.FinishCheckpoint();
  r = Reopen();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->epoch, 3u);
  EXPECT_TRUE(r->records.empty());
}

TEST_F(DriveJournalTest, FullAreaIsResourceExhausted) {
  ASSERT_TRUE(Reopen().ok());
  Status s;
  int appended = 0;
  for (int i = 1; i < 10000 && s.ok(); ++i) {
    IoOp op;
    s = journal_.PrepareAppend(std::vector<JournalRecord>{Put(uint64_t(i), std::string(200, 'k'), 1)}, &op);
    if (!s.ok()) break;
    io_->Run(std::span(&op, 1));
    journal_.FinishAppend();
    appended++;
  }
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_GT(appended, 100);
  auto r = Reopen();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->records.size(), size_t(appended));
  std::vector<IoOp> writes;
  IoOp header;
  std::vector<JournalRecord> too_many(appended + 50, Put(1, std::string(200, 'k'), 1));
  EXPECT_EQ(journal_.PrepareCheckpoint(too_many, 1, 1, &writes, &header).code(), StatusCode::kResourceExhausted);
}

TEST_F(DriveJournalTest, ForeignOrMissingHeadersAreCorruption) {
  auto zero = AlignedBuffer::Allocate(kDriveHeaderBytes);
  ASSERT_TRUE(zero.ok());
  ASSERT_TRUE(file_.WriteAt(sb_.journal_area_offset(0), zero->span()).ok());
  auto r = Reopen();
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace memkv::drive
