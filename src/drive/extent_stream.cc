// ExtentWriter and ExtentReader: a value moved to or from the drives in
// pieces (extent_store.h), over the same range writes and reads as Put and
// Get (extent_store.cc).
#include <utility>

#include "base/iov.h"
#include "drive/extent_store_impl.h"

namespace memkv::drive {
namespace {

// Every piece but the last of a value starts and ends on a unit.
Status CheckPiece(std::string_view what, std::string_view key, uint64_t done, uint64_t piece, uint64_t size) {
  if (done + piece > size) {
    return InvalidArgument(std::string(what) + " " + KeyForLog(key) + ": a piece of " + std::to_string(piece) +
                           " bytes at offset " + std::to_string(done) + " runs past the value's " +
                           std::to_string(size) + " bytes");
  }
  if (done + piece < size && piece % kDriveUnitBytes != 0) {
    return InvalidArgument(std::string(what) + " " + KeyForLog(key) + ": a piece of " + std::to_string(piece) +
                           " bytes before the value's end; pieces are multiples of " +
                           std::to_string(kDriveUnitBytes) + " bytes");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<ExtentWriter>> ExtentStore::BeginPut(std::string_view key, uint64_t size,
                                                            const ValueAttrs* attrs) {
  MEMKV_RETURN_IF_ERROR(CheckKey(key));
  Impl& s = *impl_;
  {
    MutexLock lock(s.mu);
    s.counters.puts++;
  }
  MEMKV_ASSIGN_OR_RETURN(Allocation a, s.Allocate(key, size));
  std::unique_ptr<ExtentWriter> w(new ExtentWriter(impl_.get(), std::string(key), size));
  w->allocation_ = std::make_unique<Allocation>(std::move(a));
  if (attrs != nullptr) w->attrs_ = *attrs;
  return w;
}

ExtentWriter::ExtentWriter(ExtentStore::Impl* store, std::string key, uint64_t size)
    : store_(store), key_(std::move(key)), size_(size) {}

ExtentWriter::~ExtentWriter() {
  if (allocation_ == nullptr) return;
  MutexLock lock(store_->mu);
  store_->FreeUnitsLocked(allocation_->extents);
}

Status ExtentWriter::Write(std::span<const iovec> piece) {
  if (allocation_ == nullptr) return FailedPrecondition("put " + KeyForLog(key_) + ": the writer is finished");
  const uint64_t bytes = IovBytes(piece);
  MEMKV_RETURN_IF_ERROR(CheckPiece("put", key_, written_, bytes, size_));
  bool drive_failed = false;
  MEMKV_RETURN_IF_ERROR(
      WriteValueRange(*store_, key_, piece, written_, size_, allocation_->extents,
                      ExtentStore::BuffersPut(size_), &sum_, &drive_failed, &seals_));
  written_ += bytes;
  return Status::Ok();
}

Status ExtentWriter::Finish(uint64_t checksum) {
  if (allocation_ == nullptr) return FailedPrecondition("put " + KeyForLog(key_) + ": the writer is finished");
  if (written_ != size_) {
    return FailedPrecondition("put " + KeyForLog(key_) + ": " + std::to_string(written_) + " of " +
                              std::to_string(size_) + " bytes written");
  }
  MEMKV_RETURN_IF_ERROR(ChecksumMatches(key_, size_, sum_.Digest(), checksum));
  std::unique_ptr<Allocation> a = std::move(allocation_);
  bool drive_failed = false;
  return store_->Publish(key_, *a, size_, checksum, attrs_, std::move(seals_), &drive_failed);
}

Result<std::unique_ptr<ExtentReader>> ExtentStore::BeginGet(std::string_view key) {
  MEMKV_ASSIGN_OR_RETURN(std::shared_ptr<Entry> e, PinForRead(*impl_, key));
  return std::unique_ptr<ExtentReader>(new ExtentReader(impl_.get(), std::move(e)));
}

ExtentReader::ExtentReader(ExtentStore::Impl* store, std::shared_ptr<Entry> entry)
    : store_(store), entry_(std::move(entry)) {}

ExtentReader::~ExtentReader() {
  // Given up unread: only unpins (and returns the Ok it is given).
  if (!finished_) (void)FinishRead(*store_, entry_, Status::Ok(), /*counted=*/false);
}

uint64_t ExtentReader::size() const { return entry_->value_bytes; }
uint64_t ExtentReader::checksum() const { return entry_->value_checksum; }

Status ExtentReader::Read(std::span<const iovec> piece) {
  if (finished_) return FailedPrecondition("get " + KeyForLog(entry_->key) + ": the value was read to its end");
  const uint64_t bytes = IovBytes(piece);
  MEMKV_RETURN_IF_ERROR(CheckPiece("get", entry_->key, read_, bytes, entry_->value_bytes));
  Status s = ReadValueRange(*store_, *entry_, read_, piece, &sum_);
  read_ += bytes;
  if (s.ok() && read_ < entry_->value_bytes) return s;
  if (s.ok()) s = CheckValueSum(*entry_, sum_.Digest());
  finished_ = true;
  Status finished = FinishRead(*store_, entry_, s);
  // A failed read is reported as what it was, not as FinishRead's NotFound.
  return s.ok() ? finished : s;
}

}  // namespace memkv::drive
