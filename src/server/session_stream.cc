// Session, part four: values in pieces (session.h). A put the store
// takes in pieces is received a window at a time and each window written to
// the drives before the next is read; a streamed get is sent a window at a
// time, each read from the drives once the last has left.
#include <string>
#include <utility>

#include "base/log.h"
#include "server/session.h"

namespace memkv::server {

// The payload waits in the socket while the drives make room for it.
void Session::BeginStreamPut(std::string key, QuotaHold hold) {
  sink_ = PayloadSink();
  payload_iov_.clear();
  payload_first_ = 0;
  payload_left_ = cur_.payload_len;
  state_ = ReadState::kPayload;
  Await(tier::Completion::kPending);
  ctx_.store->BeginStreamPut(std::move(key), cur_.payload_len, PutOptions{}, std::move(hold), reply_,
                             [this](Result<std::shared_ptr<tier::ValueStream>> stream) {
                               if (!stream.ok()) {
                                 OnStreamPieceWritten(stream.status());
                                 return;
                               }
                               put_stream_ = std::move(stream).value();
                               ReceiveIntoWindow();
                             });
}

void Session::ReceiveIntoWindow() {
  payload_iov_.assign(1, iovec{put_stream_->window(), put_stream_->next_piece()});
  payload_first_ = 0;
}

void Session::OnStreamPieceWritten(Status written) {
  if (!written.ok()) {
    // The put is lost (its extents are freed with the stream): the rest of
    // the payload is read and dropped, and the put answered with why.
    put_stream_.reset();
    sink_.frame_error = std::move(written);
    payload_iov_.clear();
    payload_first_ = 0;
    AddDiscard(payload_left_);
    if (payload_left_ == 0) EndPayload();
    return;
  }
  if (payload_left_ > 0) {
    ReceiveIntoWindow();
    return;
  }
  state_ = ReadState::kHeader;
  FrameDone();
  FinishStreamPut();
}

void Session::FinishStreamPut() {
  std::shared_ptr<tier::ValueStream> stream = std::move(put_stream_);
  const uint64_t size = stream->size();
  Await(tier::Completion::kPending);
  ctx_.store->FinishStreamPut(stream, cur_.payload_checksum, reply_, [this, size, stream](Status s) {
    if (s.code() == StatusCode::kInvalidArgument) {  // the bytes are not what the client hashed
      ctx_.metrics->payload_checksum_failures.Add(1);
      Fail(Corruption("payload of " + std::to_string(size) + " bytes does not match its checksum; nothing was stored"));
      return;
    }
    if (s.ok()) {
      ctx_.metrics->op(cur_.opcode).value_bytes.Add(size);
      CountStored(stream->key(), size);
    }
    RespondError(s);
  });
}

void Session::BeginStreamGet(tier::StoredValue value) {
  get_stream_ = value.stream();
  Respond(StatusCode::kOk, "", {}, {}, value.checksum(), value.size());
  ContinueStreamGet();
}

void Session::ContinueStreamGet() {
  if (!out_.empty()) return;  // the last window is still leaving
  if (get_stream_->left() == 0) {
    get_stream_.reset();  // sent whole: requests are read again
    return;
  }
  Await(tier::Completion::kPending);
  ctx_.store->MoveStreamPiece(get_stream_, reply_, [this](Status s) { OnStreamPieceRead(std::move(s)); });
}

void Session::OnStreamPieceRead(Status read) {
  if (!read.ok()) {
    // The header promised the whole value: there is no answer left to give
    // but a short one. The client sees the connection close mid-payload;
    // a value that failed its checksum is dropped already.
    LOG_WARN_EVERY_C("server", 10) << "closing " << peer_ << " mid-way through a value sent in pieces: "
                                   << read.ToString();
    get_stream_.reset();
    closing_ = true;
    return;
  }
  OutFrame frame;  // no head: the rest of the payload
  frame.iov.push_back(iovec{get_stream_->window(), get_stream_->last_piece()});
  Queue(std::move(frame));
}

}  // namespace memkv::server
