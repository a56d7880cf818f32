/* A C user of the installed libmemkv (tests/install/install_test.sh): built
 * with `pkg-config --cflags --libs memkv` outside the source tree.
 * Usage: app HOST:PORT AUTH_KEY_HEX; exit 0 when every check holds. */
#include <memkv/memkv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                               \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "app.c:%d: %s failed: %s\n", __LINE__, #cond, memkv_last_error()); \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: app HOST:PORT AUTH_KEY_HEX\n");
    return 2;
  }
  memkv_options_t* options = memkv_options_create();
  CHECK(options != NULL);
  CHECK(memkv_options_set_servers(options, argv[1]) == MEMKV_OK);
  CHECK(memkv_options_set_auth_key(options, argv[2]) == MEMKV_OK);
  CHECK(memkv_options_set_transport(options, "tcp") == MEMKV_OK);
  CHECK(memkv_options_set_timeout_ms(options, 3000) == MEMKV_OK);
  memkv_client_t* client = NULL;
  CHECK(memkv_client_open_options(options, &client) == MEMKV_OK);
  memkv_options_destroy(options);
  CHECK(strcmp(memkv_version(), MEMKV_VERSION_STRING) == 0);

  const char value[] = "a value from C";
  CHECK(memkv_put(client, "c-key", 5, value, sizeof(value)) == MEMKV_OK);
  char buf[64];
  size_t len = 0;
  CHECK(memkv_get(client, "c-key", 5, buf, sizeof(buf), &len) == MEMKV_OK);
  CHECK(len == sizeof(value) && memcmp(buf, value, len) == 0);
  CHECK(memkv_get(client, "absent", 6, buf, sizeof(buf), &len) == MEMKV_NOT_FOUND);
  void* owned = NULL;
  CHECK(memkv_get_alloc(client, "c-key", 5, &owned, &len) == MEMKV_OK);
  CHECK(len == sizeof(value) && memcmp(owned, value, len) == 0);
  memkv_free(owned);

  const void* keys[] = {"c-key", "absent"};
  const size_t key_lens[] = {5, 6};
  memkv_status_t statuses[2];
  size_t prefix = 9;
  CHECK(memkv_batch_exists(client, keys, key_lens, 2, statuses, &prefix) == MEMKV_OK);
  CHECK(prefix == 1 && statuses[0] == MEMKV_OK && statuses[1] == MEMKV_NOT_FOUND);
  CHECK(strcmp(memkv_status_name(MEMKV_NOT_FOUND), "NotFound") == 0);
  memkv_stats_t stats;
  stats.struct_size = sizeof(stats);
  CHECK(memkv_client_stats(client, &stats) == MEMKV_OK);
  CHECK(stats.rdma_state == MEMKV_RDMA_OFF && stats.tcp_ops >= 2);

  CHECK(memkv_delete(client, "c-key", 5) == MEMKV_OK);
  memkv_client_close(client);
  printf("c app ok\n");
  return 0;
}
