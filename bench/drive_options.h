// memkv-drive-bench command line: which sizes and queue depths to sweep, on
// which scratch file, and whether to run fio beside it.
//
// Plain values; ParseDriveOptions is pure (no environment, no I/O), so main
// decides the defaults that come from the environment (TMPDIR).
#ifndef MEMKV_BENCH_DRIVE_OPTIONS_H_
#define MEMKV_BENCH_DRIVE_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memkv::bench {

struct DriveBenchOptions {
  std::string dir;                         // scratch directory's parent; empty: $TMPDIR or /tmp
  uint64_t file_size_bytes = 4ULL << 30;   // the store's file and fio's file
  uint64_t block_size_bytes = 4ULL << 20;  // storage.block_size of the store
  std::vector<uint64_t> sizes_bytes;       // value sizes swept, in order
  std::vector<uint32_t> queue_depths;      // concurrent callers (threads) swept
  double seconds = 1.0;                    // time budget of one timed cell
  uint32_t repeat = 1;                     // repetitions of every cell; the median is shown
  std::string json_path = "drive-bench-results.json";
  bool fio = true;               // --no-fio: memkv alone
  std::string fio_path = "fio";  // looked up on PATH unless it has a '/'
  bool fio_random = false;       // fio randwrite/randread instead of write/read
  bool fio_registered = true;    // fio --fixedbufs --registerfiles (main may clear it)
  bool each_sync = false;        // the per-put durable references (bench/each_sync.h)
  bool put = true;               // --ops
  bool get = true;
};

inline constexpr const char* kDriveUsage = R"(Usage: memkv-drive-bench [options]

Measures the drive tier (drive::ExtentStore in file mode, O_DIRECT, io_uring) put and
get throughput for each value size x queue depth, and in the same run fio with
the io_uring engine, the same block size and queue depth as the reference:
fio reads the store's own file, fio writes go to a twin of it (same
filesystem, same size, written the same way). Every memkv cell is followed at
once by its fio cells. Prints the machine, a table per op with the memkv/fio
ratio, and writes every cell as JSON.

Queue depth N = N threads calling Put (or GetInto) at once on one store; fio
gets --iodepth=N on one job. Put is durable when it returns (extents written,
then a journal record written, then one fdatasync covering both), so put is
compared with both a plain fio write and fio --fdatasync=1.

Options:
  --dir DIR          where the scratch directories go (default $TMPDIR or /tmp);
                     its filesystem must support O_DIRECT
  --file-size SIZE   size of the store's file and of fio's, each written once
                     before the sweep (default 4GiB)
  --block-size SIZE  storage.block_size of the store (default 4MiB)
  --sizes LIST       value sizes = fio block sizes (default
                     64KiB,256KiB,1MiB,4MiB,16MiB)
  --qd LIST          queue depths (default 1,4,16)
  --seconds S        time budget of each timed cell, memkv and fio (default 1.0)
  --repeat N         run every cell N times, memkv and fio alternating, and
                     show the median (default 1); use 3 or more on a machine
                     that is not quiet
  --ops LIST         put,get (default both; get alone fills the keys untimed)
  --json PATH        results file (default drive-bench-results.json)
  --fio PATH         fio binary (default: fio on PATH)
  --fio-random       fio --rw=randwrite|randread instead of write|read
  --fio-unregistered fio without --fixedbufs --registerfiles (the default
                     registers both, as the store does, when the memlock
                     limit allows it)
  --no-fio           measure memkv alone (no reference, no ratio)
  --each-sync        also, after each put cell, the per-put durable references
                     on the twin file: one thread, io_uring, qd puts in flight,
                     each its value's write then an fdatasync of its own, and
                     again with a 4 KiB record block of its own written beside
                     each value (a journal with a lane per put). A put counts
                     when its own fdatasync returns, where fio --fdatasync=1
                     counts a write when it completes and queues its syncs
                     beside the writes in flight
  --help             this text

Exit status: 0 when every operation succeeded, every value read back was
byte-exact and every fio run succeeded; 1 when anything failed (each failure
is printed on stderr); 2 on a usage error.
)";

// Parses argv[1..]. On a usage error returns nullopt and sets *error; --help
// sets *help and returns the defaults.
std::optional<DriveBenchOptions> ParseDriveOptions(const std::vector<std::string>& args, bool* help,
                                                   std::string* error);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_DRIVE_OPTIONS_H_
