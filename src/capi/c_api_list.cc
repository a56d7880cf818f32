// The C API's key listing: a page of keys held in a memkv_key_page_t the
// caller frees.
#include <string>
#include <vector>

#include "capi/c_api_internal.h"

struct memkv_key_page {
  memkv::KeyListPage page;
};

using memkv::capi::Arg;
using memkv::capi::Call;
using memkv::capi::CallOr;
using memkv::capi::Fail;
using memkv::capi::Key;

extern "C" {

memkv_status_t memkv_list_keys(memkv_client_t* c, const void* prefix, size_t prefix_len, const void* cursor,
                               size_t cursor_len, size_t page_size, memkv_key_page_t** out) {
  return Call(__func__,
              {{"client", c}, {"prefix", prefix, prefix_len > 0}, {"cursor", cursor, cursor_len > 0}, {"out", out}},
              [&] {
                memkv::Result<memkv::KeyListPage> r =
                    c->client->ListKeys(Key(prefix, prefix_len), Key(cursor, cursor_len), page_size);
                if (!r.ok()) return Fail(r.status());
                *out = new memkv_key_page{std::move(r).value()};
                return MEMKV_OK;
              });
}

size_t memkv_key_page_count(const memkv_key_page_t* page) { return page == nullptr ? 0 : page->page.keys.size(); }

const void* memkv_key_page_key(const memkv_key_page_t* page, size_t i, size_t* len) {
  return CallOr<const void*>(nullptr, [&]() -> const void* {
    if (page == nullptr || i >= page->page.keys.size()) {
      if (len != nullptr) *len = 0;
      return nullptr;
    }
    if (len != nullptr) *len = page->page.keys[i].size();
    return page->page.keys[i].data();
  });
}

const void* memkv_key_page_cursor(const memkv_key_page_t* page, size_t* len) {
  const std::string* cursor = page == nullptr ? nullptr : &page->page.next_cursor;
  if (len != nullptr) *len = cursor == nullptr ? 0 : cursor->size();
  return cursor == nullptr || cursor->empty() ? nullptr : cursor->data();
}

void memkv_key_page_free(memkv_key_page_t* page) { delete page; }

}  // extern "C"
