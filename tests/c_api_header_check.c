/* Compiled as C: the public C header must stay valid C with no C++ in it.
 * Every declaration is used here, so a C compiler sees each one; what needs
 * no server also runs (memkv_c_header_check returns 0 when all is well). */
#include <stddef.h>
#include <string.h>

#include "memkv/memkv.h"

static void IgnoreLine(void* ctx, int level, const char* component, const char* message) {
  (void)ctx;
  (void)level;
  (void)component;
  (void)message;
}

/* Converting between function pointer types is valid C; to void* it is not. */
typedef void (*AnyFunction)(void);

/* Takes the address of every function, so a declaration that does not
 * compile as C, or one missing from the header, fails this file. */
static int EveryFunctionIsDeclared(void) {
  const AnyFunction functions[] = {
      (AnyFunction)&memkv_version,
      (AnyFunction)&memkv_version_number,
      (AnyFunction)&memkv_last_error,
      (AnyFunction)&memkv_status_name,
      (AnyFunction)&memkv_log_level_name,
      (AnyFunction)&memkv_options_create,
      (AnyFunction)&memkv_options_destroy,
      (AnyFunction)&memkv_options_set_servers,
      (AnyFunction)&memkv_options_add_server,
      (AnyFunction)&memkv_options_set_auth_key,
      (AnyFunction)&memkv_options_set_transport,
      (AnyFunction)&memkv_options_set_num_connections,
      (AnyFunction)&memkv_options_set_timeout_ms,
      (AnyFunction)&memkv_options_set_connect_timeout_ms,
      (AnyFunction)&memkv_options_set_rdma_devices,
      (AnyFunction)&memkv_options_set_rdma_mtu,
      (AnyFunction)&memkv_options_set_rdma_retry_count,
      (AnyFunction)&memkv_options_set_rdma_timeout,
      (AnyFunction)&memkv_options_set_rdma_qps,
      (AnyFunction)&memkv_options_set_prometheus_bind,
      (AnyFunction)&memkv_options_set_log_level,
      (AnyFunction)&memkv_options_set_log_callback,
      (AnyFunction)&memkv_client_open_options,
      (AnyFunction)&memkv_client_open,
      (AnyFunction)&memkv_client_open_env,
      (AnyFunction)&memkv_client_close,
      (AnyFunction)&memkv_put,
      (AnyFunction)&memkv_get,
      (AnyFunction)&memkv_get_alloc,
      (AnyFunction)&memkv_free,
      (AnyFunction)&memkv_delete,
      (AnyFunction)&memkv_exists,
      (AnyFunction)&memkv_batch_put,
      (AnyFunction)&memkv_batch_get,
      (AnyFunction)&memkv_batch_exists,
      (AnyFunction)&memkv_async_get,
      (AnyFunction)&memkv_async_put,
      (AnyFunction)&memkv_async_exists,
      (AnyFunction)&memkv_async_delete,
      (AnyFunction)&memkv_async_fd,
      (AnyFunction)&memkv_async_poll,
      (AnyFunction)&memkv_async_cancel,
      (AnyFunction)&memkv_register_memory,
      (AnyFunction)&memkv_unregister_memory,
      (AnyFunction)&memkv_client_stats,
      (AnyFunction)&memkv_transport,
  };
  size_t i;
  for (i = 0; i < sizeof(functions) / sizeof(functions[0]); ++i) {
    if (functions[i] == NULL) return 1;
  }
  return 0;
}

/* Builds and destroys an options object through every setter, as C. */
static int OptionsWorkFromC(void) {
  memkv_options_t* options = memkv_options_create();
  memkv_log_fn fn = IgnoreLine;
  int failures = 0;
  if (options == NULL) return 1;
  failures += memkv_options_set_servers(options, "127.0.0.1:1, 127.0.0.1:2") != MEMKV_OK;
  failures += memkv_options_add_server(options, "127.0.0.1:3") != MEMKV_OK;
  failures += memkv_options_set_auth_key(options, "00") != MEMKV_OK;
  failures += memkv_options_set_transport(options, "tcp") != MEMKV_OK;
  failures += memkv_options_set_num_connections(options, 2) != MEMKV_OK;
  failures += memkv_options_set_timeout_ms(options, 100) != MEMKV_OK;
  failures += memkv_options_set_connect_timeout_ms(options, 100) != MEMKV_OK;
  failures += memkv_options_set_rdma_devices(options, "") != MEMKV_OK;
  failures += memkv_options_set_rdma_mtu(options, 1024) != MEMKV_OK;
  failures += memkv_options_set_rdma_retry_count(options, 7) != MEMKV_OK;
  failures += memkv_options_set_rdma_timeout(options, 14) != MEMKV_OK;
  failures += memkv_options_set_rdma_qps(options, 1) != MEMKV_OK;
  failures += memkv_options_set_prometheus_bind(options, "") != MEMKV_OK;
  failures += memkv_options_set_log_level(options, MEMKV_LOG_ERROR) != MEMKV_OK;
  failures += memkv_options_set_log_level(options, MEMKV_LOG_OFF + 1) != MEMKV_INVALID_ARGUMENT;
  failures += memkv_options_set_log_callback(options, fn, NULL) != MEMKV_OK;
  memkv_options_destroy(options);
  return failures;
}

static int ConstantsAndStructsAreC(void) {
  memkv_stats_t stats;
  memkv_client_t* client = 0;
  memkv_status_t codes[] = {MEMKV_OK,
                            MEMKV_NOT_FOUND,
                            MEMKV_INVALID_ARGUMENT,
                            MEMKV_DEADLINE_EXCEEDED,
                            MEMKV_UNAVAILABLE,
                            MEMKV_AUTH_FAILED,
                            MEMKV_UNSUPPORTED_VERSION,
                            MEMKV_TOO_LARGE,
                            MEMKV_RESOURCE_EXHAUSTED,
                            MEMKV_CORRUPTION,
                            MEMKV_PROTOCOL_ERROR,
                            MEMKV_INTERNAL,
                            MEMKV_IO_ERROR,
                            MEMKV_FAILED_PRECONDITION,
                            MEMKV_PERMISSION_DENIED,
                            MEMKV_BUSY,
                            MEMKV_DRAINING};
  int levels[] = {MEMKV_LOG_DEBUG, MEMKV_LOG_INFO, MEMKV_LOG_WARN, MEMKV_LOG_ERROR, MEMKV_LOG_OFF};
  int states[] = {MEMKV_RDMA_OFF, MEMKV_RDMA_ACTIVE, MEMKV_RDMA_FALLBACK, MEMKV_RDMA_NO_DEVICE};
  int failures = 0;
  (void)client;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  failures += codes[13] != 13 || codes[14] != 14 || codes[15] != 15 || codes[16] != 16 || levels[4] != 4 || states[3] != 3;
  failures += MEMKV_TRANSPORT_TCP == MEMKV_TRANSPORT_RDMA;
  failures += MEMKV_STATS_MIN_SIZE > sizeof(stats);
  failures += sizeof(stats.completion_errors) / sizeof(stats.completion_errors[0]) != MEMKV_STATS_COMPLETION_STATUSES;
  failures += sizeof(stats.rdma_path) != MEMKV_STATS_TEXT_BYTES;
  failures += strcmp(memkv_version(), MEMKV_VERSION_STRING) != 0;
  failures += memkv_version_number() != MEMKV_VERSION_NUMBER;
  return failures;
}

int memkv_c_header_check(void) { return EveryFunctionIsDeclared() + OptionsWorkFromC() + ConstantsAndStructsAreC(); }
