// What memkv-drive-bench prints and writes: the facts of the run (commit,
// build, machine, the scratch file's filesystem and device, the store's
// settings, fio's version), one table per op with memkv beside fio, and the
// JSON file with every cell and every fio command line.
//
// Plain functions over plain structs; called from main's thread only.
#ifndef MEMKV_BENCH_DRIVE_REPORT_H_
#define MEMKV_BENCH_DRIVE_REPORT_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "bench/fio_reference.h"
#include "bench/measure.h"
#include "bench/report.h"
#include "bench/store_cells.h"
#include "memkv/status.h"

namespace memkv::bench {

struct DriveFacts {
  RunFacts run;               // commit, build, CPU, cores, kernel, start time
  std::string storage;        // DescribeStorage() of the scratch file
  std::string file_path;      // the store's
  std::string fio_file_path;  // the twin fio writes to; empty with --no-fio
  uint64_t file_size_bytes = 0;
  double initial_write_mib_per_s = 0;  // of the store's file
  uint32_t repeat = 1;
  std::string fio_pattern;        // "sequential" or "random"
  bool fio_registered = false;    // fio ran with --fixedbufs --registerfiles
  bool each_sync = false;         // --each-sync: the per-put durable references ran
  uint64_t block_size_bytes = 0;  // storage.block_size
  std::string io_engine;          // the store's, as Stats() names it
  StoreTuning tuning;
  std::string fio_version;  // empty with --no-fio
  double seconds_per_cell = 0;
};

// One row of a table: one op at one value size and queue depth.
// memkv errors are summed over all repetitions.
struct DriveRow {
  std::string op;  // "put" or "get"
  uint64_t size_bytes = 0;
  uint32_t queue_depth = 0;
  // Each the median-throughput repetition of its side.
  std::optional<CellResult> memkv;
  uint64_t journal_commits = 0;                             // put: journal writes during memkv's median repetition
  std::optional<FioResult> fio;                             // put: fio write; get: fio read
  std::optional<FioResult> fio_sync;                        // put: fio write --fdatasync=1
  // put, with --each-sync: the per-put durable references (bench/each_sync.h).
  std::optional<FioResult> each_sync, each_sync_record;
  std::vector<double> memkv_mibs, fio_mibs, fio_sync_mibs;  // every repetition's MiB/s
  std::vector<double> each_sync_mibs, each_sync_record_mibs;
  uint64_t fio_errors = 0;                                  // reference runs of this row that failed
  uint64_t working_set_keys = 0;
  uint64_t keys_verified = 0;  // the verify pass of this size (on its first row)
  uint64_t verify_errors = 0;
  uint64_t Errors() const;
};

void PrintDriveFacts(std::FILE* out, const DriveFacts& facts);
// The put table (when any row is a put) and the get table, then the range of
// each ratio column.
void PrintDriveTables(std::FILE* out, const std::vector<DriveRow>& rows);
// "put 1 MiB qd4: memkv 1234.5 MiB/s, fio 2345.6 MiB/s (0.53x)"
void PrintDriveProgress(std::FILE* out, const DriveRow& row);

Status WriteDriveJson(const std::string& path, const DriveFacts& facts, const std::vector<DriveRow>& rows,
                      uint64_t total_errors);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_DRIVE_REPORT_H_
