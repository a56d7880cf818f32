// CPU time of the benchmark's own process and of the servers it measures,
// sampled around a timed cell (bench/measure.h) to report CPU seconds per
// GiB moved.
//
// The client side is getrusage(RUSAGE_SELF): while a cell runs, this process
// runs only client threads (every server is a separate process). A server's
// side is utime + stime from /proc/<pid>/stat, which sums all its threads,
// in clock ticks (10 ms at the usual 100 Hz, so a cell of a fraction of a
// second reads it coarsely).
//
// Free functions; any thread.
#ifndef MEMKV_BENCH_CPU_TIME_H_
#define MEMKV_BENCH_CPU_TIME_H_

#include <sys/types.h>

#include <string_view>

#include "memkv/status.h"

namespace memkv::bench {

// utime + stime of the contents of /proc/<pid>/stat, in seconds, given the
// clock ticks per second (sysconf(_SC_CLK_TCK)). The command name (field 2)
// is in parentheses and may itself hold spaces and parentheses, so the
// fields are counted after its last ')'. InvalidArgument naming what is
// wrong with the text.
Result<double> ParseProcStatCpuSeconds(std::string_view stat, long ticks_per_second);

// The CPU seconds `pid` has used so far (its /proc/<pid>/stat); NotFound
// when the process is gone.
Result<double> ProcessCpuSeconds(pid_t pid);

// User + system CPU seconds of this process, all its threads.
double SelfCpuSeconds();

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_CPU_TIME_H_
