// Interposers of the calls that start a process or a program: fork, the exec
// family, posix_spawn, system and popen. A file whose writes are staged
// (files.h, "Staged writes") has its bytes in this process's memory, not in
// its memfd: each of these first writes them into the memfds, so that a
// child, or the program exec() starts (which adopts the memfds it inherits,
// inherit.cc), sees what was written. glibc's own spawning (popen's and
// system's posix_spawn) does not pass through the interposers, hence the
// interposers of those two. fork() also holds staging off until the child
// exists.
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <unistd.h>

#include <vector>

#include "preload/files.h"
#include "preload/hooks.h"
#include "preload/real.h"

using namespace memkv::preload;  // NOLINT: the interposers below are libc's names

namespace {

// The arguments of execl/execle/execlp after `arg0`, up to the NULL; with
// `envp`, the pointer after it too.
std::vector<char*> ListArgs(const char* arg0, va_list ap, char*** envp) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(arg0));
  while (argv.back() != nullptr) argv.push_back(va_arg(ap, char*));
  if (envp != nullptr) *envp = va_arg(ap, char**);
  return argv;
}

}  // namespace

MEMKV_PRELOAD_EXPORT pid_t fork() {
  if (Real().fork == nullptr) return ErrnoResult(ENOSYS, -1);
  ForkGateClose();
  UnstageAll();
  pid_t pid = Real().fork();
  ForkGateOpen(/*in_child=*/pid == 0);
  return pid;
}

MEMKV_PRELOAD_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  UnstageAll();
  return Real().execve(path, argv, envp);
}
MEMKV_PRELOAD_EXPORT int execv(const char* path, char* const argv[]) {
  UnstageAll();
  return Real().execv(path, argv);
}
MEMKV_PRELOAD_EXPORT int execvp(const char* file, char* const argv[]) {
  UnstageAll();
  return Real().execvp(file, argv);
}
MEMKV_PRELOAD_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  if (Real().execvpe == nullptr) return ErrnoResult(ENOSYS, -1);
  UnstageAll();
  return Real().execvpe(file, argv, envp);
}
MEMKV_PRELOAD_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  UnstageAll();
  return Real().fexecve(fd, argv, envp);
}
MEMKV_PRELOAD_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  if (Real().execveat == nullptr) return ErrnoResult(ENOSYS, -1);
  UnstageAll();
  return Real().execveat(dirfd, path, argv, envp, flags);
}
MEMKV_PRELOAD_EXPORT int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = ListArgs(arg, ap, nullptr);
  va_end(ap);
  UnstageAll();
  return Real().execv(path, argv.data());
}
MEMKV_PRELOAD_EXPORT int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = ListArgs(arg, ap, nullptr);
  va_end(ap);
  UnstageAll();
  return Real().execvp(file, argv.data());
}
MEMKV_PRELOAD_EXPORT int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  char** envp = nullptr;
  std::vector<char*> argv = ListArgs(arg, ap, &envp);
  va_end(ap);
  UnstageAll();
  return Real().execve(path, argv.data(), envp);
}

MEMKV_PRELOAD_EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                                     const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  UnstageAll();
  return Real().posix_spawn(pid, path, actions, attr, argv, envp);
}
MEMKV_PRELOAD_EXPORT int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                                      const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  UnstageAll();
  return Real().posix_spawnp(pid, file, actions, attr, argv, envp);
}
MEMKV_PRELOAD_EXPORT int system(const char* command) {
  UnstageAll();
  return Real().system(command);
}
MEMKV_PRELOAD_EXPORT FILE* popen(const char* command, const char* mode) {
  UnstageAll();
  return Real().popen(command, mode);
}
