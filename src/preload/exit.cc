// The end of a process: files still open for writing are put (the kernel
// would have kept their bytes), and a put that fails there, where no call
// can return the error, is not lost in silence. It is written to stderr,
// counted (stats.h), and a program that would have exited with status 0
// exits with kLostPutExitStatus instead, as a shell script or a job runner
// must see a failed store. A failed put of a descriptor replaced by dup2
// counts the same way (hooks_fd.cc). MEMKV_PRELOAD_EXIT_ON_LOSS widens that
// to any key whose last put failed ("any": also errors close or fsync
// returned, which a program may ignore, as Python does for a file object it
// never closed) or turns it off ("never").
//
// The puts need the exit status and a working MemKV client, which pins down
// when they run: in an on_exit() handler (it is given the status), registered
// just before main() runs. Registered any earlier (in this library's
// constructor) it would run after the ELF destructors, libmemkv's among
// them; registered there it runs after the handlers the program registers
// itself and before every destructor. main() is reached by interposing
// __libc_start_main, which every dynamically linked program's start-up code
// calls. The library's destructor makes a second pass for files written
// after the handler (by another library's exit handler, or by the program's
// static destructors); a program started some other way (no main() wrapper)
// gets only that pass, which cannot tell the exit status and leaves it be.
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "preload/files.h"
#include "preload/hooks.h"
#include "preload/real.h"
#include "preload/stats.h"
#include "preload/store.h"

namespace memkv::preload {
namespace {

// EX_IOERR (sysexits.h): "an error occurred while doing I/O on some file".
constexpr int kLostPutExitStatus = 74;

using MainFunction = int (*)(int, char**, char**);

enum class ExitPolicy {
  kUnreported,  // default: a put no call could report failed
  kAny,         // some key's last put failed, reported or not
  kNever,
};

struct ExitState {
  MainFunction main = nullptr;          // the program's, set before it runs
  std::atomic<bool> handler_ran{false};
  std::atomic<int> status{0};           // what exit() was given, once handler_ran
  // Read at start-up (the environment may change later).
  ExitPolicy policy = ExitPolicy::kUnreported;  // MEMKV_PRELOAD_EXIT_ON_LOSS
  // MEMKV_PRELOAD_STATS: "" none, "1" stderr, an absolute path: appended there.
  char stats_to[256] = {};
};
constinit ExitState exit_state;

__attribute__((constructor)) void ReadExitConfig() {
  if (const char* stats = getenv("MEMKV_PRELOAD_STATS"); stats != nullptr && strcmp(stats, "0") != 0) {
    snprintf(exit_state.stats_to, sizeof exit_state.stats_to, "%s", stats);
  }
  const char* policy = getenv("MEMKV_PRELOAD_EXIT_ON_LOSS");
  if (policy == nullptr || policy[0] == '\0' || strcmp(policy, "unreported") == 0) return;
  if (strcmp(policy, "any") == 0) {
    exit_state.policy = ExitPolicy::kAny;
  } else if (strcmp(policy, "never") == 0) {
    exit_state.policy = ExitPolicy::kNever;
  } else {
    LogLine(std::string("MEMKV_PRELOAD_EXIT_ON_LOSS '") + policy +
            "' ignored: it is one of unreported, any, never (unreported is used)");
  }
}

// Whether the exit status must say that data was lost.
bool DataLost() {
  switch (exit_state.policy) {
    case ExitPolicy::kUnreported: return UnreportedPutErrors() > 0;
    case ExitPolicy::kAny: return UnreportedPutErrors() > 0 || LostKeys() > 0;
    case ExitPolicy::kNever: return false;
  }
  return false;
}

void WriteStats() {
  if (exit_state.stats_to[0] == '\0') return;
  std::string line = "stats: " + StatsLine();
  if (exit_state.stats_to[0] != '/') {
    LogLine(line);
    return;
  }
  line = "memkv_preload: " + line + " (pid " + std::to_string(getpid()) + ")\n";
  int fd = Real().open(exit_state.stats_to, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t ignored = Real().write(fd, line.data(), line.size());
  (void)ignored;
  Real().close(fd);
}

// Puts every open file that was written, after what stdio still buffers is
// flushed into the memfds. `stays_open`: a baseline is taken, so that the
// destructor's pass finds later writes. Failures are reported here, since
// nobody else can, and the file is dropped from the table (not tried again
// by the next pass). It runs on the exiting thread: libmemkv keeps nothing
// there that exit() destroys before the handlers run (memkv_last_error's
// text is a plain per-thread buffer).
void PutOpenFiles(bool stays_open) {
  fflush(nullptr);
  for (auto& [fd, file] : OpenFiles()) {
    if (int err = CommitIfDirty(*file, fd, stays_open)) {
      TakeFd(fd);
      uint64_t lost = CountUnreported();
      LogLine("put of '" + file->key + "' at exit failed: " + strerror(err) + " (" + std::to_string(lost) +
              (lost == 1 ? " put" : " puts") + " failed where no call could return the error)");
    }
  }
}

// Exits with kLostPutExitStatus where the program was about to exit with 0
// and a put failed that no call could report. `nested`: from an exit
// handler, where glibc's exit() runs the remaining handlers and destructors
// first; otherwise (a destructor) the process ends here.
void FailExitIfLost(int status, bool nested) {
  if (status != 0 || !DataLost()) return;
  LogLine("exit status " + std::to_string(kLostPutExitStatus) + " instead of 0: " +
          std::to_string(UnreportedPutErrors()) + " put(s) failed where no call could return the error, " +
          std::to_string(LostKeys()) + " key(s) whose last put failed");
  exit_state.status.store(kLostPutExitStatus);
  if (nested) exit(kLostPutExitStatus);
  WriteStats();
  fflush(nullptr);
  _exit(kLostPutExitStatus);
}

void AtExit(int status, void*) {
  if (exit_state.handler_ran.exchange(true)) return;
  exit_state.status.store(status);
  PutOpenFiles(/*stays_open=*/true);
  FailExitIfLost(status, /*nested=*/true);
}

int MainWithExitHandler(int argc, char** argv, char** envp) {
  on_exit(AtExit, nullptr);
  return exit_state.main(argc, argv, envp);
}

__attribute__((destructor)) void PutAtUnload() {
  bool lost_before = DataLost();
  PutOpenFiles(/*stays_open=*/false);
  // Only where the handler told the status (and did not act on it already).
  if (exit_state.handler_ran.load() && !lost_before) FailExitIfLost(exit_state.status.load(), /*nested=*/false);
  WriteStats();
}

}  // namespace
}  // namespace memkv::preload

// glibc's start-up entry point, called by the program's _start. Its
// arguments after argv differ between glibc versions; they are passed on
// untouched (all pointers).
MEMKV_PRELOAD_EXPORT int __libc_start_main(memkv::preload::MainFunction main, int argc, char** argv, void* init,
                                           void* fini, void* rtld_fini, void* stack_end) {
  using RealStart = int (*)(memkv::preload::MainFunction, int, char**, void*, void*, void*, void*);
  auto real = reinterpret_cast<RealStart>(dlsym(RTLD_NEXT, "__libc_start_main"));
  if (real == nullptr) abort();  // no libc to start the program
  memkv::preload::exit_state.main = main;
  return real(memkv::preload::MainWithExitHandler, argc, argv, init, fini, rtld_fini, stack_end);
}
