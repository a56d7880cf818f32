// fio as the drive tier's reference (STYLE.md: measure against a reference
// in the same run). One FioJob is one fio run of one job on the bench's
// scratch file: io_uring, O_DIRECT, sequential (or random) write or read, the value size
// as --bs and the queue depth as --iodepth, time-based for the same seconds
// as a memkv cell. fio's JSON report is parsed for throughput, IOPS and
// completion latency.
//
// fio is found on PATH (or --fio); nothing is installed. Free functions; each
// forks and waits for fio, so call them while no store has the file open.
#ifndef MEMKV_BENCH_FIO_REFERENCE_H_
#define MEMKV_BENCH_FIO_REFERENCE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/status.h"

namespace memkv::bench {

struct FioJob {
  std::string fio_path = "fio";
  std::string filename;
  uint64_t file_size_bytes = 0;
  uint64_t block_size_bytes = 0;
  uint32_t iodepth = 1;
  double seconds = 1.0;
  bool write = false;
  bool random = false;     // randwrite/randread instead of write/read
  bool fdatasync = false;  // --fdatasync=1: an fdatasync after every write
  // --fixedbufs=1 --registerfiles=1: buffers and the file registered with
  // the ring, as the store does with its staging buffers and drive fds.
  bool registered = true;
  std::string output_path;  // where fio writes its JSON report
};

struct FioResult {
  double bytes_per_s = 0;  // fio's bw_bytes
  double iops = 0;
  uint64_t io_bytes = 0;
  double runtime_s = 0;
  double clat_p50_us = 0, clat_p99_us = 0, clat_p999_us = 0;  // write/read completion; not the syncs
  double sync_p50_us = 0, sync_p99_us = 0;                    // --fdatasync runs only
  std::string command;                                        // the exact command line, for the report

  double MiBPerSecond() const { return bytes_per_s / double(1 << 20); }
};

// The fio arguments of `job` (argv[0] is job.fio_path).
std::vector<std::string> FioArgs(const FioJob& job);
// The arguments joined with spaces, quoted where needed: a command to paste.
std::string ShellCommand(const std::vector<std::string>& args);

// Runs fio and parses its report. IoError naming the command and fio's exit
// status when it fails; NotFound with how to install fio when it is missing.
Result<FioResult> RunFio(const FioJob& job);

// Whether this process may register `bytes` of buffers with io_uring: root
// (CAP_IPC_LOCK), or RLIMIT_MEMLOCK covers them. fio fails outright when
// --fixedbufs cannot be honoured, so the bench asks first.
bool CanRegisterBuffers(uint64_t bytes);

// The "fio-3.33" that `fio --version` prints. NotFound with how to install
// it when `fio_path` cannot be run.
Result<std::string> FioVersion(const std::string& fio_path);

// Reads the write (or read) figures of the first job of a fio JSON report.
// InvalidArgument when the report is malformed, lacks the figures, or the
// job reports an error.
Result<FioResult> ParseFioReport(std::string_view json, bool write);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_FIO_REFERENCE_H_
