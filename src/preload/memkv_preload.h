/* What libmemkv_preload.so exports besides the libc names it interposes: its
 * counters, for a program (or a test) that wants to know, while it runs,
 * whether every value it wrote reached MemKV (docs/preload.md, "Errors and
 * counters"). A program that is not linked against the library finds the
 * function with dlsym(RTLD_DEFAULT, "memkv_preload_stats") when it runs
 * under LD_PRELOAD (NULL otherwise).
 *
 * Conventions
 * - The counters are per process, since the library was loaded; a child
 *   made by fork() starts with its parent's counts at the fork.
 * - memkv_preload_stats is thread-safe and async-signal-safe (it reads
 *   atomics). Each counter is read on its own: taken while other threads put
 *   or get, the figures may be from slightly different moments.
 * - Fields are only ever added at the end: a caller passes the size of the
 *   struct it knows, and the library fills that many bytes at most. */
#ifndef MEMKV_PRELOAD_MEMKV_PRELOAD_H_
#define MEMKV_PRELOAD_MEMKV_PRELOAD_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct memkv_preload_stats_s {
  /* Puts of a file's whole content (fsync, fdatasync, the last close or
   * fclose, exit, the put half of a rename) and of mkdir's markers, tried. */
  uint64_t puts;
  /* Bytes of the puts that succeeded. */
  uint64_t put_bytes;
  /* Puts that failed (server down, TooLarge, ...): each made its call
   * return -1, or, where no call could (below), was written to stderr. */
  uint64_t put_errors;
  /* Of put_errors, those no call could return: a put at exit, or of a
   * descriptor replaced by dup2/dup3. Such a failure also makes the process
   * exit with status 74 (EX_IOERR) where it would have exited with 0. */
  uint64_t put_errors_unreported;
  /* Fetches of a value (a file's first read, fstat, ...), tried, and the
   * bytes of those that succeeded. */
  uint64_t gets;
  uint64_t get_bytes;
  /* Fetches that failed other than by a miss (a miss is ENOENT, no error). */
  uint64_t get_errors;
} memkv_preload_stats_t;

/* Copies the counters into *out, at most `size` bytes of them (pass
 * sizeof(memkv_preload_stats_t)), and returns the size of the library's own
 * struct. */
size_t memkv_preload_stats(memkv_preload_stats_t* out, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* MEMKV_PRELOAD_MEMKV_PRELOAD_H_ */
