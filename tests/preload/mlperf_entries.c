/* Run under libmemkv_preload.so: what MLPerf Storage's KV-cache benchmark
 * does per entry, in C (open/write/fsync/close, stat, open+posix_fadvise+
 * close, read whole, unlink, listing), then stdio, dup, fork, threads and
 * errors. Usage: mlperf_entries KV_DIR REAL_DIR
 *   KV_DIR   a directory under MEMKV_PRELOAD_PREFIX
 *   REAL_DIR a real directory outside it
 * Leaves KV_DIR/keep.bin, and REAL_DIR/keep.bin with the same bytes (written
 * through the shim too: it must reach the filesystem), for the script to
 * compare with what MemKV holds. Exit 0 when every check passed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond, ...)                                            \
  do {                                                              \
    if (!(cond)) {                                                  \
      fprintf(stderr, "mlperf_entries: FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                 \
      fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno));  \
      exit(1);                                                      \
    }                                                               \
  } while (0)

static const char* kv_dir;

static void Fill(unsigned char* buf, size_t len, unsigned seed) {
  for (size_t i = 0; i < len; ++i) buf[i] = (unsigned char)((i * 131u + seed * 7u + (i >> 12)) & 0xff);
}

static void WriteEntry(const char* path, const unsigned char* data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  CHECK(fd >= 0, "open(%s, O_WRONLY|O_CREAT|O_TRUNC)", path);
  size_t done = 0;
  while (done < len) {
    ssize_t n = write(fd, data + done, len - done);
    CHECK(n > 0, "write(%s)", path);
    done += (size_t)n;
  }
  CHECK(fsync(fd) == 0, "fsync(%s)", path);
  CHECK(close(fd) == 0, "close(%s)", path);
}

static unsigned char* ReadAll(const char* path, size_t* len) {
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0, "open(%s, O_RDONLY)", path);
  struct stat st;
  CHECK(fstat(fd, &st) == 0 && S_ISREG(st.st_mode), "fstat(%s)", path);
  unsigned char* buf = malloc((size_t)st.st_size + 1);
  size_t done = 0;
  for (;;) {
    ssize_t n = read(fd, buf + done, (size_t)st.st_size + 1 - done);
    CHECK(n >= 0, "read(%s)", path);
    if (n == 0) break;
    done += (size_t)n;
  }
  CHECK(done == (size_t)st.st_size, "%s: read %zu bytes, fstat says %lld", path, done, (long long)st.st_size);
  CHECK(close(fd) == 0, "close(%s)", path);
  *len = done;
  return buf;
}

struct ThreadArg {
  int index;
  int failures;
};

static void* ThreadMain(void* opaque) {
  struct ThreadArg* arg = opaque;
  char path[512];
  unsigned char data[70000];
  for (int round = 0; round < 10; ++round) {
    snprintf(path, sizeof path, "%s/threads/t%d-%d.bin", kv_dir, arg->index, round);
    Fill(data, sizeof data, (unsigned)(arg->index * 100 + round));
    WriteEntry(path, data, sizeof data);
    size_t len = 0;
    unsigned char* back = ReadAll(path, &len);
    if (len != sizeof data || memcmp(back, data, len) != 0) ++arg->failures;
    free(back);
  }
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc == 3, "usage: mlperf_entries KV_DIR REAL_DIR");
  kv_dir = argv[1];
  const char* real_dir = argv[2];
  char path[512];
  enum { kEntries = 6, kEntryBytes = 3 << 20 };
  unsigned char* data = malloc(kEntryBytes);

  /* Per entry: write, exists, drop page cache, read back. */
  for (int i = 0; i < kEntries; ++i) {
    snprintf(path, sizeof path, "%s/layer%d_entry.bin", kv_dir, i);
    Fill(data, kEntryBytes - (size_t)i, (unsigned)i);
    WriteEntry(path, data, kEntryBytes - (size_t)i);
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode), "stat(%s)", path);
    CHECK(st.st_size == kEntryBytes - i, "stat(%s).st_size %lld", path, (long long)st.st_size);
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0, "open(%s) for fadvise", path);
    CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0, "posix_fadvise(%s)", path);
    CHECK(close(fd) == 0, "close after fadvise");
    size_t len = 0;
    unsigned char* back = ReadAll(path, &len);
    CHECK(len == (size_t)(kEntryBytes - i) && memcmp(back, data, len) == 0, "%s read back differs", path);
    free(back);
  }
  /* glob("*.bin"): the directory lists exactly the entries. */
  {
    DIR* dir = opendir(kv_dir);
    CHECK(dir != NULL, "opendir(%s)", kv_dir);
    int bins = 0, dots = 0;
    struct dirent* entry;
    while ((entry = readdir(dir)) != NULL) {
      size_t n = strlen(entry->d_name);
      if (n > 4 && strcmp(entry->d_name + n - 4, ".bin") == 0) {
        CHECK(entry->d_type == DT_REG, "%s is not DT_REG", entry->d_name);
        ++bins;
      }
      if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) ++dots;
    }
    CHECK(closedir(dir) == 0, "closedir");
    CHECK(bins == kEntries && dots == 2, "listing has %d .bin entries and %d dots", bins, dots);
  }
  /* Eviction: unlink, then it is gone. */
  for (int i = 0; i < kEntries; ++i) {
    snprintf(path, sizeof path, "%s/layer%d_entry.bin", kv_dir, i);
    CHECK(unlink(path) == 0, "unlink(%s)", path);
    struct stat st;
    errno = 0;
    CHECK(stat(path, &st) == -1 && errno == ENOENT, "stat(%s) after unlink", path);
  }
  /* A miss is ENOENT; so is unlink of a miss. */
  snprintf(path, sizeof path, "%s/no-such-entry.bin", kv_dir);
  errno = 0;
  CHECK(open(path, O_RDONLY) == -1 && errno == ENOENT, "open of a miss");
  errno = 0;
  CHECK(unlink(path) == -1 && errno == ENOENT, "unlink of a miss");
  errno = 0;
  CHECK(fopen(path, "rb") == NULL && errno == ENOENT, "fopen of a miss");

  /* stdio: fopen/fwrite/fflush/fsync/fclose, then fread. */
  snprintf(path, sizeof path, "%s/stdio.bin", kv_dir);
  Fill(data, 100000, 9);
  FILE* f = fopen(path, "wb");
  CHECK(f != NULL, "fopen(%s, wb)", path);
  CHECK(fwrite(data, 1, 100000, f) == 100000, "fwrite");
  CHECK(fflush(f) == 0 && fsync(fileno(f)) == 0, "fflush+fsync");
  CHECK(fclose(f) == 0, "fclose");
  f = fopen(path, "rb");
  CHECK(f != NULL, "fopen(%s, rb)", path);
  unsigned char* back = malloc(100001);
  CHECK(fread(back, 1, 100001, f) == 100000 && memcmp(back, data, 100000) == 0, "fread back");
  CHECK(fclose(f) == 0, "fclose read");

  /* dup: one open file, two descriptors; the put happens at the last close. */
  snprintf(path, sizeof path, "%s/dup.bin", kv_dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0, "open dup.bin");
  int fd2 = dup(fd);
  CHECK(fd2 >= 0, "dup");
  CHECK(write(fd, "abc", 3) == 3 && write(fd2, "def", 3) == 3, "write via both");
  CHECK(close(fd) == 0, "close first");
  CHECK(write(fd2, "g", 1) == 1 && close(fd2) == 0, "write+close second");
  size_t len = 0;
  unsigned char* dup_back = ReadAll(path, &len);
  CHECK(len == 7 && memcmp(dup_back, "abcdefg", 7) == 0, "dup.bin is '%.*s'", (int)len, dup_back);
  free(dup_back);

  /* fork: the child reads a shim fd opened before the fork and writes its
   * own file through its own client. */
  fd = open(path, O_RDONLY);
  CHECK(fd >= 0, "open before fork");
  pid_t pid = fork();
  CHECK(pid >= 0, "fork");
  if (pid == 0) {
    char buf[8] = {0};
    if (read(fd, buf, 8) != 7 || memcmp(buf, "abcdefg", 7) != 0) _exit(3);
    char child_path[512];
    snprintf(child_path, sizeof child_path, "%s/child.bin", kv_dir);
    int cfd = open(child_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (cfd < 0 || write(cfd, "child", 5) != 5 || close(cfd) != 0) _exit(4);
    _exit(0);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
  char buf[8] = {0};
  /* The offset is shared with the child, which read to the end. */
  CHECK(pread(fd, buf, 8, 0) == 7 && memcmp(buf, "abcdefg", 7) == 0, "parent pread after fork");
  close(fd);
  snprintf(path, sizeof path, "%s/child.bin", kv_dir);
  unsigned char* child_back = ReadAll(path, &len);
  CHECK(len == 5 && memcmp(child_back, "child", 5) == 0, "child.bin");
  free(child_back);

  /* Threads, each writing and reading its own entries. */
  {
    pthread_t threads[8];
    struct ThreadArg args[8];
    for (int i = 0; i < 8; ++i) {
      args[i].index = i;
      args[i].failures = 0;
      CHECK(pthread_create(&threads[i], NULL, ThreadMain, &args[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < 8; ++i) {
      pthread_join(threads[i], NULL);
      CHECK(args[i].failures == 0, "thread %d saw %d bad read-backs", i, args[i].failures);
    }
    snprintf(path, sizeof path, "%s/threads", kv_dir);
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "stat(%s) is a directory", path);
  }

  /* A first read that takes the whole value leaves the memfd empty: every
   * later use must still see the value's bytes. */
  {
    Fill(data, kEntryBytes, 43);
    snprintf(path, sizeof path, "%s/whole.bin", kv_dir);
    WriteEntry(path, data, kEntryBytes);
    unsigned char* whole = malloc(kEntryBytes + 1);
    int wfd = open(path, O_RDONLY);
    CHECK(wfd >= 0, "open(%s)", path);
    CHECK(read(wfd, whole, kEntryBytes + 1) == (ssize_t)kEntryBytes, "whole read of %s", path);
    CHECK(memcmp(whole, data, kEntryBytes) == 0, "whole read of %s: other bytes", path);
    CHECK(read(wfd, whole, 16) == 0, "read at the end of %s after a whole read is not EOF", path);
    CHECK(pread(wfd, whole, 16, (off_t)kEntryBytes) == 0, "pread at the end of %s is not EOF", path);
    char small[8];
    CHECK(pread(wfd, small, 8, 100) == 8 && memcmp(small, data + 100, 8) == 0, "pread(100) after a whole read");
    struct stat wst;
    CHECK(fstat(wfd, &wst) == 0 && wst.st_size == (off_t)kEntryBytes, "fstat after a whole read");
    CHECK(lseek(wfd, 0, SEEK_CUR) == (off_t)kEntryBytes, "the offset after a whole read");
    CHECK(lseek(wfd, 0, SEEK_SET) == 0, "lseek(0)");
    memset(whole, 0, kEntryBytes);
    CHECK(read(wfd, whole, kEntryBytes) == (ssize_t)kEntryBytes && memcmp(whole, data, kEntryBytes) == 0,
          "read again after lseek(0)");
    close(wfd);
    /* And a child after fork, and a dup'd descriptor, see them too. */
    wfd = open(path, O_RDONLY);
    CHECK(wfd >= 0 && read(wfd, whole, kEntryBytes + 1) == (ssize_t)kEntryBytes, "whole read of %s", path);
    int dfd = dup(wfd);
    CHECK(dfd >= 0 && pread(dfd, small, 8, 8) == 8 && memcmp(small, data + 8, 8) == 0, "pread of a dup");
    pid_t wpid = fork();
    CHECK(wpid >= 0, "fork");
    if (wpid == 0) {
      char c[8];
      _exit(pread(wfd, c, 8, 16) == 8 && memcmp(c, data + 16, 8) == 0 ? 0 : 1);
    }
    int wstatus = 0;
    CHECK(waitpid(wpid, &wstatus, 0) == wpid && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
          "a child's pread after the parent's whole read");
    close(dfd);
    close(wfd);
    free(whole);
  }

  /* The kept pair: the same bytes in MemKV and on the real filesystem. */
  Fill(data, kEntryBytes, 42);
  snprintf(path, sizeof path, "%s/keep.bin", kv_dir);
  WriteEntry(path, data, kEntryBytes);
  snprintf(path, sizeof path, "%s/keep.bin", real_dir);
  WriteEntry(path, data, kEntryBytes);
  free(back);
  free(data);
  printf("mlperf_entries: ok\n");
  return 0;
}
