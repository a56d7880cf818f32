// Small process and filesystem helpers of the benchmark: temporary
// directories, a random auth key, starting and stopping a child, finding a
// program, a process's resident memory. Free functions; each may be called
// from any thread (SpawnChild: see there).
#ifndef MEMKV_BENCH_PROCESS_H_
#define MEMKV_BENCH_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "memkv/status.h"

namespace memkv::bench {

// 64 hex characters (32 bytes) from /dev/urandom.
Result<std::string> RandomAuthKeyHex();

// A fresh directory "<base>/<prefix>XXXXXX".
Result<std::string> MakeTempDir(const std::string& base, const std::string& prefix);

// Starts `args[0]` (a path) with `args`, its stdout going to `stdout_fd`
// (-1: to the log file too) and its stderr to `log_path` (created or
// truncated). The child gets SIGTERM when this process dies, so it never
// outlives the benchmark. Everything the child needs is prepared before the
// fork, so it may be called while other threads run.
Result<pid_t> SpawnChild(const std::vector<std::string>& args, int stdout_fd, const std::string& log_path);

// SIGTERM, then waits up to `grace_ms` (polling), then SIGKILL. Returns the
// exit status, 128+signal if it died of one, -1 if it could not be waited for.
int TerminateChild(pid_t pid, int grace_ms);

// The first executable `name` in the directories of `path_env` (PATH's
// value), or "" when there is none.
std::string FindOnPath(const std::string& name, const std::string& path_env);

// What `pid` holds resident: VmRSS plus HugetlbPages (hugetlb pages are not
// counted in VmRSS), from /proc/PID/status. NotFound when the process is gone.
Result<uint64_t> ResidentBytes(pid_t pid);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_PROCESS_H_
