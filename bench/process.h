// Small process and filesystem helpers of the benchmark: temporary
// directories, a random auth key, stopping a child. Free functions; each may
// be called from any thread.
#ifndef MEMKV_BENCH_PROCESS_H_
#define MEMKV_BENCH_PROCESS_H_

#include <sys/types.h>

#include <string>

#include "memkv/status.h"

namespace memkv::bench {

// 64 hex characters (32 bytes) from /dev/urandom.
Result<std::string> RandomAuthKeyHex();

// A fresh directory "<base>/<prefix>XXXXXX".
Result<std::string> MakeTempDir(const std::string& base, const std::string& prefix);

// SIGTERM, then waits up to `grace_ms` (polling), then SIGKILL. Returns the
// exit status, 128+signal if it died of one, -1 if it could not be waited for.
int TerminateChild(pid_t pid, int grace_ms);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_PROCESS_H_
