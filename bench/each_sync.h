// memkv-drive-bench's per-put durable references (--each-sync): the most any
// store can reach on this file when every put is durable before it returns.
//
// fio --fdatasync=1 is not that: fio queues a sync after every write beside
// the writes still in flight and counts a write when the write completes, so
// at a depth above 1 a counted write may not yet be covered by any sync. Here
// one thread drives io_uring with N puts in flight, file and buffers
// registered (as fio runs with --fixedbufs --registerfiles), and a put counts
// when its own fdatasync returns:
//   each-sync:   the value's write (O_DIRECT), then the put's fdatasync.
//   with record: the value's write and a 4 KiB record written to a block of
//                its own (a journal with one lane per put in flight, so no
//                block is shared with another put) in flight together, then
//                the put's fdatasync.
// Values go sequentially through the file but its last quarter (at most
// 64 MiB), where the records go round robin, one block each.
//
// Not thread-safe; runs on the caller's thread.
#ifndef MEMKV_BENCH_EACH_SYNC_H_
#define MEMKV_BENCH_EACH_SYNC_H_

#include <cstdint>
#include <string>

#include "bench/fio_reference.h"
#include "memkv/status.h"

namespace memkv::bench {

struct EachSyncJob {
  std::string path;  // a scratch file the run may overwrite (the fio twin)
  uint64_t file_size_bytes = 0;
  uint64_t value_bytes = 0;  // a multiple of 4 KiB
  uint32_t queue_depth = 1;
  double seconds = 1.0;
  bool record = false;  // with a record block per put
};

// The result in fio's terms: bytes_per_s, iops, io_bytes, runtime_s, clat
// percentiles of a whole put (write to its fdatasync's return), and command,
// a description of what ran. InvalidArgument when the file cannot hold the
// puts in flight beside the record area; IoError naming the operation and
// errno when a write or fdatasync fails.
Result<FioResult> RunEachSync(const EachSyncJob& job);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_EACH_SYNC_H_
