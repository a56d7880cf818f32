// The C API's put options and prefix matching: memkv_put_options_t becomes a
// memkv::PutOptions (its bytes copied), the calls go to Client::PutWith,
// BatchPutWith and MatchPrefix.
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "capi/c_api_internal.h"

namespace memkv::capi {
namespace {

// The size of the struct's first version: every caller's is at least that.
constexpr size_t kPutOptionsMinSize = offsetof(memkv_put_options_t, parent_hash_len) + sizeof(size_t);

Result<std::string> Bytes(const std::string& where, const char* name, const void* ptr, size_t len) {
  if (ptr == nullptr && len > 0) {
    return InvalidArgument(where + "." + name + " is NULL with a length of " + std::to_string(len));
  }
  return std::string(static_cast<const char*>(ptr), len);
}

// `where` names the struct in messages ("memkv_put_with: options",
// "memkv_batch_put_with: options[3]"). Ranges beyond the C types' are the
// client's to check (Client::PutWith), in the same words as for C++.
Result<PutOptions> ToPutOptions(const std::string& where, const memkv_put_options_t& c) {
  if (c.struct_size < kPutOptionsMinSize) {
    return InvalidArgument(where + ".struct_size " + std::to_string(c.struct_size) + " is below " +
                           std::to_string(kPutOptionsMinSize) + "; fill the struct with memkv_put_options_init");
  }
  if (c.retention < 0 || c.retention > kMaxRetention) {
    return InvalidArgument(where + ".retention " + std::to_string(c.retention) +
                           " is not a retention class; allowed: 0 (MEMKV_RETENTION_NORMAL), 1 (MEMKV_RETENTION_PINNED), "
                           "2 (MEMKV_RETENTION_EVICT_FIRST)");
  }
  if (c.hash_kind != MEMKV_HASH_BYTES && c.hash_kind != MEMKV_HASH_INT64) {
    return InvalidArgument(where + ".hash_kind " + std::to_string(c.hash_kind) +
                           " is not a hash kind; allowed: 0 (MEMKV_HASH_BYTES), 1 (MEMKV_HASH_INT64)");
  }
  PutOptions o;
  o.ttl_ms = c.ttl_ms;
  o.retention = static_cast<Retention>(c.retention);
  o.hash_kind = static_cast<HashKind>(c.hash_kind);
  MEMKV_ASSIGN_OR_RETURN(o.parent_key, Bytes(where, "parent_key", c.parent_key, c.parent_key_len));
  MEMKV_ASSIGN_OR_RETURN(o.block_hash, Bytes(where, "block_hash", c.block_hash, c.block_hash_len));
  MEMKV_ASSIGN_OR_RETURN(o.parent_hash, Bytes(where, "parent_hash", c.parent_hash, c.parent_hash_len));
  return o;
}

}  // namespace

Result<std::vector<PutOptions>> ToPutOptionsArray(const char* fn, const memkv_put_options_t* options, size_t count) {
  std::vector<PutOptions> out;
  if (options == nullptr) return out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    MEMKV_ASSIGN_OR_RETURN(PutOptions o, ToPutOptions(std::string(fn) + ": options[" + std::to_string(i) + "]", options[i]));
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace memkv::capi

using memkv::capi::Call;
using memkv::capi::Fail;
using memkv::capi::Key;
using memkv::capi::Report;
using memkv::capi::ToPutOptions;

extern "C" {

void memkv_put_options_init(memkv_put_options_t* options) {
  if (options == nullptr) return;
  *options = memkv_put_options_t{};
  options->struct_size = sizeof(memkv_put_options_t);
  options->retention = MEMKV_RETENTION_NORMAL;
  options->hash_kind = MEMKV_HASH_BYTES;
}

memkv_status_t memkv_put_with(memkv_client_t* c, const void* key, size_t key_len, const void* value,
                              size_t value_len, const memkv_put_options_t* options) {
  const char* fn = __func__;
  return Call(fn, {{"client", c}, {"key", key}, {"value", value, value_len > 0}}, [&] {
    const std::span<const uint8_t> bytes(static_cast<const uint8_t*>(value), value_len);
    if (options == nullptr) return Report(c->client->Put(Key(key, key_len), bytes));
    auto o = ToPutOptions(std::string(fn) + ": options", *options);
    if (!o.ok()) return Fail(o.status());
    return Report(c->client->PutWith(Key(key, key_len), bytes, *o));
  });
}

}  // extern "C"
