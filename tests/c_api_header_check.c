/* Compiled as C: the public C header must stay valid C with no C++ in it. */
#include "memkv/memkv.h"

int memkv_c_header_check(void) {
  memkv_client_t* client = 0;
  (void)client;
  return MEMKV_OK + MEMKV_NOT_FOUND - 1;
}
