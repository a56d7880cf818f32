// The drive sweep: every value size x queue depth, memkv's ExtentStore and
// fio side by side. fio writes go to a twin of the store's file (they would
// destroy the store); fio reads read the store's own file, live.
//
// Per size, the store is formatted afresh and filled (store_cells.h). Then
// per queue depth, --repeat times: a memkv put cell, at once followed by fio
// write and fio write --fdatasync=1 cells and, with --each-sync, the two
// per-put durable reference cells (bench/each_sync.h) on the twin; the
// verify pass; then per queue depth, --repeat times: a memkv get cell
// followed by a fio read cell. memkv and its references thus alternate cell
// by cell, so the drift of a shared machine hits both alike. A row shows
// each side's median-throughput repetition.
//
// Runs on main's thread; the cells start their own threads, fio its process.
#ifndef MEMKV_BENCH_DRIVE_SWEEP_H_
#define MEMKV_BENCH_DRIVE_SWEEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "bench/drive_options.h"
#include "bench/drive_report.h"
#include "bench/scratch_file.h"

namespace memkv::bench {

struct DriveSweep {
  std::vector<DriveRow> rows;
  uint64_t errors = 0;    // failed operations, values not read back byte-exact, failed fio runs or sizes
  std::string io_engine;  // the store's, from the last size measured
};

// Where fio writes its JSON report: beside `fio_file`.
std::string FioReportPath(const ScratchFile& fio_file);

// `fio_file` (the twin) is null with --no-fio unless --each-sync asks for it.
// `progress`: a line per row on stderr.
DriveSweep RunDriveSweep(const DriveBenchOptions& options, const ScratchFile& store_file, const ScratchFile* fio_file,
                         bool progress);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_DRIVE_SWEEP_H_
