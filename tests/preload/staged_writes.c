/* Run under libmemkv_preload.so: files written with write() are staged in a
 * buffer of the library's pool and put from it (docs/preload.md, "Staged
 * writes"). Each check writes a file under DIR through the shim and reads it
 * back through the shim (a fresh open: the value MemKV holds), comparing it
 * with the bytes a filesystem would hold:
 *   - a short file after a long one holds only its own bytes (a recycled
 *     buffer leaks nothing), and so do a file grown from many writes and an
 *     empty one;
 *   - fstat and lseek queries during staging see the size and offset;
 *   - lseek, pwrite and ftruncate mid-file, writev, fsync then more writes;
 *   - a write that bypasses the interposers (raw pwritev2 at the offset);
 *   - fork: the child writes through the inherited descriptor;
 *   - system() and vfork + execl: the new program reads the staged bytes
 *     through /proc/self/fd (the memfd itself).
 * Usage: preload_staged_writes DIR SCRATCH_DIR. Exit 0 when every check passed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond, ...)                                                          \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "preload_staged_writes: FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                               \
      fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno));                \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

static const char* dir;
static const char* scratch;
static char path[4096];

static const char* P(const char* name) {
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static int Create(const char* name) {
  int fd = open(P(name), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0, "open(%s)", name);
  return fd;
}

static void Write(int fd, const void* buf, size_t len) {
  CHECK(write(fd, buf, len) == (ssize_t)len, "write of %zu bytes", len);
}

static void Close(int fd) { CHECK(close(fd) == 0, "close"); }

/* The whole value of `name` read through the shim; *len its size. */
static char* ReadBack(const char* name, size_t* len) {
  int fd = open(P(name), O_RDONLY);
  CHECK(fd >= 0, "open(%s) for reading", name);
  struct stat st;
  CHECK(fstat(fd, &st) == 0, "fstat(%s)", name);
  size_t cap = (size_t)st.st_size + 4096, got = 0;
  char* buf = malloc(cap);
  CHECK(buf != NULL, "malloc");
  for (;;) {
    ssize_t n = read(fd, buf + got, cap - got);
    CHECK(n >= 0, "read(%s)", name);
    if (n == 0) break;
    got += (size_t)n;
  }
  CHECK(got == (size_t)st.st_size, "%s: read %zu bytes, fstat said %lld", name, got, (long long)st.st_size);
  Close(fd);
  *len = got;
  return buf;
}

static void Expect(const char* name, const void* want, size_t want_len) {
  size_t len = 0;
  char* got = ReadBack(name, &len);
  CHECK(len == want_len, "%s: %zu bytes, expected %zu", name, len, want_len);
  CHECK(memcmp(got, want, len) == 0, "%s: bytes differ", name);
  free(got);
}

static void ExpectFilled(const char* name, int byte, size_t want_len) {
  char* want = malloc(want_len + 1);
  CHECK(want != NULL, "malloc");
  memset(want, byte, want_len);
  Expect(name, want, want_len);
  free(want);
}

/* What a program started by `command` (given the descriptor's number) read
 * from the memfd through /proc/self/fd: the content of SCRATCH/out. */
static void ExpectSeenByProgram(const char* how, int fd, const char* want) {
  char out[4096], cmd[8192];
  snprintf(out, sizeof out, "%s/out", scratch);
  unlink(out);
  snprintf(cmd, sizeof cmd, "cat /proc/self/fd/%d > %s", fd, out);
  if (strcmp(how, "system") == 0) {
    CHECK(system(cmd) == 0, "system(%s)", cmd);
  } else {
    /* vfork, which the library does not interpose: the exec call's own
     * interposer writes the staged bytes into the memfd. */
    pid_t pid = vfork();
    CHECK(pid >= 0, "vfork");
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", cmd, (char*)NULL);
      _exit(127);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", cmd);
  }
  int rfd = open(out, O_RDONLY);
  CHECK(rfd >= 0, "open(%s)", out);
  char buf[256] = {0};
  ssize_t n = read(rfd, buf, sizeof buf - 1);
  Close(rfd);
  CHECK(n == (ssize_t)strlen(want) && memcmp(buf, want, (size_t)n) == 0,
        "%s: the program read '%.*s', expected '%s'", how, (int)(n < 0 ? 0 : n), buf, want);
}

int main(int argc, char** argv) {
  CHECK(argc == 3, "usage: preload_staged_writes DIR SCRATCH_DIR");
  dir = argv[1];
  scratch = argv[2];

  /* A long file, then a short one, then one of many writes, then an empty
   * one: each holds only its own bytes. */
  size_t long_len = (size_t)6 << 20;
  char* big = malloc(long_len);
  CHECK(big != NULL, "malloc");
  memset(big, 0xA5, long_len);
  int fd = Create("long.bin");
  Write(fd, big, long_len);
  Close(fd);
  fd = Create("short.bin");
  Write(fd, "short", 5);
  Close(fd);
  Expect("short.bin", "short", 5);
  ExpectFilled("long.bin", 0xA5, long_len);
  memset(big, 0x5A, long_len);
  fd = Create("many.bin");
  size_t many_len = (size_t)3 << 20;
  for (size_t done = 0; done < many_len; done += 65536) Write(fd, big, 65536);
  Close(fd);
  ExpectFilled("many.bin", 0x5A, many_len);
  fd = Create("empty.bin");
  Close(fd);
  Expect("empty.bin", "", 0);
  fd = Create("short.bin");  /* truncated and written again, shorter */
  Write(fd, "s", 1);
  Close(fd);
  Expect("short.bin", "s", 1);

  /* Queries during staging. */
  fd = Create("query.bin");
  Write(fd, "0123456789", 10);
  struct stat st;
  CHECK(fstat(fd, &st) == 0 && st.st_size == 10, "fstat during staging: size %lld", (long long)st.st_size);
  CHECK(lseek(fd, 0, SEEK_CUR) == 10, "lseek(SEEK_CUR) during staging");
  CHECK(lseek(fd, 0, SEEK_END) == 10, "lseek(SEEK_END) during staging");
  Write(fd, "ab", 2);
  Close(fd);
  Expect("query.bin", "0123456789ab", 12);

  /* Moves and writes at an offset. */
  fd = Create("seek.bin");
  Write(fd, "AAAA", 4);
  CHECK(lseek(fd, 1, SEEK_SET) == 1, "lseek");
  Write(fd, "B", 1);
  Close(fd);
  Expect("seek.bin", "ABAA", 4);
  fd = Create("pwrite.bin");
  Write(fd, "hello world", 11);
  CHECK(pwrite(fd, "W", 1, 6) == 1, "pwrite");
  Write(fd, "!", 1);
  Close(fd);
  Expect("pwrite.bin", "hello World!", 12);
  fd = Create("truncate.bin");
  Write(fd, "abcdefghij", 10);
  CHECK(ftruncate(fd, 4) == 0, "ftruncate");
  Write(fd, "xy", 2);  /* at offset 10: a hole of zeros before it */
  Close(fd);
  Expect("truncate.bin", "abcd\0\0\0\0\0\0xy", 12);

  /* writev, and fsync then more writes. */
  fd = Create("writev.bin");
  struct iovec iov[3] = {{"ab", 2}, {"", 0}, {"cd", 2}};
  CHECK(writev(fd, iov, 3) == 4, "writev");
  Close(fd);
  Expect("writev.bin", "abcd", 4);
  fd = Create("fsync.bin");
  Write(fd, "one", 3);
  CHECK(fsync(fd) == 0, "fsync");
  Expect("fsync.bin", "one", 3);
  Write(fd, "two", 3);
  Close(fd);
  Expect("fsync.bin", "onetwo", 6);

  /* A write behind the interposers (the raw system call) at the offset. */
  fd = Create("bypass.bin");
  Write(fd, "abc", 3);
  struct iovec def = {"def", 3};
  CHECK(syscall(SYS_pwritev2, fd, &def, 1, (long)-1, (long)-1, 0) == 3, "raw pwritev2");
  Close(fd);
  Expect("bypass.bin", "abcdef", 6);

  /* fork: the child writes through the inherited descriptor. */
  fd = Create("fork.bin");
  Write(fd, "parent", 6);
  pid_t pid = fork();
  CHECK(pid >= 0, "fork");
  if (pid == 0) {
    _exit(write(fd, "child", 5) == 5 ? 0 : 1);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "the forked child");
  Write(fd, "!", 1);
  Close(fd);
  Expect("fork.bin", "parentchild!", 12);

  /* A new program sees the staged bytes in the memfd. */
  fd = Create("system.bin");
  Write(fd, "seen by system", 14);
  ExpectSeenByProgram("system", fd, "seen by system");
  Write(fd, "+", 1);
  Close(fd);
  Expect("system.bin", "seen by system+", 15);
  fd = Create("exec.bin");
  Write(fd, "seen by exec", 12);
  ExpectSeenByProgram("vfork+execl", fd, "seen by exec");
  Close(fd);
  Expect("exec.bin", "seen by exec", 12);

  free(big);
  printf("preload_staged_writes: all checks passed\n");
  return 0;
}
