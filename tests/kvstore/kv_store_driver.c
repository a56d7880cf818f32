/* kv_store_driver: a C consumer of libkv_store_memkv.so, as llama.cpp's
 * chunked slot save is one. It dlopens the plugin by path, takes the table
 * from kv_store_get_vtable and runs one scenario against the servers of the
 * URI; kv_store_test.cc starts the servers and runs it.
 *
 *   kv_store_driver PLUGIN URI SCENARIO [ARGS]
 *
 * Prints "ok SCENARIO" and exits 0, or prints "FAIL file:line: what" and
 * exits 1. The plugin writes its own lines (why a call failed) to stderr.
 *
 * A chunk is named by an 8-byte hash made from (seed, index) and holds bytes
 * made from its hash, so any process can check it. A manifest is the chunk
 * size (8 bytes, little-endian) followed by the hashes of its chunks. Every
 * buffer a get returns is released with free(), as the ABI says.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memkv/kv_store.h"

#define HASH_BYTES 8

static const kv_store_vtable* vt;
static const char* uri;

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                \
      fflush(stdout);                                                       \
      exit(1);                                                              \
    }                                                                       \
  } while (0)
#define CHECK_RC(call, want)                                                              \
  do {                                                                                    \
    int rc_ = (call);                                                                     \
    if (rc_ != (want)) {                                                                  \
      printf("FAIL %s:%d: %s returned %d (%s), wanted %d (%s)\n", __FILE__, __LINE__, #call, rc_, \
             kv_store_error_name(rc_), (want), kv_store_error_name(want));                \
      fflush(stdout);                                                                     \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

/* ---- Chunks and manifests ----------------------------------------------- */

static uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static void ChunkHash(uint64_t seed, uint64_t index, uint8_t out[HASH_BYTES]) {
  uint64_t v = Mix(seed * 1000003u + index);
  for (int i = 0; i < HASH_BYTES; ++i) out[i] = (uint8_t)(v >> (8 * i));
}

/* The bytes of the chunk named `hash`, `size` of them. */
static void ChunkBytes(const uint8_t* hash, size_t size, uint8_t* out) {
  uint64_t state = 0;
  for (int i = 0; i < HASH_BYTES; ++i) state |= (uint64_t)hash[i] << (8 * i);
  for (size_t i = 0; i < size; ++i) {
    if (i % 8 == 0) state = Mix(state);
    out[i] = (uint8_t)(state >> (8 * (i % 8)));
  }
}

static int ChunkMatches(const uint8_t* hash, const uint8_t* data, size_t size) {
  uint8_t* want = malloc(size ? size : 1);
  CHECK(want != NULL);
  ChunkBytes(hash, size, want);
  int same = memcmp(want, data, size) == 0;
  free(want);
  return same;
}

/* Puts chunks first..first+count-1 of `seed` (size bytes each) and the
 * manifest `name` naming them, on handle h. The first failing code, or 0. */
static int Save(void* h, const char* name, uint64_t seed, uint64_t first, size_t count, size_t size) {
  size_t manifest_len = 8 + count * HASH_BYTES;
  uint8_t* manifest = malloc(manifest_len);
  uint8_t* data = malloc(size ? size : 1);
  CHECK(manifest != NULL && data != NULL);
  for (int i = 0; i < 8; ++i) manifest[i] = (uint8_t)((uint64_t)size >> (8 * i));
  int rc = KV_STORE_OK;
  for (size_t i = 0; i < count && rc == KV_STORE_OK; ++i) {
    uint8_t* hash = manifest + 8 + i * HASH_BYTES;
    ChunkHash(seed, first + i, hash);
    ChunkBytes(hash, size, data);
    rc = vt->put_chunk(h, hash, HASH_BYTES, data, size);
  }
  if (rc == KV_STORE_OK) rc = vt->put_manifest(h, name, manifest, manifest_len);
  free(data);
  free(manifest);
  return rc;
}

/* Reads the manifest `name` and every chunk it names (prefetching them
 * first when asked) and checks them; returns the number of chunks. */
static size_t Restore(void* h, const char* name, int prefetch) {
  uint8_t* manifest = NULL;
  size_t manifest_len = 0;
  CHECK_RC(vt->get_manifest(h, name, &manifest, &manifest_len), KV_STORE_OK);
  CHECK(manifest != NULL && manifest_len >= 8 && (manifest_len - 8) % HASH_BYTES == 0);
  uint64_t size = 0;
  for (int i = 0; i < 8; ++i) size |= (uint64_t)manifest[i] << (8 * i);
  size_t count = (manifest_len - 8) / HASH_BYTES;
  if (prefetch) CHECK_RC(vt->prefetch_chunks(h, manifest + 8, HASH_BYTES, count), KV_STORE_OK);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* hash = manifest + 8 + i * HASH_BYTES;
    uint8_t* out = NULL;
    size_t out_len = 0;
    CHECK_RC(vt->get_chunk(h, hash, HASH_BYTES, &out, &out_len), KV_STORE_OK);
    CHECK(out != NULL);
    CHECK(out_len == size);
    CHECK(ChunkMatches(hash, out, out_len));
    free(out);
  }
  free(manifest);
  return count;
}

static void* Open(void) {
  void* h = vt->open(uri);
  CHECK(h != NULL);
  return h;
}

/* The URI's servers with another namespace. */
static char* WithNamespace(const char* ns) {
  const char* slash = strchr(uri + strlen("memkv://"), '/');
  CHECK(slash != NULL);
  size_t prefix = (size_t)(slash - uri) + 1;
  char* out = malloc(prefix + strlen(ns) + 1);
  CHECK(out != NULL);
  memcpy(out, uri, prefix);
  strcpy(out + prefix, ns);
  return out;
}

/* The URI with `query` ("?model=...") appended. */
static char* WithQuery(const char* query) {
  char* out = malloc(strlen(uri) + strlen(query) + 1);
  CHECK(out != NULL);
  strcpy(out, uri);
  strcat(out, query);
  return out;
}

/* ---- Scenarios ----------------------------------------------------------- */

/* Save on one handle, restore on fresh ones; manifests replaced, empty and
 * deleted; chunks immutable, of mixed sizes, of an oMLX-sized hash. */
static void Roundtrip(void) {
  void* saver = Open();
  /* A buffered chunk is read back before any manifest is written. */
  uint8_t hash[HASH_BYTES], data[100];
  ChunkHash(1, 0, hash);
  ChunkBytes(hash, sizeof(data), data);
  CHECK_RC(vt->put_chunk(saver, hash, HASH_BYTES, data, sizeof(data)), KV_STORE_OK);
  uint8_t* out = NULL;
  size_t out_len = 0;
  CHECK_RC(vt->get_chunk(saver, hash, HASH_BYTES, &out, &out_len), KV_STORE_OK);
  CHECK(out_len == sizeof(data) && memcmp(out, data, sizeof(data)) == 0);
  free(out);
  CHECK_RC(Save(saver, "slot-a", 2, 0, 48, 64 * 1024), KV_STORE_OK);
  vt->close(saver);

  void* reader = Open();
  CHECK(Restore(reader, "slot-a", 1) == 48);  /* prefetched */
  CHECK(Restore(reader, "slot-a", 0) == 48);  /* read again, from the servers */
  vt->close(reader);

  /* Immutable: a put of a stored hash with other bytes changes nothing. */
  void* h = Open();
  ChunkHash(2, 0, hash);
  memset(data, 0xee, sizeof(data));
  CHECK_RC(vt->put_chunk(h, hash, HASH_BYTES, data, sizeof(data)), KV_STORE_OK);
  CHECK_RC(vt->put_manifest(h, "other", data, 1), KV_STORE_OK);
  vt->close(h);
  reader = Open();
  CHECK(Restore(reader, "slot-a", 0) == 48);

  /* Replaced whole; empty; deleted. */
  CHECK_RC(vt->put_manifest(reader, "slot-a", (const uint8_t*)"v2", 2), KV_STORE_OK);
  CHECK_RC(vt->get_manifest(reader, "slot-a", &out, &out_len), KV_STORE_OK);
  CHECK(out_len == 2 && memcmp(out, "v2", 2) == 0);
  free(out);
  CHECK_RC(vt->put_manifest(reader, "empty", NULL, 0), KV_STORE_OK);
  CHECK_RC(vt->get_manifest(reader, "empty", &out, &out_len), KV_STORE_OK);
  CHECK(out != NULL && out_len == 0);
  free(out);
  CHECK_RC(vt->delete_manifest(reader, "slot-a"), KV_STORE_OK);
  CHECK_RC(vt->get_manifest(reader, "slot-a", &out, &out_len), KV_STORE_ERR_NOT_FOUND);
  CHECK(out == NULL && out_len == 0);
  CHECK_RC(vt->delete_manifest(reader, "slot-a"), KV_STORE_ERR_NOT_FOUND);

  /* An empty chunk, and a 32-byte hash (oMLX's sha256). */
  uint8_t long_hash[32];
  for (int i = 0; i < 32; ++i) long_hash[i] = (uint8_t)(0xa0 + i);
  CHECK_RC(vt->put_chunk(reader, hash + 1, HASH_BYTES - 1, NULL, 0), KV_STORE_OK);
  CHECK_RC(vt->put_chunk(reader, long_hash, sizeof(long_hash), data, sizeof(data)), KV_STORE_OK);
  CHECK_RC(vt->put_manifest(reader, "__sentinel__", NULL, 0), KV_STORE_OK);
  vt->close(reader);
  reader = Open();
  CHECK_RC(vt->get_chunk(reader, hash + 1, HASH_BYTES - 1, &out, &out_len), KV_STORE_OK);
  CHECK(out != NULL && out_len == 0);
  free(out);
  CHECK_RC(vt->get_chunk(reader, long_hash, sizeof(long_hash), &out, &out_len), KV_STORE_OK);
  CHECK(out_len == sizeof(data) && memcmp(out, data, sizeof(data)) == 0);
  free(out);
  vt->close(reader);

  /* Chunks of different sizes: a fresh handle first learns a small size,
   * then meets larger chunks, read alone and in a prefetch. */
  h = Open();
  CHECK_RC(Save(h, "small", 3, 0, 4, 1000), KV_STORE_OK);
  CHECK_RC(Save(h, "large", 4, 0, 4, 3 * 1024 * 1024 + 7), KV_STORE_OK);
  vt->close(h);
  reader = Open();
  CHECK(Restore(reader, "small", 0) == 4);
  CHECK(Restore(reader, "large", 0) == 4);
  vt->close(reader);
  reader = Open();
  CHECK(Restore(reader, "small", 1) == 4);
  CHECK(Restore(reader, "large", 1) == 4);
  vt->close(reader);

  /* Another namespace on the same servers sees none of it. */
  char* other_uri = WithNamespace("another/namespace");
  void* other = vt->open(other_uri);
  CHECK(other != NULL);
  CHECK_RC(vt->get_manifest(other, "small", &out, &out_len), KV_STORE_ERR_NOT_FOUND);
  vt->close(other);
  free(other_uri);
}

/* Misses and bad arguments have their own codes; outputs stay NULL/0. */
static void Missing(void) {
  void* h = Open();
  uint8_t hash[HASH_BYTES];
  ChunkHash(99, 0, hash);
  uint8_t* out = (uint8_t*)"junk";
  size_t out_len = 123;
  CHECK_RC(vt->get_chunk(h, hash, HASH_BYTES, &out, &out_len), KV_STORE_ERR_NOT_FOUND);
  CHECK(out == NULL && out_len == 0);
  CHECK_RC(vt->get_manifest(h, "never-written", &out, &out_len), KV_STORE_ERR_NOT_FOUND);
  CHECK(out == NULL && out_len == 0);
  CHECK_RC(vt->delete_manifest(h, "never-written"), KV_STORE_ERR_NOT_FOUND);

  /* A prefetch with one missing chunk reports it and caches the others. */
  CHECK_RC(Save(h, "two", 98, 0, 2, 4096), KV_STORE_OK);
  uint8_t hashes[3 * HASH_BYTES];
  ChunkHash(98, 0, hashes);
  ChunkHash(98, 1, hashes + HASH_BYTES);
  ChunkHash(99, 5, hashes + 2 * HASH_BYTES);
  void* reader = Open();
  CHECK_RC(vt->prefetch_chunks(reader, hashes, HASH_BYTES, 3), KV_STORE_ERR_NOT_FOUND);
  CHECK_RC(vt->get_chunk(reader, hashes, HASH_BYTES, &out, &out_len), KV_STORE_OK);
  CHECK(out_len == 4096 && ChunkMatches(hashes, out, out_len));
  free(out);
  CHECK_RC(vt->prefetch_chunks(reader, NULL, HASH_BYTES, 0), KV_STORE_OK);
  vt->close(reader);

  /* Bad arguments. */
  uint8_t data[16] = {0};
  char long_name[KV_STORE_MAX_NAME_BYTES + 2];
  memset(long_name, 'n', sizeof(long_name) - 1);
  long_name[sizeof(long_name) - 1] = '\0';
  CHECK_RC(vt->put_chunk(NULL, hash, HASH_BYTES, data, 1), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->get_chunk(NULL, hash, HASH_BYTES, &out, &out_len), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->put_manifest(NULL, "m", data, 1), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->get_manifest(NULL, "m", &out, &out_len), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->delete_manifest(NULL, "m"), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->prefetch_chunks(NULL, hash, HASH_BYTES, 1), KV_STORE_ERR_INVALID_ARGUMENT);
  vt->close(NULL);
  CHECK_RC(vt->get_chunk(h, hash, 0, &out, &out_len), KV_STORE_ERR_INVALID_ARGUMENT);
  uint8_t long_hash[KV_STORE_MAX_HASH_BYTES + 1] = {0};
  CHECK_RC(vt->get_chunk(h, long_hash, sizeof(long_hash), &out, &out_len), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->get_chunk(h, hash, HASH_BYTES, NULL, &out_len), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->get_chunk(h, NULL, HASH_BYTES, &out, &out_len), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->get_manifest(h, "", &out, &out_len), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->get_manifest(h, long_name, &out, &out_len), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->get_manifest(h, NULL, &out, &out_len), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->put_manifest(h, "m", NULL, 5), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->prefetch_chunks(h, hash, 0, 1), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->prefetch_chunks(h, hash, (size_t)-1 / 2, 3), KV_STORE_ERR_INVALID_ARGUMENT);

  /* A refused chunk makes the next manifest fail, and only that one. */
  CHECK_RC(vt->put_chunk(h, hash, HASH_BYTES, NULL, 5), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->put_manifest(h, "after-refusal", data, 1), KV_STORE_ERR_INVALID_ARGUMENT);
  CHECK_RC(vt->get_manifest(h, "after-refusal", &out, &out_len), KV_STORE_ERR_NOT_FOUND);
  CHECK_RC(vt->put_manifest(h, "after-refusal", data, 1), KV_STORE_OK);
  /* Larger than the server takes (its pool): a chunk of 1 MiB or more is
     sent by put_chunk itself, so the server's refusal comes back from it;
     the chunk stays buffered, and the next manifest's flush is refused too. */
  static const size_t kTooLarge = ((size_t)256 << 20) + 1;
  uint8_t* big = calloc(1, kTooLarge);
  CHECK(big != NULL);
  uint8_t big_hash[HASH_BYTES];
  ChunkHash(97, 7, big_hash);
  CHECK_RC(vt->put_chunk(h, big_hash, HASH_BYTES, big, kTooLarge), KV_STORE_ERR_TOO_LARGE);
  free(big);
  CHECK_RC(vt->put_manifest(h, "after-refusal", data, 1), KV_STORE_ERR_TOO_LARGE);
  vt->close(h);
}

/* A server that is not there, a wrong key: their own codes. */
static void Unreachable(const char* closed_uri) {
  void* h = vt->open(closed_uri);
  CHECK(h != NULL);  /* open contacts no server */
  uint8_t* out = NULL;
  size_t out_len = 0;
  CHECK_RC(vt->get_manifest(h, "m", &out, &out_len), KV_STORE_ERR_UNAVAILABLE);
  uint8_t hash[HASH_BYTES] = {1};
  CHECK_RC(vt->put_chunk(h, hash, HASH_BYTES, hash, 1), KV_STORE_OK);  /* buffered */
  CHECK_RC(vt->put_manifest(h, "m", hash, 1), KV_STORE_ERR_UNAVAILABLE);
  vt->close(h);

  setenv("MEMKV_AUTH_KEY", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", 1);
  h = Open();
  CHECK_RC(vt->get_manifest(h, "m", &out, &out_len), KV_STORE_ERR_AUTH);
  vt->close(h);
}

/* A flush the server cannot take (a chunk larger than its whole pool): the
 * manifest is not replaced, the old one stays readable. */
static void Unstorable(void) {
  void* h = Open();
  CHECK_RC(Save(h, "slot", 21, 0, 2, 1000), KV_STORE_OK);
  /* Chunks of 1 MiB and more are sent by put_chunk itself: the first is
     refused at once, and a manifest naming it is refused too (the chunk is
     buffered again and its flush refused), so "slot" keeps its old chunks. */
  CHECK_RC(Save(h, "slot", 22, 0, 3, 2 * 1024 * 1024), KV_STORE_ERR_TOO_LARGE);
  uint8_t named[8 + HASH_BYTES] = {0};
  named[2] = 0x20; /* 2 MiB, little-endian */
  ChunkHash(22, 0, named + 8);
  CHECK_RC(vt->put_manifest(h, "slot", named, sizeof(named)), KV_STORE_ERR_TOO_LARGE);
  uint8_t* out = NULL;
  size_t out_len = 0;
  CHECK_RC(vt->get_manifest(h, "slot", &out, &out_len), KV_STORE_OK);
  CHECK(out_len == 8 + 2 * HASH_BYTES);
  uint8_t hash[HASH_BYTES];
  ChunkHash(21, 0, hash);
  CHECK(memcmp(out + 8, hash, HASH_BYTES) == 0);
  free(out);
  vt->close(h);
}

/* open refuses each; kv_store_test.cc reads why from stderr. */
static void BadUris(void) {
  static const char* const kBad[] = {
      "http://127.0.0.1:9900/ns", "memkv://127.0.0.1:9900", "memkv://127.0.0.1/ns",
      "memkv://127.0.0.1:9900?x=1/ns", "memkv://127.0.0.1:70000/ns", "memkv://,/ns",
      "memkv://127.0.0.1:9900/ns?model=m&modle=x", "memkv://127.0.0.1:9900/ns?kv_dtype=f16",
  };
  for (size_t i = 0; i < sizeof(kBad) / sizeof(kBad[0]); ++i) CHECK(vt->open(kBad[i]) == NULL);
  CHECK(vt->open(NULL) == NULL);
  char* key = strdup(getenv("MEMKV_AUTH_KEY"));
  CHECK(key != NULL);
  unsetenv("MEMKV_AUTH_KEY");
  CHECK(vt->open(uri) == NULL);
  setenv("MEMKV_AUTH_KEY", key, 1);
  setenv("MEMKV_TIMEOUT_MS", "soon", 1);
  CHECK(vt->open(uri) == NULL);
  unsetenv("MEMKV_TIMEOUT_MS");
  setenv("MEMKV_TRANSPORT", "pigeon", 1);
  CHECK(vt->open(uri) == NULL);
  unsetenv("MEMKV_TRANSPORT");
  void* h = vt->open(uri);  /* and with all put right, it opens */
  CHECK(h != NULL);
  vt->close(h);
  free(key);
}

/* Cache identities: handles whose URIs differ only in kv_dtype or
 * block_tokens put one hash (and one manifest name) with different bytes,
 * and fresh handles with each URI read back their own; a handle without an
 * identity sees none of them. MEMKV_IDENTITY_* give a plain URI the same
 * identity, and a URI field overrides its variable. */
enum { kIdentities = 3, kIdentityChunkBytes = 4096 };
static const char* const kIdentityQueries[kIdentities] = {
    "?model=Llama-3.2-1B&kv_dtype=f16&block_tokens=256",
    "?model=Llama-3.2-1B&kv_dtype=bf16&block_tokens=256",
    "?model=Llama-3.2-1B&kv_dtype=f16&block_tokens=128",
};

/* Opens `query` appended to the URI and checks that the chunk and the
 * manifest hold the bytes of identity `want`. */
static void CheckIdentityReads(const char* query, const uint8_t* hash, int want) {
  char* u = WithQuery(query);
  void* h = vt->open(u);
  CHECK(h != NULL);
  uint8_t* out = NULL;
  size_t out_len = 0;
  CHECK_RC(vt->get_chunk(h, hash, HASH_BYTES, &out, &out_len), KV_STORE_OK);
  CHECK(out_len == kIdentityChunkBytes && out[0] == (uint8_t)(want + 1) && out[out_len - 1] == (uint8_t)(want + 1));
  free(out);
  CHECK_RC(vt->get_manifest(h, "slot", &out, &out_len), KV_STORE_OK);
  CHECK(out_len == 1 && out[0] == (uint8_t)want);
  free(out);
  vt->close(h);
  free(u);
}

static void Identities(void) {
  uint8_t hash[HASH_BYTES];
  ChunkHash(77, 0, hash);
  uint8_t data[kIdentityChunkBytes];
  for (int i = 0; i < kIdentities; ++i) {
    char* u = WithQuery(kIdentityQueries[i]);
    void* h = vt->open(u);
    CHECK(h != NULL);
    memset(data, i + 1, sizeof(data));
    CHECK_RC(vt->put_chunk(h, hash, HASH_BYTES, data, sizeof(data)), KV_STORE_OK);
    uint8_t manifest = (uint8_t)i;
    CHECK_RC(vt->put_manifest(h, "slot", &manifest, 1), KV_STORE_OK);
    vt->close(h);
    free(u);
  }
  for (int i = 0; i < kIdentities; ++i) CheckIdentityReads(kIdentityQueries[i], hash, i);

  void* plain = Open();
  uint8_t* out = NULL;
  size_t out_len = 0;
  CHECK_RC(vt->get_chunk(plain, hash, HASH_BYTES, &out, &out_len), KV_STORE_ERR_NOT_FOUND);
  CHECK_RC(vt->get_manifest(plain, "slot", &out, &out_len), KV_STORE_ERR_NOT_FOUND);
  vt->close(plain);

  setenv("MEMKV_IDENTITY_MODEL", "Llama-3.2-1B", 1);
  setenv("MEMKV_IDENTITY_KV_DTYPE", "f16", 1);
  setenv("MEMKV_IDENTITY_BLOCK_TOKENS", "256", 1);
  CheckIdentityReads("", hash, 0);
  CheckIdentityReads("?kv_dtype=bf16", hash, 1);
  CheckIdentityReads("?block_tokens=128", hash, 2);
  unsetenv("MEMKV_IDENTITY_MODEL");
  unsetenv("MEMKV_IDENTITY_KV_DTYPE");
  unsetenv("MEMKV_IDENTITY_BLOCK_TOKENS");
}

/* ---- Threads -------------------------------------------------------------- */

enum { kThreads = 8, kRounds = 4, kOwnChunks = 12, kSharedChunks = 12, kThreadChunkBytes = 16 * 1024 };

struct ThreadArgs {
  void* h;
  int index;
};

static atomic_int thread_failures;

#define TCHECK(cond)                                                  \
  do {                                                                \
    if (!(cond)) {                                                    \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
      atomic_fetch_add(&thread_failures, 1);                          \
      return NULL;                                                    \
    }                                                                 \
  } while (0)

/* Each thread saves manifests that name chunks of its own and chunks every
 * thread shares, and reads them back, all on one handle. */
static void* ThreadMain(void* arg) {
  struct ThreadArgs* a = arg;
  char name[32];
  for (int round = 0; round < kRounds; ++round) {
    snprintf(name, sizeof(name), "t%d-r%d", a->index, round);
    size_t count = kSharedChunks + kOwnChunks;
    uint8_t manifest[8 + (kSharedChunks + kOwnChunks) * HASH_BYTES];
    uint8_t* data = malloc(kThreadChunkBytes);
    TCHECK(data != NULL);
    for (int i = 0; i < 8; ++i) manifest[i] = (uint8_t)((uint64_t)kThreadChunkBytes >> (8 * i));
    for (size_t i = 0; i < count; ++i) {
      uint8_t* hash = manifest + 8 + i * HASH_BYTES;
      if (i < kSharedChunks) {
        ChunkHash(500 + (uint64_t)round, i, hash);
      } else {
        ChunkHash(600 + (uint64_t)a->index, (uint64_t)round * 100 + i, hash);
      }
      ChunkBytes(hash, kThreadChunkBytes, data);
      TCHECK(vt->put_chunk(a->h, hash, HASH_BYTES, data, kThreadChunkBytes) == KV_STORE_OK);
    }
    free(data);
    TCHECK(vt->put_manifest(a->h, name, manifest, sizeof(manifest)) == KV_STORE_OK);
    TCHECK(vt->prefetch_chunks(a->h, manifest + 8, HASH_BYTES, count) == KV_STORE_OK);
    for (size_t i = 0; i < count; ++i) {
      uint8_t* out = NULL;
      size_t out_len = 0;
      TCHECK(vt->get_chunk(a->h, manifest + 8 + i * HASH_BYTES, HASH_BYTES, &out, &out_len) == KV_STORE_OK);
      TCHECK(out_len == kThreadChunkBytes && ChunkMatches(manifest + 8 + i * HASH_BYTES, out, out_len));
      free(out);
    }
  }
  return NULL;
}

static void Threads(void) {
  void* h = Open();
  pthread_t threads[kThreads];
  struct ThreadArgs args[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    args[i].h = h;
    args[i].index = i;
    CHECK(pthread_create(&threads[i], NULL, ThreadMain, &args[i]) == 0);
  }
  for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
  CHECK(atomic_load(&thread_failures) == 0);
  vt->close(h);
  /* Every manifest any thread wrote names only stored chunks. */
  void* reader = Open();
  char name[32];
  for (int i = 0; i < kThreads; ++i) {
    for (int round = 0; round < kRounds; ++round) {
      snprintf(name, sizeof(name), "t%d-r%d", i, round);
      CHECK(Restore(reader, name, round % 2) == kSharedChunks + kOwnChunks);
    }
  }
  vt->close(reader);
}

/* ---- A saver killed between its chunks and its manifest ------------------- */

enum { kOldChunks = 16, kOldChunkBytes = 4096, kCrashChunks = 1100, kCrashChunkBytes = 1024 };

static void Crash(void) {
  void* h = Open();
  CHECK_RC(Save(h, "slot", 7, 0, kOldChunks, kOldChunkBytes), KV_STORE_OK);
  vt->close(h);  /* no client threads left to fork beside */

  int ready[2], hold[2];
  CHECK(pipe(ready) == 0 && pipe(hold) == 0);
  fflush(stdout);
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    /* The new saver: the old chunks' hashes with other bytes (a put of a
     * stored hash must change nothing), then more chunks than one flush
     * takes, so some reach the servers; then it waits to be killed. */
    close(ready[0]);
    close(hold[1]);
    void* saver = vt->open(uri);
    if (saver == NULL) _exit(2);
    uint8_t hash[HASH_BYTES], data[kOldChunkBytes];
    memset(data, 0xee, sizeof(data));
    for (uint64_t i = 0; i < kOldChunks; ++i) {
      ChunkHash(7, i, hash);
      if (vt->put_chunk(saver, hash, HASH_BYTES, data, sizeof(data)) != KV_STORE_OK) _exit(3);
    }
    for (uint64_t i = 0; i < kCrashChunks; ++i) {
      ChunkHash(8, i, hash);
      ChunkBytes(hash, kCrashChunkBytes, data);
      if (vt->put_chunk(saver, hash, HASH_BYTES, data, kCrashChunkBytes) != KV_STORE_OK) _exit(4);
    }
    if (write(ready[1], "r", 1) != 1) _exit(5);
    char c;
    while (read(hold[0], &c, 1) < 0 && errno == EINTR) {
    }
    _exit(6);  /* never reached: the parent kills it first */
  }
  close(ready[1]);
  close(hold[0]);
  struct pollfd p = {ready[0], POLLIN, 0};
  CHECK(poll(&p, 1, 60000) == 1);
  char c = 0;
  CHECK(read(ready[0], &c, 1) == 1 && c == 'r');
  CHECK(kill(child, SIGKILL) == 0);
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  close(ready[0]);
  close(hold[1]);

  /* The old manifest and every chunk it names, with their old bytes. */
  void* reader = Open();
  CHECK(Restore(reader, "slot", 0) == kOldChunks);
  CHECK(Restore(reader, "slot", 1) == kOldChunks);
  /* The dead saver's first flush reached the servers (orphans, harmless);
   * what it still had buffered died with it. */
  uint8_t hash[HASH_BYTES];
  uint8_t* out = NULL;
  size_t out_len = 0;
  ChunkHash(8, 0, hash);
  CHECK_RC(vt->get_chunk(reader, hash, HASH_BYTES, &out, &out_len), KV_STORE_OK);
  free(out);
  ChunkHash(8, kCrashChunks - 1, hash);
  CHECK_RC(vt->get_chunk(reader, hash, HASH_BYTES, &out, &out_len), KV_STORE_ERR_NOT_FOUND);
  vt->close(reader);
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: %s PLUGIN URI SCENARIO [ARGS]\n"
            "  roundtrip | missing | threads | crash | unstorable | identities | bad-uri | unreachable CLOSED_URI\n"
            "  save NAME SEED FIRST COUNT SIZE | restore NAME PREFETCH(0|1) EXPECTED_COUNT\n",
            argv[0]);
    return 2;
  }
  alarm(240);  /* never outlive the test */
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    printf("FAIL dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  void* sym = dlsym(lib, KV_STORE_GET_VTABLE_SYMBOL);
  CHECK(sym != NULL);
  kv_store_get_vtable_fn get_vtable;
  memcpy(&get_vtable, &sym, sizeof(get_vtable));
  vt = get_vtable();
  CHECK(vt != NULL && vt->version == KV_STORE_VTABLE_VERSION && vt->prefetch_chunks != NULL);
  uri = argv[2];
  const char* scenario = argv[3];

  if (strcmp(scenario, "roundtrip") == 0) {
    Roundtrip();
  } else if (strcmp(scenario, "missing") == 0) {
    Missing();
  } else if (strcmp(scenario, "threads") == 0) {
    Threads();
  } else if (strcmp(scenario, "crash") == 0) {
    Crash();
  } else if (strcmp(scenario, "unstorable") == 0) {
    Unstorable();
  } else if (strcmp(scenario, "identities") == 0) {
    Identities();
  } else if (strcmp(scenario, "bad-uri") == 0) {
    BadUris();
  } else if (strcmp(scenario, "unreachable") == 0 && argc == 5) {
    Unreachable(argv[4]);
  } else if (strcmp(scenario, "save") == 0 && argc == 9) {
    void* h = Open();
    CHECK_RC(Save(h, argv[4], strtoull(argv[5], NULL, 10), strtoull(argv[6], NULL, 10),
                  strtoull(argv[7], NULL, 10), strtoull(argv[8], NULL, 10)),
             KV_STORE_OK);
    vt->close(h);
  } else if (strcmp(scenario, "restore") == 0 && argc == 7) {
    void* h = Open();
    CHECK(Restore(h, argv[4], atoi(argv[5])) == strtoull(argv[6], NULL, 10));
    vt->close(h);
  } else {
    printf("FAIL unknown scenario or wrong arguments: %s\n", scenario);
    return 2;
  }
  printf("ok %s\n", scenario);
  return 0;
}
