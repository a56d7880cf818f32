// TieredStore, part three: values moved to and from the drives in pieces
// (tiered_store.h, "Values in pieces"). Each call queues one step on the I/O
// threads and posts its completion to the caller's inbox.
#include <memory>
#include <optional>
#include <utility>

#include "tier/tiered_store.h"

namespace memkv::tier {

bool TieredStore::StreamsPut(uint64_t size) const {
  return drives_ != nullptr && size > memory_->pool_bytes() / 4;
}

void TieredStore::BeginStreamPut(std::string key, uint64_t size, const PutOptions& options, QuotaHold hold,
                                 const ReplyTo& reply, StreamDone done) {
  struct Begin {
    std::shared_ptr<ValueStream> stream;
    Status status;
  };
  auto begin = std::make_shared<Begin>();
  begin->stream = std::shared_ptr<ValueStream>(new ValueStream(std::move(key), size));
  begin->stream->options_ = options;
  begin->stream->hold_ = std::move(hold);
  RunOnDrives(
      1,
      [this, begin](size_t) {
        ValueStream& s = *begin->stream;
        begin->status = WithDriveRoom(s.key_, s.size(), s.hold_, [&]() -> Status {
          const drive::ValueAttrs attrs = DriveAttrs(s.options_);
          MEMKV_ASSIGN_OR_RETURN(s.writer_, drives_->BeginPut(s.key_, s.size(), &attrs));
          return Status::Ok();
        });
      },
      reply,
      [begin, done = std::move(done)]() mutable {
        if (!begin->status.ok()) {
          done(std::move(begin->status));
          return;
        }
        done(std::move(begin->stream));
      });
}

void TieredStore::MoveStreamPiece(std::shared_ptr<ValueStream> stream, const ReplyTo& reply, StatusDone done) {
  auto status = std::make_shared<Status>();
  RunOnDrives(
      1,
      [stream, status](size_t) {
        ValueStream& s = *stream;
        const iovec piece{s.window(), s.next_piece()};
        *status = s.is_put() ? s.writer_->Write(std::span<const iovec>(&piece, 1))
                             : s.reader_->Read(std::span<const iovec>(&piece, 1));
        if (status->ok()) {
          s.moved_ += piece.iov_len;
          s.last_piece_ = piece.iov_len;
        }
      },
      reply, [status, done = std::move(done)]() mutable { done(std::move(*status)); });
}

void TieredStore::FinishStreamPut(std::shared_ptr<ValueStream> stream, uint64_t checksum, const ReplyTo& reply,
                                  StatusDone done) {
  auto status = std::make_shared<Status>();
  RunOnDrives(
      1,
      [this, stream, checksum, status](size_t) {
        ValueStream& s = *stream;
        // Under the key's lock, so that DRAM never keeps a value older than
        // the one the drives now hold.
        const KeyLocks::Held held = key_locks_.Lock(s.key_);
        const std::optional<uint64_t> replaced = ReplacedOnDrives(s.key_);
        *status = s.writer_->Finish(checksum);
        if (status->ok()) {
          NoteDrivePut(s.key_, s.size(), s.options_, replaced);
          s.hold_.Release();  // the tenant's drive bytes count it now
          (void)memory_->Delete(s.key_);  // Ok, or NotFound when DRAM had none: no older copy either way
        } else {
          write_failures_.fetch_add(1, std::memory_order_relaxed);
        }
        s.writer_.reset();  // frees the extents of a put not published
      },
      reply, [status, done = std::move(done)]() mutable { done(std::move(*status)); });
}

}  // namespace memkv::tier
