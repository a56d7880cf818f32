/* memkv/kv_store.h: the kv_store ABI (vtable version 2) and MemKV's backend
 * of it, libkv_store_memkv.so (docs/kv-store-abi.md).
 *
 * An inference engine (llama.cpp's chunked slot save, oMLX's paged SSD
 * cache) persists KV state through a backend it loads at run time:
 *
 *   void* lib = dlopen("libkv_store_memkv.so", RTLD_NOW | RTLD_LOCAL);
 *   kv_store_get_vtable_fn get = (kv_store_get_vtable_fn)dlsym(lib, KV_STORE_GET_VTABLE_SYMBOL);
 *   const kv_store_vtable* vt = get();
 *   void* h = vt->open("memkv://10.0.0.1:9900,10.0.0.2:9900/llama");
 *   ... vt->put_chunk(h, ...) ... vt->put_manifest(h, ...) ... vt->close(h);
 *
 * kv_store_get_vtable is the library's only exported symbol. The table is
 * static: valid while the library is loaded, never written.
 *
 * Conventions (they hold for every function of the table):
 *
 * Return codes
 * - 0 (KV_STORE_OK) is success; every failure is negative, one of the
 *   KV_STORE_ERR_* codes below. A consumer that only tells success from
 *   failure tests `rc < 0`. The numbers never change; new codes are only
 *   ever appended (more negative).
 * - A miss is KV_STORE_ERR_NOT_FOUND and nothing else is: no chunk with that
 *   hash, no manifest with that name. Every other code is a failure of the
 *   call (a bad argument, no memory, the store timed out or is unreachable).
 * - Why a call failed is written to stderr as one line that names the call,
 *   its argument and the reason ("libkv_store_memkv: get_manifest 'slot-3':
 *   Unavailable: ..."), at most one line a second per handle; a miss is not
 *   logged. MEMKV_LOG_LEVEL=error or off silences the lines of failed calls;
 *   off also silences open's.
 *
 * Memory
 * - get_chunk and get_manifest set *out to a buffer from malloc() holding
 *   *out_len bytes; the caller releases it with free(). *out is never NULL on
 *   success, also for 0 bytes. On failure *out is NULL and *out_len 0.
 * - Inputs are only read during the call: the backend copies what it keeps.
 *
 * Threads
 * - A handle may be used by any number of threads at once. close must not
 *   race with other calls on the same handle, and the handle is invalid
 *   after it. Different handles share nothing.
 * - Calls on one handle do their network I/O without holding a lock of the
 *   handle, so threads' transfers overlap.
 *
 * Chunks and manifests
 * - A chunk is named by its hash (1..KV_STORE_MAX_HASH_BYTES bytes chosen by
 *   the consumer) and is immutable: putting a hash that is already stored,
 *   or already buffered by this handle, is a no-op, whatever the bytes.
 * - put_chunk may buffer the chunk in the handle (up to
 *   MEMKV_KV_STORE_BUFFER_BYTES, default 1 GiB, or 1024 chunks; past either
 *   bound the put flushes the buffer). Buffered chunks are durable no later
 *   than the next successful put_manifest on the handle: a flush asks the
 *   servers which of the buffered hashes they hold in one batch round trip,
 *   then sends only the others in batches. Chunks still buffered when the
 *   handle is closed are dropped (no manifest can name them). A get_chunk
 *   on the same handle sees its buffered chunks.
 * - A manifest is named by a C string (1..KV_STORE_MAX_NAME_BYTES bytes),
 *   holds up to the server's value limit (memory.max_value_size, default
 *   16 GiB), and is replaced atomically: a reader sees the old or
 *   the new bytes, never a mix. put_manifest first makes every chunk the
 *   handle had buffered or in flight durable, so once a manifest is visible
 *   every chunk it names is too; if that fails the manifest is not written.
 * - The backend never deletes chunks; delete_manifest removes the name only.
 *   A MemKV server in memory mode evicts the least recently used values when
 *   full, so a restore must treat a missing chunk as a miss of the whole
 *   object (KV_STORE_ERR_NOT_FOUND), never as corruption.
 *
 * URI and environment (open)
 * - "memkv://host:port[,host:port...]/namespace[?field=value&...]": the
 *   servers, and the namespace that prefixes every key (chunks under
 *   <namespace>/c/<hex hash>, manifests under <namespace>/m/<name>). A
 *   namespace may hold '/' ("omlx/Llama-3.2-1B"); a trailing '/' is dropped.
 * - The optional query is the engine's cache identity, from its own
 *   configuration: "?model=Llama-3.2-1B&kv_dtype=f16&block_tokens=256&
 *   tp_rank=0&tp_size=1&revision=...&layout=...&engine=llama.cpp&
 *   engine_version=...&extra.NAME=value", values percent-decoded. Handles
 *   whose identities differ in any field never read each other's chunks or
 *   manifests. Each field replaces its MEMKV_IDENTITY_* variable; with a
 *   model and no engine the engine is "kv_store". The query starts at the
 *   first '?' followed by a name and '='; any other '?' belongs to the
 *   namespace. An unknown field is refused by open, naming it and the
 *   fields allowed (docs/kv-store-abi.md, "URI").
 * - The rest comes from the environment: MEMKV_AUTH_KEY (required, 64 hex
 *   characters), MEMKV_TRANSPORT, MEMKV_TIMEOUT_MS, MEMKV_CONNECT_TIMEOUT_MS,
 *   MEMKV_NUM_CONNECTIONS, MEMKV_RDMA_*, MEMKV_PROMETHEUS_BIND,
 *   MEMKV_IDENTITY_* and MEMKV_LOG_LEVEL (every client option's variable,
 *   as for the client library, docs/configuration.md;
 *   MEMKV_CONFIG and MEMKV_SERVERS are not read), the handle's bounds
 *   MEMKV_KV_STORE_BUFFER_BYTES and MEMKV_KV_STORE_PREFETCH_BYTES, and
 *   MEMKV_KV_STORE_SHARED_CLIENTS.
 * - Handles opened with the same servers and settings share one client and
 *   its connections, kept after the last of them closes for the next open
 *   (MEMKV_KV_STORE_SHARED_CLIENTS, default 8 kept; 0: every handle its own
 *   client). A kept client that lost a server, and one inherited across
 *   fork, is not shared: open makes a new one.
 * - A server open cannot reach does not fail it: a new client asks the
 *   servers their identity, and one it cannot reach is asked again later.
 *   open returns NULL, and writes why to stderr, when the URI or a variable
 *   is wrong.
 */
#ifndef MEMKV_KV_STORE_H_
#define MEMKV_KV_STORE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Return codes ----------------------------------------------------- */

#define KV_STORE_OK 0
/* No chunk with that hash, no manifest with that name. */
#define KV_STORE_ERR_NOT_FOUND (-1)
/* A NULL handle or pointer, a length out of its range, a bad name. */
#define KV_STORE_ERR_INVALID_ARGUMENT (-2)
/* The backend could not allocate memory (an output, a buffered chunk). */
#define KV_STORE_ERR_NO_MEMORY (-3)
/* The operation's deadline (MEMKV_TIMEOUT_MS, default 5000) passed. */
#define KV_STORE_ERR_TIMEOUT (-4)
/* A server is unreachable, the connection was lost, or it is shutting down;
 * or it is overloaded and shed the put, or draining (try again later). */
#define KV_STORE_ERR_UNAVAILABLE (-5)
/* A server refused the key (MEMKV_AUTH_KEY) or a frame. */
#define KV_STORE_ERR_AUTH (-6)
/* A chunk or manifest over the server's value limit (memory.max_value_size). */
#define KV_STORE_ERR_TOO_LARGE (-7)
/* A server's store is full and nothing in it can be evicted right now. */
#define KV_STORE_ERR_FULL (-8)
/* Any other failure the servers or the transport reported (corrupt data,
 * a protocol error, a drive I/O error, an internal error). */
#define KV_STORE_ERR_IO (-9)

/* "ok", "not_found", ... ("unknown" for any other value). */
static inline const char* kv_store_error_name(int rc) {
  switch (rc) {
    case KV_STORE_OK: return "ok";
    case KV_STORE_ERR_NOT_FOUND: return "not_found";
    case KV_STORE_ERR_INVALID_ARGUMENT: return "invalid_argument";
    case KV_STORE_ERR_NO_MEMORY: return "no_memory";
    case KV_STORE_ERR_TIMEOUT: return "timeout";
    case KV_STORE_ERR_UNAVAILABLE: return "unavailable";
    case KV_STORE_ERR_AUTH: return "auth";
    case KV_STORE_ERR_TOO_LARGE: return "too_large";
    case KV_STORE_ERR_FULL: return "full";
    case KV_STORE_ERR_IO: return "io";
    default: return "unknown";
  }
}

/* ---- Limits of this backend ------------------------------------------- */

/* A chunk hash is 1..256 bytes (llama.cpp uses 8, oMLX 32). */
#define KV_STORE_MAX_HASH_BYTES 256
/* A manifest name is 1..512 bytes, NUL excluded. */
#define KV_STORE_MAX_NAME_BYTES 512

/* ---- The table -------------------------------------------------------- */

/* Version 1 ends at delete_manifest; version 2 adds prefetch_chunks. */
#define KV_STORE_VTABLE_VERSION 2

typedef struct {
  uint32_t version; /* 2: prefetch_chunks is valid */
  /* A handle for the URI, or NULL (the reason on stderr). */
  void* (*open)(const char* uri);
  /* Drops chunks still buffered, frees the handle. NULL is ignored. */
  void (*close)(void* h);
  /* Stores data (len bytes, data may be NULL when len is 0) under the hash;
   * may only buffer it (see "Chunks and manifests"). On an error the chunk
   * is either still buffered (the flush this put started failed; the next
   * put_manifest tries again) or was refused (a bad argument, no memory):
   * then the next put_manifest on the handle fails with the same code, so
   * no manifest names a chunk that is not stored. */
  int (*put_chunk)(void* h, const uint8_t* hash, size_t hash_len, const uint8_t* data, size_t len);
  /* The chunk's bytes: from the prefetch cache (handed over, no copy; the
   * entry leaves the cache), the handle's buffer, or the servers. */
  int (*get_chunk)(void* h, const uint8_t* hash, size_t hash_len, uint8_t** out, size_t* out_len);
  /* Makes every chunk buffered or in flight on the handle durable, then
   * replaces the manifest `name` with data (len bytes; NULL when 0). */
  int (*put_manifest)(void* h, const char* name, const uint8_t* data, size_t len);
  int (*get_manifest)(void* h, const char* name, uint8_t** out, size_t* out_len);
  /* KV_STORE_ERR_NOT_FOUND when there was no such manifest (a consumer
   * that wants an idempotent delete treats it as success). */
  int (*delete_manifest)(void* h, const char* name);
  /* hashes: count hashes of hash_len bytes each, back to back. Fetches
   * them in one batch into the handle's cache, so the get_chunk calls that
   * follow need no round trip. The cache holds at most
   * MEMKV_KV_STORE_PREFETCH_BYTES (default 1 GiB; 0 turns prefetching off)
   * and 65536 chunks, oldest out first; hashes past the bound are left to
   * get_chunk. KV_STORE_ERR_NOT_FOUND when some chunk is not stored (the
   * others are cached). */
  int (*prefetch_chunks)(void* h, const uint8_t* hashes, size_t hash_len, size_t count);
} kv_store_vtable;

/* The one exported symbol, by name and type, for dlsym. */
#define KV_STORE_GET_VTABLE_SYMBOL "kv_store_get_vtable"
typedef const kv_store_vtable* (*kv_store_get_vtable_fn)(void);
const kv_store_vtable* kv_store_get_vtable(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMKV_KV_STORE_H_ */
