// memkv-drive-bench: value size x queue depth sweep of put and get on the
// drive tier (ExtentStore, file mode), beside fio on the same file in the
// same run. See bench/drive_options.h for the flags and docs/benchmarks.md
// ("Drive tier") for how to read the output.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/units.h"
#include "bench/drive_options.h"
#include "bench/drive_report.h"
#include "bench/drive_sweep.h"
#include "bench/fio_reference.h"
#include "bench/report.h"
#include "bench/scratch_file.h"
#include "bench/store_cells.h"

#ifndef MEMKV_BUILD_TYPE
#define MEMKV_BUILD_TYPE ""
#endif
#ifndef MEMKV_SOURCE_DIR
#define MEMKV_SOURCE_DIR "."
#endif

namespace memkv::bench {
namespace {

// What OnSignal removes: an interrupted run must not leave two files of
// --file-size behind. Plain char arrays, filled before the handler is
// installed, because a handler may only make async-signal-safe calls.
constexpr size_t kMaxPathBytes = 4096;
constexpr int kMaxCleanup = 3;
char g_cleanup_files[kMaxCleanup][kMaxPathBytes];  // the files, then fio's report
char g_cleanup_dirs[kMaxCleanup][kMaxPathBytes];

void OnSignal(int sig) {
  for (int i = 0; i < kMaxCleanup; ++i) {
    if (g_cleanup_files[i][0] != '\0') ::unlink(g_cleanup_files[i]);
  }
  for (int i = 0; i < kMaxCleanup; ++i) {
    if (g_cleanup_dirs[i][0] != '\0') ::rmdir(g_cleanup_dirs[i]);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void RemoveOnSignal(const ScratchFile& store_file, const ScratchFile* fio_file) {
  std::vector<std::string> files = {store_file.path()};
  if (fio_file != nullptr) files.push_back(fio_file->path());
  if (fio_file != nullptr) files.push_back(FioReportPath(*fio_file));
  for (size_t i = 0; i < files.size() && i < kMaxCleanup; ++i) {
    const std::string dir = files[i].substr(0, files[i].rfind('/'));
    if (files[i].size() >= kMaxPathBytes) continue;
    std::snprintf(g_cleanup_files[i], kMaxPathBytes, "%s", files[i].c_str());
    std::snprintf(g_cleanup_dirs[i], kMaxPathBytes, "%s", dir.c_str());
  }
  ::signal(SIGINT, OnSignal);
  ::signal(SIGTERM, OnSignal);
}

// Finds fio and decides whether it may register its buffers. Prints why not
// on stderr; false when fio cannot run.
bool PrepareFio(DriveBenchOptions* o, DriveFacts* facts) {
  Result<std::string> version = FioVersion(o->fio_path);
  if (!version.ok()) {
    std::fprintf(stderr, "memkv-drive-bench: %s\n", version.status().ToString().c_str());
    return false;
  }
  facts->fio_version = *version;
  // fio registers iodepth buffers of the block size.
  const uint64_t max_size = *std::max_element(o->sizes_bytes.begin(), o->sizes_bytes.end());
  const uint32_t max_qd = *std::max_element(o->queue_depths.begin(), o->queue_depths.end());
  if (o->fio_registered && !CanRegisterBuffers(max_size * max_qd)) {
    std::fprintf(stderr,
                 "memkv-drive-bench: RLIMIT_MEMLOCK is below %s, so fio runs without --fixedbufs "
                 "--registerfiles (raise it with ulimit -l to compare like for like)\n",
                 FormatSize(max_size * max_qd).c_str());
    o->fio_registered = false;
  }
  return true;
}

void DescribeRun(const DriveBenchOptions& o, const ScratchFile& file, const ScratchFile* fio_file, DriveFacts* facts) {
  facts->run = GatherFacts(MEMKV_SOURCE_DIR, MEMKV_BUILD_TYPE);
  facts->storage = DescribeStorage(file.path());
  facts->file_path = file.path();
  facts->fio_file_path = fio_file != nullptr ? fio_file->path() : "";
  facts->file_size_bytes = file.size_bytes();
  facts->initial_write_mib_per_s = file.write_mib_per_s();
  facts->block_size_bytes = o.block_size_bytes;
  facts->tuning = DefaultStoreTuning();
  facts->seconds_per_cell = o.seconds;
  facts->repeat = o.repeat;
  facts->fio_pattern = o.fio_random ? "random" : "sequential";
  facts->fio_registered = o.fio_registered;
  facts->each_sync = o.each_sync;
}

int Run(DriveBenchOptions o) {
  // The store logs each format at info; the bench formats once per size.
  SetLogLevel(LogLevel::kWarn);
  if (o.dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    o.dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  DriveFacts facts;
  // Before anything is written: a missing fio should cost nothing.
  if (o.fio && !PrepareFio(&o, &facts)) return 1;
  const bool progress = ::isatty(STDERR_FILENO);
  if (progress) {
    std::fprintf(stderr, "writing the %s scratch file%s under %s...\n", FormatSize(o.file_size_bytes).c_str(),
                 o.fio || o.each_sync ? "s" : "", o.dir.c_str());
  }
  Result<ScratchFile> file = ScratchFile::Create(o.dir, "drive0", o.file_size_bytes);
  if (!file.ok()) {
    std::fprintf(stderr, "memkv-drive-bench: %s\n", file.status().ToString().c_str());
    return 1;
  }
  std::optional<ScratchFile> fio_file;
  if (o.fio || o.each_sync) {
    Result<ScratchFile> twin = ScratchFile::Create(o.dir, "fio0", o.file_size_bytes);
    if (!twin.ok()) {
      std::fprintf(stderr, "memkv-drive-bench: %s\n", twin.status().ToString().c_str());
      return 1;
    }
    fio_file.emplace(std::move(*twin));
  }
  const ScratchFile* fio_ptr = fio_file ? &*fio_file : nullptr;
  RemoveOnSignal(*file, fio_ptr);
  DescribeRun(o, *file, fio_ptr, &facts);

  DriveSweep sweep = RunDriveSweep(o, *file, fio_ptr, progress);
  facts.io_engine = sweep.io_engine.empty() ? "unknown" : sweep.io_engine;
  PrintDriveFacts(stdout, facts);
  PrintDriveTables(stdout, sweep.rows);
  if (sweep.rows.empty()) {
    std::fprintf(stderr, "memkv-drive-bench: no cell was measured\n");
    ++sweep.errors;
  }
  Status written = WriteDriveJson(o.json_path, facts, sweep.rows, sweep.errors);
  if (!written.ok()) std::fprintf(stderr, "memkv-drive-bench: %s\n", written.ToString().c_str());
  std::printf("\n%s; results in %s\n",
              sweep.errors == 0 ? "no errors, every value read back byte-exact" : "ERRORS: see stderr",
              o.json_path.c_str());
  return sweep.errors == 0 && written.ok() ? 0 : 1;
}

}  // namespace
}  // namespace memkv::bench

int main(int argc, char** argv) {
  bool help = false;
  std::string error;
  std::optional<memkv::bench::DriveBenchOptions> options =
      memkv::bench::ParseDriveOptions(std::vector<std::string>(argv + 1, argv + argc), &help, &error);
  if (!options) {
    std::fprintf(stderr, "memkv-drive-bench: %s; see 'memkv-drive-bench --help'\n", error.c_str());
    return 2;
  }
  if (help) {
    std::fputs(memkv::bench::kDriveUsage, stdout);
    return 0;
  }
  return memkv::bench::Run(*options);
}
