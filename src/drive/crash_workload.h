// The workload of memkv-drive-crashtest and the log it prints, shared with
// the test that kills it (crash_test.cc).
//
// Each thread owns its keys ("t<thread>-<n>"), so at most one operation per
// key is in flight, and logs every operation as it goes, one line per
// write(2) (atomic on a pipe), flushed at once:
//   begin put <key> <seed> <size>   about to call Put
//   ack put <key> <seed> <size>     Put returned Ok: it must survive a crash
//   begin del <key> 0 0             about to call Delete
//   ack del <key> 0 0               Delete returned Ok or NotFound
//   fail <verb> <key> <seed> <size> the call failed (the store keeps running)
// A value is CrashValue(seed, size); seeds are unique across rounds.
#ifndef MEMKV_DRIVE_CRASH_WORKLOAD_H_
#define MEMKV_DRIVE_CRASH_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "drive/extent_store.h"

namespace memkv::drive {

struct CrashLogLine {
  enum class Phase { kBegin, kAck, kFail } phase = Phase::kBegin;
  bool put = true;  // else delete
  std::string key;
  uint64_t seed = 0;
  uint64_t size = 0;
};

std::string FormatCrashLine(const CrashLogLine& line);  // with the trailing newline
bool ParseCrashLine(std::string_view text, CrashLogLine* out);

std::vector<uint8_t> CrashValue(uint64_t seed, uint64_t size);

struct CrashWorkloadOptions {
  int threads = 3;
  int keys_per_thread = 8;
  uint64_t round = 1;              // makes seeds unique across runs
  uint64_t max_value_bytes = 0;    // 0: three extents
  uint64_t ops_per_thread = 1000000;
};

// Runs until ops_per_thread operations per thread are done (or the process
// is killed), printing the log on stdout.
void RunCrashWorkload(ExtentStore& store, const CrashWorkloadOptions& options);

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_CRASH_WORKLOAD_H_
