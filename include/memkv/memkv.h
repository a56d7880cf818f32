/* memkv/memkv.h: the stable C API of the MemKV client.
 *
 * Conventions (they hold for every function here):
 * - Every function returns a memkv_status_t: 0 is success, any other value is
 *   one of the MEMKV_* codes below, the same numbers the wire protocol, the C++
 *   API (memkv::StatusCode) and Python use. They never change.
 * - On failure, memkv_last_error() returns a message for the calling thread
 *   that names what failed; it stays valid until that thread's next call.
 * - A memkv_client_t is safe to use from many threads at once. Create it with
 *   memkv_client_open or memkv_client_open_env; free it with memkv_client_close.
 * - Keys are byte strings (pointer + length), 1..1024 bytes. Values are bytes.
 * - Nothing here allocates memory the caller must free, except the client.
 */
#ifndef MEMKV_MEMKV_H_
#define MEMKV_MEMKV_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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

typedef struct memkv_client memkv_client_t;

/* servers: comma list "host:port,..."; auth_key_hex: 64 hex characters;
 * timeout_ms: deadline of every operation (0 = 5000). */
memkv_status_t memkv_client_open(const char* servers, const char* auth_key_hex, uint32_t timeout_ms,
                                 memkv_client_t** out);
/* From MEMKV_CONFIG, then MEMKV_SERVERS, MEMKV_AUTH_KEY, ... (docs/configuration.md). */
memkv_status_t memkv_client_open_env(memkv_client_t** out);
void memkv_client_close(memkv_client_t* client);

memkv_status_t memkv_put(memkv_client_t* client, const void* key, size_t key_len, const void* value,
                         size_t value_len);
/* Reads the value into buf (capacity buf_len) with no intermediate copy and
 * sets *value_len. MEMKV_TOO_LARGE, with *value_len unchanged, when buf is
 * too small; MEMKV_NOT_FOUND on a miss. */
memkv_status_t memkv_get(memkv_client_t* client, const void* key, size_t key_len, void* buf, size_t buf_len,
                         size_t* value_len);
memkv_status_t memkv_delete(memkv_client_t* client, const void* key, size_t key_len);
/* *present is set to 1 or 0. */
memkv_status_t memkv_exists(memkv_client_t* client, const void* key, size_t key_len, int* present);
/* Per-key results in statuses[count]; *prefix (may be NULL) is the number of
 * leading keys present. Returns MEMKV_OK when the call itself ran. */
memkv_status_t memkv_batch_exists(memkv_client_t* client, const void* const* keys, const size_t* key_lens,
                                  size_t count, memkv_status_t* statuses, size_t* prefix);

/* RDMA: registers [base, base+len) once so puts from it and gets into it
 * move with no copy (docs/rdma.md). MEMKV_OK and nothing done when the client
 * does not use RDMA. The region must stay mapped until unregistered. */
memkv_status_t memkv_register_memory(memkv_client_t* client, void* base, size_t len);
memkv_status_t memkv_unregister_memory(memkv_client_t* client, void* base);
/* "rdma" or "tcp": what the client's new operations use now. */
const char* memkv_transport(memkv_client_t* client);

/* The calling thread's message for its last failed call ("" if none). */
const char* memkv_last_error(void);
/* Stable name of a code: "NotFound", ... */
const char* memkv_status_name(memkv_status_t status);

#ifdef __cplusplus
}
#endif

#endif /* MEMKV_MEMKV_H_ */
