// The memkv side of memkv-drive-bench: timed put and get cells of one value
// size on an ExtentStore freshly formatted on the scratch file.
//
// Open() formats (force) and opens the store on the file, sizes the working
// set to what the file holds and fills every key once (untimed). Put(N) is a
// timed cell of N threads calling Put in a loop, keys cycling over the
// working set, so every put replaces a value. Verify() reads every key back
// byte for byte (untimed). Get(N) is a timed cell of N threads calling
// GetInto into their own buffers, each value's length and first and last 8
// bytes checked. Destroying the StoreBench closes the store.
//
// Timing is bench/measure.h's, the same as memkv-bench's.
// Thread-safety: call from one thread; the cells start their own threads.
#ifndef MEMKV_BENCH_STORE_CELLS_H_
#define MEMKV_BENCH_STORE_CELLS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/measure.h"
#include "bench/payload.h"
#include "memkv/status.h"

namespace memkv::drive {
class ExtentStore;
}

namespace memkv::bench {

struct StoreSpec {
  std::string path;               // the scratch file
  uint64_t block_size_bytes = 0;  // storage.block_size
  uint64_t size_bytes = 0;        // value size
  uint32_t max_queue_depth = 1;   // the most threads any cell will run
  double seconds = 1.0;
};

struct StoreCell {
  CellResult result;
  uint64_t journal_commits = 0;  // put cells: journal writes during the cell
};

// The store's options the bench uses (ExtentStoreOptions' defaults), for the report.
struct StoreTuning {
  uint32_t queue_depth = 0;
  uint32_t io_buffers = 0;
};
StoreTuning DefaultStoreTuning();

class StoreBench {
 public:
  // Non-Ok when the store cannot be formatted or opened, or the file is too
  // small for this size at the largest queue depth (the message says to pass
  // a larger --file-size). Fill failures are counted in fill_errors().
  static Result<std::unique_ptr<StoreBench>> Open(const StoreSpec& spec);
  ~StoreBench();
  StoreBench(const StoreBench&) = delete;
  StoreBench& operator=(const StoreBench&) = delete;

  StoreCell Put(uint32_t queue_depth);
  StoreCell Get(uint32_t queue_depth);
  // Reads every key back; returns how many were not byte-exact or not readable.
  uint64_t Verify();

  uint64_t working_set_keys() const { return payloads_.keys(); }
  uint64_t fill_errors() const { return fill_errors_; }
  // "io_uring" or "pread", as the store's Stats() says.
  std::string io_engine() const;

 private:
  StoreBench(const StoreSpec& spec, std::unique_ptr<drive::ExtentStore> store, uint64_t keys);
  DriveSpec Spec(const char* op, uint32_t queue_depth) const;

  StoreSpec spec_;
  std::unique_ptr<drive::ExtentStore> store_;
  Payloads payloads_;
  std::vector<std::string> names_;  // key i is names_[i]
  uint64_t fill_errors_ = 0;
};

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_STORE_CELLS_H_
