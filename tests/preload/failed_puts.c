/* Run under libmemkv_preload.so against a server that refuses every put of
 * SIZE bytes (a value over its memory.max_value_size, or a server that is
 * down): each call that stores a file must return -1 with the errno named,
 * and the library's counters must show the failures as reported ones.
 * Usage: preload_failed_puts DIR SIZE ERRNO_NAME (EFBIG or ENOTCONN)
 * Exit 0 when every check passed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/memkv_preload.h"

#define CHECK(cond, ...)                                                          \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "preload_failed_puts: FAIL %s:%d: ", __FILE__, __LINE__);   \
      fprintf(stderr, __VA_ARGS__);                                               \
      fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno));                \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

static char* data;
static size_t size;
static int want_errno;

static void Path(char* out, size_t len, const char* dir, const char* name) { snprintf(out, len, "%s/%s", dir, name); }

static int OpenWritten(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0, "open(%s)", path);
  CHECK(write(fd, data, size) == (ssize_t)size, "write(%s): the memfd takes any size below 64 GiB", path);
  return fd;
}

/* Checks that `result` is -1 with want_errno. */
static void ExpectFailed(int result, const char* call, const char* path) {
  int err = errno;
  CHECK(result == -1, "%s(%s) returned %d, not -1", call, path, result);
  errno = err;
  CHECK(err == want_errno, "%s(%s) failed with errno %d, not %d", call, path, err, want_errno);
}

static memkv_preload_stats_t Stats(void) {
  size_t (*stats_fn)(memkv_preload_stats_t*, size_t) = NULL;
  *(void**)(&stats_fn) = dlsym(RTLD_DEFAULT, "memkv_preload_stats"); /* POSIX's idiom for a function */
  CHECK(stats_fn != NULL, "memkv_preload_stats not found: not run under libmemkv_preload.so?");
  memkv_preload_stats_t stats;
  memset(&stats, 0, sizeof stats);
  CHECK(stats_fn(&stats, sizeof stats) >= sizeof stats, "memkv_preload_stats: a smaller struct than this test's");
  return stats;
}

int main(int argc, char** argv) {
  CHECK(argc == 4, "usage: preload_failed_puts DIR SIZE EFBIG|ENOTCONN");
  const char* dir = argv[1];
  size = strtoull(argv[2], NULL, 10);
  want_errno = strcmp(argv[3], "EFBIG") == 0 ? EFBIG : strcmp(argv[3], "ENOTCONN") == 0 ? ENOTCONN : 0;
  CHECK(want_errno != 0, "unknown errno name %s", argv[3]);
  data = malloc(size);
  CHECK(data != NULL, "malloc");
  memset(data, 'v', size);
  memkv_preload_stats_t before = Stats();
  char path[4096];

  Path(path, sizeof path, dir, "close.bin");
  ExpectFailed(close(OpenWritten(path)), "close", path);

  Path(path, sizeof path, dir, "fsync.bin");
  int fd = OpenWritten(path);
  ExpectFailed(fsync(fd), "fsync", path);
  ExpectFailed(fdatasync(fd), "fdatasync", path);
  ExpectFailed(close(fd), "close after a failed fsync", path);  /* still not stored: tried again */

  Path(path, sizeof path, dir, "fclose.bin");
  FILE* f = fopen(path, "w");
  CHECK(f != NULL, "fopen(%s)", path);
  CHECK(fwrite(data, 1, size, f) == size, "fwrite(%s)", path);
  ExpectFailed(fclose(f), "fclose", path);

  /* Past the largest value any server takes: refused at once. */
  Path(path, sizeof path, dir, "huge.bin");
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0, "open(%s)", path);
  errno = 0;
  CHECK(ftruncate(fd, (off_t)65 << 30) == -1 && errno == EFBIG, "ftruncate(%s, 65 GiB) is not EFBIG", path);
  CHECK(pwrite(fd, "x", 1, (off_t)64 << 30) == -1 && errno == EFBIG, "pwrite(%s) at 64 GiB is not EFBIG", path);
  close(fd); /* an empty new file, put here: it fails too with the server down (not checked) */
  CHECK(unlink(path) == 0 || errno == want_errno, "unlink(%s)", path);

  memkv_preload_stats_t after = Stats();
  CHECK(after.put_errors - before.put_errors >= 5, "put_errors went from %llu to %llu, not up by 5 or more",
        (unsigned long long)before.put_errors, (unsigned long long)after.put_errors);
  CHECK(after.put_errors_unreported == before.put_errors_unreported,
        "put_errors_unreported went from %llu to %llu: every failure here was returned",
        (unsigned long long)before.put_errors_unreported, (unsigned long long)after.put_errors_unreported);
  printf("preload_failed_puts: ok (%s)\n", argv[3]);
  return 0;
}
