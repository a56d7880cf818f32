#include "bench/drive_sweep.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/units.h"
#include "bench/each_sync.h"
#include "bench/fio_reference.h"
#include "bench/store_cells.h"

namespace memkv::bench {
namespace {

enum class FioKind { kWrite, kWriteSync, kRead };

// Where fio runs: writes on the twin, reads on the store's own file (reading
// does not disturb the store, and no flock is involved), so a get and its fio
// read see the same blocks in the same state.
struct FioFiles {
  const ScratchFile* write = nullptr;
  const ScratchFile* read = nullptr;
  std::string report_path;
};

// One fio run; a failure is printed and counted in the row.
std::optional<FioResult> RunFioCell(const DriveBenchOptions& o, const FioFiles& files, FioKind kind, DriveRow* row) {
  const ScratchFile& file = kind == FioKind::kRead ? *files.read : *files.write;
  FioJob job{.fio_path = o.fio_path,
             .filename = file.path(),
             .file_size_bytes = file.size_bytes(),
             .block_size_bytes = row->size_bytes,
             .iodepth = row->queue_depth,
             .seconds = o.seconds,
             .write = kind != FioKind::kRead,
             .random = o.fio_random,
             .fdatasync = kind == FioKind::kWriteSync,
             .registered = o.fio_registered,
             .output_path = files.report_path};
  Result<FioResult> r = RunFio(job);
  if (r.ok()) return *r;
  static constexpr const char* kNames[] = {"write", "write+fdatasync", "read"};
  std::fprintf(stderr, "error: fio %s %s qd%u: %s\n", kNames[int(kind)], FormatSize(row->size_bytes).c_str(),
               row->queue_depth, r.status().ToString().c_str());
  ++row->fio_errors;
  return std::nullopt;
}

// One per-put durable reference cell on the twin (bench/each_sync.h); a
// failure is printed and counted in the row as a failed fio run is.
std::optional<FioResult> RunEachSyncCell(const DriveBenchOptions& o, const ScratchFile& twin, bool record,
                                         DriveRow* row) {
  Result<FioResult> r = RunEachSync(EachSyncJob{.path = twin.path(),
                                                .file_size_bytes = twin.size_bytes(),
                                                .value_bytes = row->size_bytes,
                                                .queue_depth = row->queue_depth,
                                                .seconds = o.seconds,
                                                .record = record});
  if (r.ok()) return *r;
  std::fprintf(stderr, "error: %s qd%u: %s\n", FormatSize(row->size_bytes).c_str(), row->queue_depth,
               r.status().ToString().c_str());
  ++row->fio_errors;
  return std::nullopt;
}

// fio's median-throughput run (nullopt when none succeeded); every
// throughput goes to *mibs in run order.
std::optional<FioResult> Median(std::vector<FioResult> runs, std::vector<double>* mibs) {
  for (const FioResult& r : runs) mibs->push_back(r.MiBPerSecond());
  if (runs.empty()) return std::nullopt;
  std::sort(runs.begin(), runs.end(),
            [](const FioResult& a, const FioResult& b) { return a.bytes_per_s < b.bytes_per_s; });
  return runs[runs.size() / 2];
}

// memkv's median cell, carrying the errors of every repetition.
void SetMemkv(std::vector<StoreCell> reps, DriveRow* row) {
  uint64_t errors = 0;
  for (const StoreCell& c : reps) errors += c.result.errors;
  for (const StoreCell& c : reps) row->memkv_mibs.push_back(c.result.MiBPerSecond());
  std::sort(reps.begin(), reps.end(),
            [](const StoreCell& a, const StoreCell& b) { return a.result.MiBPerSecond() < b.result.MiBPerSecond(); });
  const StoreCell& median = reps[reps.size() / 2];
  row->memkv = median.result;
  row->memkv->errors = errors;
  row->journal_commits = median.journal_commits;
}

// `fio` null: no fio reference; `twin` null: no per-put durable references.
DriveRow PutRow(const DriveBenchOptions& o, StoreBench& store, const FioFiles* fio, const ScratchFile* twin,
                uint64_t size, uint32_t qd) {
  DriveRow row;
  row.op = "put";
  row.size_bytes = size;
  row.queue_depth = qd;
  row.working_set_keys = store.working_set_keys();
  std::vector<StoreCell> memkv;
  std::vector<FioResult> plain, sync, each, each_record;
  for (uint32_t rep = 0; rep < o.repeat; ++rep) {
    memkv.push_back(store.Put(qd));
    if (fio != nullptr) {
      if (auto r = RunFioCell(o, *fio, FioKind::kWrite, &row)) plain.push_back(*r);
      if (auto r = RunFioCell(o, *fio, FioKind::kWriteSync, &row)) sync.push_back(*r);
    }
    if (twin != nullptr) {
      if (auto r = RunEachSyncCell(o, *twin, false, &row)) each.push_back(*r);
      if (auto r = RunEachSyncCell(o, *twin, true, &row)) each_record.push_back(*r);
    }
  }
  SetMemkv(std::move(memkv), &row);
  row.fio = Median(std::move(plain), &row.fio_mibs);
  row.fio_sync = Median(std::move(sync), &row.fio_sync_mibs);
  row.each_sync = Median(std::move(each), &row.each_sync_mibs);
  row.each_sync_record = Median(std::move(each_record), &row.each_sync_record_mibs);
  return row;
}

DriveRow GetRow(const DriveBenchOptions& o, StoreBench& store, const FioFiles* fio, uint64_t size, uint32_t qd) {
  DriveRow row;
  row.op = "get";
  row.size_bytes = size;
  row.queue_depth = qd;
  row.working_set_keys = store.working_set_keys();
  std::vector<StoreCell> memkv;
  std::vector<FioResult> read;
  for (uint32_t rep = 0; rep < o.repeat; ++rep) {
    memkv.push_back(store.Get(qd));
    if (fio == nullptr) continue;
    if (auto r = RunFioCell(o, *fio, FioKind::kRead, &row)) read.push_back(*r);
  }
  SetMemkv(std::move(memkv), &row);
  row.fio = Median(std::move(read), &row.fio_mibs);
  return row;
}

}  // namespace

std::string FioReportPath(const ScratchFile& fio_file) { return fio_file.path() + ".fio-report.json"; }

DriveSweep RunDriveSweep(const DriveBenchOptions& o, const ScratchFile& store_file, const ScratchFile* fio_file,
                         bool progress) {
  DriveSweep sweep;
  FioFiles files;
  if (fio_file != nullptr && o.fio) {
    files = FioFiles{.write = fio_file, .read = &store_file, .report_path = FioReportPath(*fio_file)};
  }
  const FioFiles* fio = files.write != nullptr ? &files : nullptr;
  const ScratchFile* twin = o.each_sync ? fio_file : nullptr;
  const uint32_t max_qd = *std::max_element(o.queue_depths.begin(), o.queue_depths.end());
  for (uint64_t size : o.sizes_bytes) {
    StoreSpec spec{.path = store_file.path(),
                   .block_size_bytes = o.block_size_bytes,
                   .size_bytes = size,
                   .max_queue_depth = max_qd,
                   .seconds = o.seconds};
    Result<std::unique_ptr<StoreBench>> store = StoreBench::Open(spec);
    if (!store.ok()) {
      std::fprintf(stderr, "error: %s: %s\n", FormatSize(size).c_str(), store.status().ToString().c_str());
      ++sweep.errors;
      continue;
    }
    sweep.io_engine = (*store)->io_engine();
    sweep.errors += (*store)->fill_errors();
    const size_t first = sweep.rows.size();
    auto add = [&](DriveRow row) {
      sweep.errors += (row.memkv ? row.memkv->errors : 0) + row.fio_errors;
      if (progress) PrintDriveProgress(stderr, row);
      sweep.rows.push_back(std::move(row));
    };
    if (o.put) {
      for (uint32_t qd : o.queue_depths) add(PutRow(o, **store, fio, twin, size, qd));
    }
    const uint64_t verify_errors = (*store)->Verify();
    sweep.errors += verify_errors;
    if (o.get) {
      for (uint32_t qd : o.queue_depths) add(GetRow(o, **store, fio, size, qd));
    }
    if (sweep.rows.size() > first) {
      sweep.rows[first].keys_verified = (*store)->working_set_keys();
      sweep.rows[first].verify_errors = verify_errors;
    }
  }
  return sweep;
}

}  // namespace memkv::bench
