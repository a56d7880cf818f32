#include "bench/store_cells.h"

#include <algorithm>

#include "base/units.h"
#include "drive/extent_store.h"

namespace memkv::bench {
namespace {

constexpr uint32_t kUntimedThreads = 4;  // fill and verify passes

// Per-thread position in the key cycle, on its own cache line.
struct alignas(64) Cursor {
  uint64_t next = 0;
};

// Thread t's j-th key is (t + j * qd) mod keys: the threads walk the working
// set together without sharing a counter.
uint64_t NextKey(Cursor& c, uint32_t thread, uint32_t qd, uint64_t keys) { return (thread + (c.next++) * qd) % keys; }

}  // namespace

StoreTuning DefaultStoreTuning() {
  drive::ExtentStoreOptions defaults;
  return StoreTuning{.queue_depth = defaults.queue_depth, .io_buffers = defaults.io_buffers};
}

Result<std::unique_ptr<StoreBench>> StoreBench::Open(const StoreSpec& spec) {
  drive::DriveFormatOptions format;
  format.drives = {spec.path};
  format.block_size_bytes = spec.block_size_bytes;
  format.force = true;  // the previous size's store
  MEMKV_RETURN_IF_ERROR(drive::ExtentStore::Format(format).WithContext("formatting " + spec.path));
  drive::ExtentStoreOptions open;
  open.drives = {spec.path};
  Result<std::unique_ptr<drive::ExtentStore>> store = drive::ExtentStore::Open(open);
  if (!store.ok()) return store.status().WithContext("opening the store on " + spec.path);

  // Every put allocates its extents before the value it replaces is freed,
  // so each concurrent caller needs one value's extents of headroom.
  const drive::ExtentStoreStats stats = (*store)->Stats();
  const uint64_t slots = stats.drives.empty() ? 0 : stats.drives[0].slots_total;
  const uint64_t extents = (spec.size_bytes + spec.block_size_bytes - 1) / spec.block_size_bytes;
  const uint64_t fit = slots / extents;
  if (fit < 2ULL * spec.max_queue_depth) {
    return ResourceExhausted("the store on " + spec.path + " holds " + std::to_string(slots) + " extents of " +
                             FormatSize(spec.block_size_bytes) + "; " + FormatSize(spec.size_bytes) + " values at qd " +
                             std::to_string(spec.max_queue_depth) + " need " +
                             std::to_string(2ULL * spec.max_queue_depth * extents) + ": pass a larger --file-size");
  }
  std::unique_ptr<StoreBench> bench(new StoreBench(spec, std::move(*store), fit - spec.max_queue_depth));
  bench->fill_errors_ = ForEachItem(
      kUntimedThreads, bench->working_set_keys(), "fill " + FormatSize(spec.size_bytes),
      [&](uint32_t, uint64_t i) { return bench->store_->Put(bench->names_[i], bench->payloads_.Value(i)); });
  return bench;
}

StoreBench::StoreBench(const StoreSpec& spec, std::unique_ptr<drive::ExtentStore> store, uint64_t keys)
    : spec_(spec),
      store_(std::move(store)),
      payloads_(spec.size_bytes, keys, std::max(spec.max_queue_depth, kUntimedThreads)) {
  names_.reserve(keys);
  for (uint64_t i = 0; i < keys; ++i) names_.push_back("value-" + std::to_string(i));
}

StoreBench::~StoreBench() = default;

DriveSpec StoreBench::Spec(const char* op, uint32_t qd) const {
  return DriveSpec{
      .threads = qd,
      .seconds = spec_.seconds,
      .bytes_per_op = spec_.size_bytes,
      .what = std::string("memkv ") + op + " " + FormatSize(spec_.size_bytes) + " qd" + std::to_string(qd)};
}

StoreCell StoreBench::Put(uint32_t qd) {
  std::vector<Cursor> cursors(qd);
  const uint64_t commits_before = store_->Stats().journal_commits;
  StoreCell cell;
  cell.result = Drive(Spec("put", qd), nullptr, [&](uint32_t t) {
    const uint64_t k = NextKey(cursors[t], t, qd, working_set_keys());
    return store_->Put(names_[k], payloads_.Value(k));
  });
  cell.journal_commits = store_->Stats().journal_commits - commits_before;
  return cell;
}

StoreCell StoreBench::Get(uint32_t qd) {
  std::vector<Cursor> cursors(qd);
  StoreCell cell;
  cell.result = Drive(Spec("get", qd), nullptr, [&](uint32_t t) -> Status {
    const uint64_t k = NextKey(cursors[t], t, qd, working_set_keys());
    std::span<uint8_t> buf = payloads_.Buffer(t);
    Result<size_t> n = store_->GetInto(names_[k], buf);
    if (!n.ok()) return n.status();
    if (*n != spec_.size_bytes || !payloads_.QuickCheck(k, buf.first(*n))) {
      return Corruption("value " + names_[k] + " read back differs from what was put");
    }
    return Status::Ok();
  });
  return cell;
}

uint64_t StoreBench::Verify() {
  return ForEachItem(kUntimedThreads, working_set_keys(), "verify " + FormatSize(spec_.size_bytes),
                     [&](uint32_t t, uint64_t i) -> Status {
                       std::span<uint8_t> buf = payloads_.Buffer(t);
                       Result<size_t> n = store_->GetInto(names_[i], buf);
                       if (!n.ok()) return n.status();
                       if (*n != spec_.size_bytes || !payloads_.FullCheck(i, buf.first(*n))) {
                         return Corruption("value " + names_[i] + " read back differs from what was put");
                       }
                       return Status::Ok();
                     });
}

std::string StoreBench::io_engine() const { return store_->Stats().io_engine; }

}  // namespace memkv::bench
