/* memkv/memkv.h: the stable C API of the MemKV client.
 *
 * Conventions (they hold for every function here):
 *
 * Errors
 * - Every function that can fail returns a memkv_status_t: 0 (MEMKV_OK) is
 *   success, any other value is one of the MEMKV_* codes below, the same
 *   numbers the wire protocol, the C++ API (memkv::StatusCode) and Python use.
 *   They never change; new codes are only ever appended.
 * - On failure, memkv_last_error() returns a message for the calling thread
 *   that names the function and what failed ("InvalidArgument: memkv_put:
 *   key is NULL", "InvalidArgument: ClientOptions.transport 'x' is not a
 *   transport; ..."), at most 4095 bytes (a longer one is cut and ends in "...").
 *   It is per thread, so threads never see each other's messages, and it is
 *   left alone by calls that succeed. A batch call returns MEMKV_OK when the
 *   call itself ran; its per-key codes are in the caller's statuses array and
 *   the message of its first key that failed with something other than
 *   MEMKV_NOT_FOUND (a miss is an answer, not a failure) becomes the last error.
 * - A NULL pointer where an argument is required gives MEMKV_INVALID_ARGUMENT
 *   and a message naming that argument. A pointer with a length may be NULL
 *   when the length is 0 (an empty value); the key of a single-key call never
 *   (in a batch, a NULL key of length 0 is an empty key, refused for that
 *   key alone).
 * - No C++ exception ever leaves this library: running out of memory gives
 *   MEMKV_RESOURCE_EXHAUSTED, anything else unexpected MEMKV_INTERNAL.
 *
 * Ownership and lifetime
 * - The library copies every string and every array an argument points to
 *   before the call returns (options setters included); the caller may free
 *   or reuse them at once. The exceptions: memory passed to
 *   memkv_register_memory, which stays in use until unregistered, and the
 *   value memory, buffers and result arrays of a memkv_async_* submission,
 *   lent until its completion is polled ("Asynchronous batches").
 * - Objects the caller creates, the caller frees, each with its own function:
 *   memkv_client_t (memkv_client_close), memkv_options_t
 *   (memkv_options_destroy, at any time after memkv_client_open_options:
 *   the client keeps its own copy), the value buffers of memkv_get_alloc
 *   (memkv_free) and key pages (memkv_key_page_free). Nothing else returned
 *   needs freeing.
 * - Returned `const char*` strings belong to the library: memkv_version,
 *   memkv_status_name and memkv_log_level_name return static strings;
 *   memkv_transport's is static too; memkv_last_error's stays valid until the
 *   calling thread's next call into this library. The component and message
 *   given to a log callback are valid only during that callback.
 *
 * Threads
 * - A memkv_client_t is safe to use from many threads at once, including
 *   memkv_client_stats. memkv_client_close must not race with other calls on
 *   the same client.
 * - A memkv_options_t is a plain value: one thread at a time may set it; once
 *   set, several threads may open clients from it at once.
 * - A log callback is called on the thread of the call that logs (any thread
 *   using the client, or the client's metrics thread), possibly from several
 *   threads at once. It must not call back into this library's client
 *   functions, must not unwind (throw or longjmp) through it, and its ctx
 *   must stay valid until the client is closed.
 *
 * Keys and values
 * - Keys are byte strings (pointer + length), 1..1024 bytes. Values are bytes,
 *   up to the server's limit (its memory.max_value_size, default 16 GiB, at
 *   most 64 GiB, announced when the client connects; 256 MiB for servers
 *   that predate it): a larger put fails with MEMKV_TOO_LARGE before it is
 *   sent.
 */
#ifndef MEMKV_MEMKV_H_
#define MEMKV_MEMKV_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ---------------------------------------------------------- */

/* The version of this header. memkv_version() says which library is loaded;
 * with a shared library the two can differ (same major: compatible). */
#define MEMKV_VERSION_MAJOR 0
#define MEMKV_VERSION_MINOR 1
#define MEMKV_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH: 0.1.0 is 100, 1.2.3 is 10203. */
#define MEMKV_VERSION_NUMBER (MEMKV_VERSION_MAJOR * 10000 + MEMKV_VERSION_MINOR * 100 + MEMKV_VERSION_PATCH)
#define MEMKV_STRINGIFY_(x) #x
#define MEMKV_XSTRINGIFY_(x) MEMKV_STRINGIFY_(x)
/* "MAJOR.MINOR.PATCH". */
#define MEMKV_VERSION_STRING                                                    \
  MEMKV_XSTRINGIFY_(MEMKV_VERSION_MAJOR) "." MEMKV_XSTRINGIFY_(MEMKV_VERSION_MINOR) "." \
  MEMKV_XSTRINGIFY_(MEMKV_VERSION_PATCH)

/* The loaded library's version, "MAJOR.MINOR.PATCH" (static string). */
const char* memkv_version(void);
/* The same as a number, encoded as MEMKV_VERSION_NUMBER. */
uint32_t memkv_version_number(void);

/* ---- Status codes ----------------------------------------------------- */

typedef int memkv_status_t;

#define MEMKV_OK 0
#define MEMKV_NOT_FOUND 1
#define MEMKV_INVALID_ARGUMENT 2
#define MEMKV_DEADLINE_EXCEEDED 3
#define MEMKV_UNAVAILABLE 4
#define MEMKV_AUTH_FAILED 5
#define MEMKV_UNSUPPORTED_VERSION 6
#define MEMKV_TOO_LARGE 7
#define MEMKV_RESOURCE_EXHAUSTED 8
#define MEMKV_CORRUPTION 9
#define MEMKV_PROTOCOL_ERROR 10
#define MEMKV_INTERNAL 11
#define MEMKV_IO_ERROR 12
#define MEMKV_FAILED_PRECONDITION 13
#define MEMKV_PERMISSION_DENIED 14
/* The server is overloaded and shed the put: not a failure. Skip the store
 * (the value is simply not there later) and go on; do not retry at once. */
#define MEMKV_BUSY 15
/* The server is draining and takes no new keys. The client itself places
 * such a put on the next server, so callers rarely see this code. */
#define MEMKV_DRAINING 16

/* The calling thread's message for its last failed call ("" if none). */
const char* memkv_last_error(void);
/* Stable name of a code: "NotFound", ... ("Unknown" outside 0..16). */
const char* memkv_status_name(memkv_status_t status);

/* ---- Options ---------------------------------------------------------- */

/* Log levels: a client passes on lines at or above its level. */
#define MEMKV_LOG_DEBUG 0
#define MEMKV_LOG_INFO 1
#define MEMKV_LOG_WARN 2
#define MEMKV_LOG_ERROR 3
#define MEMKV_LOG_OFF 4

/* "debug", "info", "warn", "error", "off" ("unknown" outside 0..4). */
const char* memkv_log_level_name(int level);

/* Receives one log line: its level (MEMKV_LOG_*), the component that wrote
 * it ("client", "rdma", ...; may be ""), and the message without timestamp
 * or newline. Both strings are valid only during the call. */
typedef void (*memkv_log_fn)(void* ctx, int level, const char* component, const char* message);

/* Every setting of a client. A fresh object holds the defaults: no servers,
 * no key, transport "auto", 4 connections per server, timeout 5000 ms,
 * connect timeout 2000 ms, 4 async threads, RDMA on the first device with
 * MTU 4096, retry count 6, timeout exponent 14, 2 QPs, no metrics endpoint,
 * log level WARN to stderr (docs/configuration.md describes each setting). No environment
 * variable is read. Setters copy their strings and do not check values
 * against the rules: memkv_client_open_options does, naming the setting. */
typedef struct memkv_options memkv_options_t;

/* NULL only when out of memory. */
memkv_options_t* memkv_options_create(void);
/* NULL is ignored. */
void memkv_options_destroy(memkv_options_t* options);

/* Sets the client option `name` from its text, as MEMKV_<NAME> takes it:
 * every option of docs/configuration.md's client table ("transport", "rdma_mtu",
 * "rdma_gid_index", ...; list options as a comma list). The value is checked
 * now: MEMKV_INVALID_ARGUMENT naming the option and what it allows, or listing
 * the options for an unknown name; `options` is unchanged then. The typed
 * setters below store without checking; memkv_client_open_options checks. */
memkv_status_t memkv_options_set(memkv_options_t* options, const char* name, const char* value);
/* Replaces the server list with a comma list "host:port,host:port"; blanks
 * around entries and empty entries are dropped. */
memkv_status_t memkv_options_set_servers(memkv_options_t* options, const char* servers);
/* Appends one "host:port". */
memkv_status_t memkv_options_add_server(memkv_options_t* options, const char* server);
/* 64 hex characters: the servers' 32-byte key. */
memkv_status_t memkv_options_set_auth_key(memkv_options_t* options, const char* auth_key_hex);
/* "auto" (RDMA where it works, else TCP), "tcp" or "rdma" (never falls back). */
memkv_status_t memkv_options_set_transport(memkv_options_t* options, const char* transport);
/* Connections per server, 1..256. */
memkv_status_t memkv_options_set_num_connections(memkv_options_t* options, uint32_t num_connections);
/* Deadline of every operation, at least 1. */
memkv_status_t memkv_options_set_timeout_ms(memkv_options_t* options, uint32_t timeout_ms);
memkv_status_t memkv_options_set_connect_timeout_ms(memkv_options_t* options, uint32_t connect_timeout_ms);
/* Replaces the local RDMA devices to use with a comma list ("mlx5_0,mlx5_1");
 * "" means the first one present. */
memkv_status_t memkv_options_set_rdma_devices(memkv_options_t* options, const char* devices);
/* RDMA path MTU (256, 512, 1024, 2048 or 4096; the server's rdma.mtu). */
memkv_status_t memkv_options_set_rdma_mtu(memkv_options_t* options, uint32_t mtu);
/* RDMA transport retries, 0..7. */
memkv_status_t memkv_options_set_rdma_retry_count(memkv_options_t* options, uint32_t retry_count);
/* RDMA local ACK timeout exponent, 1..31: 4.096 us * 2^timeout. */
memkv_status_t memkv_options_set_rdma_timeout(memkv_options_t* options, uint32_t timeout);
/* RDMA QPs per server connection, 1..16. */
memkv_status_t memkv_options_set_rdma_qps(memkv_options_t* options, uint32_t qps);
/* "host:port": the client serves its metrics as Prometheus text on
 * http://host:port/metrics; "" (the default) turns that off. Opening fails,
 * naming the address, when it cannot be bound. */
memkv_status_t memkv_options_set_prometheus_bind(memkv_options_t* options, const char* host_port);
/* MEMKV_LOG_DEBUG .. MEMKV_LOG_OFF; MEMKV_INVALID_ARGUMENT for anything else. */
memkv_status_t memkv_options_set_log_level(memkv_options_t* options, int level);
/* Lines at or above the log level go to fn(ctx, ...) instead of stderr;
 * fn NULL puts stderr back. ctx must outlive every client opened with it. */
memkv_status_t memkv_options_set_log_callback(memkv_options_t* options, memkv_log_fn fn, void* ctx);

/* ---- Clients ---------------------------------------------------------- */

typedef struct memkv_client memkv_client_t;

/* Opens a client with every setting of `options` (which the client copies).
 * MEMKV_INVALID_ARGUMENT naming the bad setting; *out is left alone on
 * failure. Opening resolves each dns:/srv: entry of the server list (within
 * resolve_timeout_ms) and asks each server who it is (its id and weight, for
 * placement; docs/fleet.md), waiting at most connect_timeout_ms for a server
 * that does not connect, and timeout_ms for an answer; a server not reached
 * does not fail the open: it is asked again on its backoff. */
memkv_status_t memkv_client_open_options(const memkv_options_t* options, memkv_client_t** out);
/* servers: comma list "host:port,..."; auth_key_hex: 64 hex characters;
 * timeout_ms: deadline of every operation (0 = 5000). Other settings are
 * their defaults. */
memkv_status_t memkv_client_open(const char* servers, const char* auth_key_hex, uint32_t timeout_ms,
                                 memkv_client_t** out);
/* From MEMKV_CONFIG, then MEMKV_SERVERS, MEMKV_AUTH_KEY, ... (docs/configuration.md). */
memkv_status_t memkv_client_open_env(memkv_client_t** out);
/* NULL is ignored. */
void memkv_client_close(memkv_client_t* client);

/* ---- Single keys ------------------------------------------------------ */

memkv_status_t memkv_put(memkv_client_t* client, const void* key, size_t key_len, const void* value,
                         size_t value_len);
/* Reads the value into buf (capacity buf_len) with no intermediate copy and
 * sets *value_len. MEMKV_TOO_LARGE, with *value_len unchanged, when buf is
 * too small; MEMKV_NOT_FOUND on a miss. */
memkv_status_t memkv_get(memkv_client_t* client, const void* key, size_t key_len, void* buf, size_t buf_len,
                         size_t* value_len);
/* For a value whose size is not known in advance: on success *value is a
 * buffer the library allocated holding the *value_len bytes, which the
 * caller frees with memkv_free. *value is never NULL on success, also for a
 * 0-byte value. On failure *value is NULL and *value_len 0. It costs one
 * copy more than memkv_get. */
memkv_status_t memkv_get_alloc(memkv_client_t* client, const void* key, size_t key_len, void** value,
                               size_t* value_len);
/* Frees a buffer from memkv_get_alloc; NULL is ignored. */
void memkv_free(void* ptr);
memkv_status_t memkv_delete(memkv_client_t* client, const void* key, size_t key_len);
/* *present is set to 1 or 0. */
memkv_status_t memkv_exists(memkv_client_t* client, const void* key, size_t key_len, int* present);
/* *size is set to the size of the value under key, without reading its
 * bytes (an index lookup on the server); MEMKV_NOT_FOUND on a miss. */
memkv_status_t memkv_value_size(memkv_client_t* client, const void* key, size_t key_len, uint64_t* size);

/* ---- Batches ----------------------------------------------------------
 * Key i is keys[i] of key_lens[i] bytes, for i < count. Keys may live on
 * different servers: the call fans out and pipelines. Each call returns
 * MEMKV_OK when it ran, with the code of key i in statuses[i]; *prefix (prefix
 * may be NULL) is the number of leading keys whose code is MEMKV_OK, which is
 * what a prefix-cache lookup wants. At most 1024 keys per call. */

/* Stores values[i] (value_lens[i] bytes) under key i. */
memkv_status_t memkv_batch_put(memkv_client_t* client, const void* const* keys, const size_t* key_lens,
                               const void* const* values, const size_t* value_lens, size_t count,
                               memkv_status_t* statuses, size_t* prefix);
/* Reads the value of key i into bufs[i] (capacity buf_lens[i]) and sets
 * value_lens[i] to its size, or to 0 when statuses[i] is not MEMKV_OK.
 * MEMKV_TOO_LARGE for a key whose buffer is too small, MEMKV_NOT_FOUND for a
 * miss. */
memkv_status_t memkv_batch_get(memkv_client_t* client, const void* const* keys, const size_t* key_lens,
                               void* const* bufs, const size_t* buf_lens, size_t count, size_t* value_lens,
                               memkv_status_t* statuses, size_t* prefix);
/* statuses[i] is MEMKV_OK when key i is present, MEMKV_NOT_FOUND when not. */
memkv_status_t memkv_batch_exists(memkv_client_t* client, const void* const* keys, const size_t* key_lens,
                                  size_t count, memkv_status_t* statuses, size_t* prefix);

/* ---- Put options and prefix matching ---------------------------------
 * What a put may say about its value besides its bytes (memkv/put_options.h,
 * docs/client-library.md "Put options"), and the prefix-cache lookup.
 *
 *   memkv_put_options_t o;
 *   memkv_put_options_init(&o);
 *   o.ttl_ms = 60000; o.retention = MEMKV_RETENTION_PINNED;
 *   memkv_put_with(c, key, key_len, value, value_len, &o);
 *
 * A server that predates options stores such a put as a plain one (the
 * options dropped, counted in memkv_stats_t.put_options_dropped). */

#define MEMKV_RETENTION_NORMAL 0      /* least recently used first */
#define MEMKV_RETENTION_PINNED 1      /* not evicted while its TTL runs; capped */
#define MEMKV_RETENTION_EVICT_FIRST 2 /* evicted before any normal value */

#define MEMKV_HASH_BYTES 0 /* block hashes are opaque bytes */
#define MEMKV_HASH_INT64 1 /* block hashes are 8 bytes, a little-endian int64 */

/* Longest block_hash / parent_hash, in bytes. */
#define MEMKV_MAX_BLOCK_HASH_BYTES 64

/* The struct only ever grows at its end: memkv_put_options_init sets
 * struct_size to sizeof(memkv_put_options_t) and every field to "none", so
 * a program built against an older header keeps working. Pointers with a
 * length may be NULL when the length is 0; the bytes are copied before the
 * call returns. */
typedef struct memkv_put_options {
  size_t struct_size;
  uint64_t ttl_ms;          /* lifetime from the put; 0: none */
  int32_t retention;        /* MEMKV_RETENTION_* */
  int32_t hash_kind;        /* MEMKV_HASH_* */
  const void* parent_key;   /* the previous block's key (0..1024 bytes) */
  size_t parent_key_len;
  const void* block_hash;   /* this block's hash (0..64 bytes) */
  size_t block_hash_len;
  const void* parent_hash;  /* the parent block's hash (0..64 bytes) */
  size_t parent_hash_len;
} memkv_put_options_t;

/* Fills *options with no options at all (a plain put) and its struct_size. */
void memkv_put_options_init(memkv_put_options_t* options);

/* memkv_put with options (NULL: a plain put). MEMKV_INVALID_ARGUMENT naming
 * the field when one is out of range; MEMKV_RESOURCE_EXHAUSTED when the
 * server refuses a pin past its pinned-bytes cap. */
memkv_status_t memkv_put_with(memkv_client_t* client, const void* key, size_t key_len, const void* value,
                              size_t value_len, const memkv_put_options_t* options);
/* memkv_batch_put with options[i] for key i (options NULL: plain puts). */
memkv_status_t memkv_batch_put_with(memkv_client_t* client, const void* const* keys, const size_t* key_lens,
                                    const void* const* values, const size_t* value_lens,
                                    const memkv_put_options_t* options, size_t count, memkv_status_t* statuses,
                                    size_t* prefix);
/* *matched is the length of the longest leading run of the keys that is
 * stored (count when all are): the prefix-cache lookup, one request per
 * server, in parallel, each server stopping at its first miss. A key whose
 * server cannot be reached counts as a miss. At most 1024 keys. */
memkv_status_t memkv_match_prefix(memkv_client_t* client, const void* const* keys, const size_t* key_lens,
                                  size_t count, size_t* matched);

/* ---- Asynchronous batches ---------------------------------------------
 * The batch calls above, submitted without waiting (docs/client-library.md,
 * "Asynchronous calls"; memkv/async.h is the C++ side). A submit call
 * returns at once with an id (in *id; id may be NULL); the client's driver
 * threads run the batch, and its completion is taken by memkv_async_poll,
 * which also writes the per-key codes (and, for a get, value lengths) into
 * the arrays given at submission. Key i is keys[i] of key_lens[i] bytes.
 *
 *   int fd; memkv_async_fd(c, &fd);          // readable while completions wait
 *   memkv_async_get(c, keys, key_lens, bufs, buf_lens, n, value_lens, statuses, tag, &id);
 *   ... poll(fd) in the program's event loop ...
 *   memkv_async_completion_t done[16]; size_t got;
 *   memkv_async_poll(c, done, 16, 0, &got);   // statuses and value_lens filled
 *
 * Rules:
 * - Every submission completes exactly once: its completion has cancelled 0
 *   and the per-key codes of the matching memkv_batch_* call, or cancelled 1
 *   and every key MEMKV_UNAVAILABLE (it was taken back before it started).
 * - Keys and the arrays of pointers and lengths are copied, like everywhere
 *   in this API. Unlike everywhere else, the memory that values[i] and
 *   bufs[i] point to, and the statuses and value_lens arrays, stay lent to
 *   the client until memkv_async_poll returns the submission's completion:
 *   a get writes into bufs[i] until then, a put reads values[i].
 * - memkv_async_cancel takes back a submission that has not started
 *   (*cancelled 1: it then completes as cancelled and its buffers were
 *   never touched); one already running finishes within the client's
 *   timeout. memkv_client_close cancels what has not started, waits for
 *   what is running, and drops the completions.
 * - Completions arrive in any order; match them by id or by the caller's
 *   tag. Every memkv_async_* function is safe from any thread; polling from
 *   several threads hands each completion to one of them. */

#define MEMKV_ASYNC_GET 0
#define MEMKV_ASYNC_PUT 1
#define MEMKV_ASYNC_EXISTS 2
#define MEMKV_ASYNC_DELETE 3

typedef struct memkv_async_completion {
  uint64_t id;
  uint64_t tag;           /* as submitted */
  int op;                 /* MEMKV_ASYNC_* */
  int cancelled;          /* 1: taken back before it started */
  size_t count;           /* keys; statuses[0..count) are filled */
  size_t prefix;          /* leading keys whose code is MEMKV_OK */
  /* MEMKV_OK, or the code of the first key that failed with something
   * other than MEMKV_NOT_FOUND (its message is then the last error). */
  memkv_status_t status;
} memkv_async_completion_t;

/* memkv_batch_get, submitted: value_lens[i] and statuses[i] are set when the
 * completion is polled. */
memkv_status_t memkv_async_get(memkv_client_t* client, const void* const* keys, const size_t* key_lens,
                               void* const* bufs, const size_t* buf_lens, size_t count, size_t* value_lens,
                               memkv_status_t* statuses, uint64_t tag, uint64_t* id);
/* memkv_batch_put, submitted. */
memkv_status_t memkv_async_put(memkv_client_t* client, const void* const* keys, const size_t* key_lens,
                               const void* const* values, const size_t* value_lens, size_t count,
                               memkv_status_t* statuses, uint64_t tag, uint64_t* id);
/* memkv_batch_exists, submitted: MEMKV_OK present, MEMKV_NOT_FOUND absent. */
memkv_status_t memkv_async_exists(memkv_client_t* client, const void* const* keys, const size_t* key_lens,
                                  size_t count, memkv_status_t* statuses, uint64_t tag, uint64_t* id);
/* Deletes the keys: MEMKV_OK deleted, MEMKV_NOT_FOUND was absent. */
memkv_status_t memkv_async_delete(memkv_client_t* client, const void* const* keys, const size_t* key_lens,
                                  size_t count, memkv_status_t* statuses, uint64_t tag, uint64_t* id);
/* *fd: readable (POLLIN) while completions are waiting. It belongs to the
 * client: do not read or close it. */
memkv_status_t memkv_async_fd(memkv_client_t* client, int* fd);
/* Takes up to max waiting completions into out[0..*n), first waiting up to
 * timeout_ms for one (0: not at all; negative: without limit). *n 0 when
 * none came. A caller that waits may first run a submission no driver
 * thread has started on its own thread, and then returns after that batch
 * (at most the client's deadline). */
memkv_status_t memkv_async_poll(memkv_client_t* client, memkv_async_completion_t* out, size_t max, int timeout_ms,
                                size_t* n);
/* *cancelled 1 when submission id had not started and now completes as
 * cancelled; 0 when it is running or done, or not this client's. */
memkv_status_t memkv_async_cancel(memkv_client_t* client, uint64_t id, int* cancelled);

/* ---- Key listing ------------------------------------------------------
 * The keys that start with a prefix, a page at a time in bytewise order.
 * Every server is asked and their pages merged: a server that cannot be
 * reached fails the call (MEMKV_UNAVAILABLE naming it). A key present for the
 * whole listing appears exactly once; one put or deleted meanwhile may or
 * may not.
 *
 *   memkv_key_page_t* page = NULL;
 *   const void* cursor = NULL; size_t cursor_len = 0;
 *   do {
 *     if (memkv_list_keys(c, "model/", 6, cursor, cursor_len, 1000, &page) != MEMKV_OK) break;
 *     for (size_t i = 0; i < memkv_key_page_count(page); ++i) { size_t n; memkv_key_page_key(page, i, &n); ... }
 *     ... copy the cursor (memkv_key_page_cursor) before freeing the page ...
 *   } while (cursor_len > 0);
 */
typedef struct memkv_key_page memkv_key_page_t;

/* One page: at most page_size (1..1024) keys starting with prefix
 * (prefix_len bytes; 0: every key) that sort after cursor (cursor_len bytes;
 * 0: from the first, then the previous page's memkv_key_page_cursor). On
 * MEMKV_OK, *out is a page the caller frees with memkv_key_page_free. */
memkv_status_t memkv_list_keys(memkv_client_t* client, const void* prefix, size_t prefix_len, const void* cursor,
                               size_t cursor_len, size_t page_size, memkv_key_page_t** out);
/* The number of keys in the page (0 for NULL). */
size_t memkv_key_page_count(const memkv_key_page_t* page);
/* Key i (i < count): its bytes, not NUL-terminated, valid until the page is
 * freed, with its length in *len. NULL (and *len 0) when i is out of range. */
const void* memkv_key_page_key(const memkv_key_page_t* page, size_t i, size_t* len);
/* The cursor of the next page, valid until the page is freed; NULL and
 * *len 0 when the listing is complete. */
const void* memkv_key_page_cursor(const memkv_key_page_t* page, size_t* len);
/* NULL is ignored. */
void memkv_key_page_free(memkv_key_page_t* page);

/* ---- RDMA memory ------------------------------------------------------ */

/* Registers [base, base+len) once so puts from it and gets into it
 * move with no copy (docs/rdma.md). MEMKV_OK and nothing done when the client
 * does not use RDMA. The region must stay mapped until unregistered. */
memkv_status_t memkv_register_memory(memkv_client_t* client, void* base, size_t len);
/* MEMKV_NOT_FOUND when base does not start a registered region. */
memkv_status_t memkv_unregister_memory(memkv_client_t* client, void* base);

/* ---- Statistics ------------------------------------------------------- */

/* memkv_stats_t.transport: what the client's new operations use now. */
#define MEMKV_TRANSPORT_TCP 0
#define MEMKV_TRANSPORT_RDMA 1

/* memkv_stats_t.rdma_state. */
#define MEMKV_RDMA_OFF 0       /* transport "tcp" */
#define MEMKV_RDMA_ACTIVE 1    /* new operations use RDMA */
#define MEMKV_RDMA_FALLBACK 2  /* RDMA failed; the client moved to TCP for good */
#define MEMKV_RDMA_NO_DEVICE 3 /* transport "auto" on a host with no RDMA device: normal, on TCP */

/* completion_errors has one slot per ibv_wc_status value below this; the
 * last slot also counts any larger value. */
#define MEMKV_STATS_COMPLETION_STATUSES 32
/* Room for the text fields, NUL included; longer texts are cut. */
#define MEMKV_STATS_TEXT_BYTES 256

/* The client's counters since it was opened. The struct only ever grows at
 * its end: set struct_size to sizeof(memkv_stats_t) before the call. The
 * library fills the fields that fit in both its struct and yours, zeroes any
 * rest of yours, and sets struct_size to the number of bytes it filled, so a
 * program built with a newer header can tell which fields an older library
 * knew. */
typedef struct memkv_stats {
  size_t struct_size;
  uint64_t ops;                /* keys operated on (a batch of n counts n) */
  uint64_t bytes_sent;
  uint64_t bytes_received;
  uint64_t checksum_failures;  /* values dropped for a checksum mismatch */
  uint64_t timeouts;           /* deadlines hit */
  uint64_t connections_opened; /* server connections set up */
  int32_t transport;           /* MEMKV_TRANSPORT_* */
  int32_t rdma_state;          /* MEMKV_RDMA_* */
  /* An operation counts under the transport that carried its value bytes;
   * exists and delete are control only (TCP). */
  uint64_t rdma_ops;
  uint64_t rdma_bytes;         /* value bytes moved by RDMA WRITE / READ */
  uint64_t rdma_zero_copy_ops; /* of rdma_ops: straight from / into registered memory */
  uint64_t tcp_ops;
  uint64_t tcp_bytes;          /* value bytes carried inline over TCP */
  uint64_t rdma_reissued;      /* operations re-issued over TCP after an RDMA failure */
  uint64_t fallbacks;          /* 0 or 1: the client moved from RDMA to TCP for good */
  /* RDMA work completions in error, by ibv_wc_status value
   * (12 = IBV_WC_RETRY_EXC_ERR, 5 = IBV_WC_WR_FLUSH_ERR, ...). */
  uint64_t completion_errors[MEMKV_STATS_COMPLETION_STATUSES];
  /* Why the client fell back (or, for MEMKV_RDMA_NO_DEVICE, why it is on
   * TCP); "" otherwise. */
  char fallback_reason[MEMKV_STATS_TEXT_BYTES];
  /* The last RDMA connection set up: device, GID index, traffic class,
   * service level, MTU, QPs and server; "" if none. */
  char rdma_path[MEMKV_STATS_TEXT_BYTES];
  /* Puts whose options were dropped because their server predates them
   * (stored as plain puts). Filled when struct_size reaches it. */
  uint64_t put_options_dropped;
  /* A changing fleet (docs/fleet.md); filled when struct_size reaches them. */
  uint64_t grace_lookups;      /* misses asked again of the key's previous owner */
  uint64_t grace_hits;         /* of grace_lookups: found there */
  uint64_t stores_shed;        /* puts shed (MEMKV_BUSY, not stored) by a busy server or by the client */
  uint64_t placement_changes;  /* placements made after servers joined, left or changed */
  uint64_t fallback_reads;     /* reads and deletes asked of the next server (owner unreachable) */
  uint64_t fallback_writes;    /* puts stored on the next server (owner down or draining) */
  uint64_t server_problems;    /* duplicate server ids, ids changed behind an address */
  /* The hit-rate split (docs/client-library.md, "Cache identity"); filled
   * when struct_size reaches them. */
  uint64_t lookups;            /* keys looked up: each key of a get, an exists or a prefix match */
  uint64_t found;              /* of lookups: found */
  uint64_t fetched;            /* of found: values fetched (gets) */
  uint64_t fetched_in_time;    /* restored blocks the engine used (memkv_report_restores) */
  uint64_t fetched_late;       /* restored blocks that came too late to use */
  /* Of rdma_ops: puts written into a spare slot granted ahead (one round
   * trip); filled when struct_size reaches it. */
  uint64_t rdma_spare_puts;
} memkv_stats_t;

/* MEMKV_INVALID_ARGUMENT when struct_size is below MEMKV_STATS_MIN_SIZE, the
 * size of the struct's first version (every header's struct is at least that). */
#define MEMKV_STATS_MIN_SIZE (offsetof(memkv_stats_t, rdma_path) + MEMKV_STATS_TEXT_BYTES)
memkv_status_t memkv_client_stats(memkv_client_t* client, memkv_stats_t* stats);

/* Cache identity (the identity_* options of memkv_options_set;
 * docs/client-library.md, "Cache identity"): the server keeps the client's
 * keys apart from every other identity's. Its tag, 16 hex digits ("" without one, or
 * for NULL); valid while the client is open. */
const char* memkv_identity_tag(memkv_client_t* client);
/* The engine used `in_time` restored blocks (it did not recompute them) and
 * got `late` more too late to use: counted in memkv_stats_t and reported to
 * a server at most once a second and when the client closes. */
memkv_status_t memkv_report_restores(memkv_client_t* client, uint64_t in_time, uint64_t late);
/* "rdma" or "tcp": what the client's new operations use now ("" for NULL). */
const char* memkv_transport(memkv_client_t* client);

#ifdef __cplusplus
}
#endif

#endif /* MEMKV_MEMKV_H_ */
