// The URI a kv_store consumer opens a MemKV backend with:
//
//   memkv://host:port[,host:port...]/namespace[?field=value&...]
//
// its optional query, the cache identity the engine passes itself
// (model=Llama-3.2-1B&kv_dtype=f16&block_tokens=256&extra.lora=a; the
// fields are kIdentityFields and extra.NAME, values percent-decoded), and
// the keys derived from its namespace: a chunk is <namespace>/c/<hex of
// its hash>, a manifest <namespace>/m/<name>, so the two never collide and
// every key of one namespace shares its prefix.
//
// The namespace is whatever follows the servers up to the query (oMLX
// appends its model name, which may be a local path or hold spaces). The
// query starts at the first '?' followed by a name of A-Z a-z 0-9 _ . -
// and '=' ("?kv_dtype=", "?extra.lora=", "?modle=", which is refused); any
// other '?' is a byte of the namespace, so a model name such as
// "qwen?" or "a?b c" stays one. The namespace's key form is reversible: letters, digits, -._~:@+= and '/' between segments stay as
// they are; every other byte, '%' itself and a '/' that would start an empty
// segment (a leading one, the second of "//") become %XX. A key form longer
// than kMaxNamespaceBytes is cut and ends in '~' and a hash of the whole
// namespace instead.
//
// Pure functions over strings; any thread.
#ifndef MEMKV_KVSTORE_URI_H_
#define MEMKV_KVSTORE_URI_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memkv/status.h"

namespace memkv::kvstore {

inline constexpr size_t kMaxNamespaceBytes = 256;
inline constexpr size_t kMaxHashBytes = 256;          // KV_STORE_MAX_HASH_BYTES
inline constexpr size_t kMaxManifestNameBytes = 512;  // KV_STORE_MAX_NAME_BYTES

// The fields the query may hold, besides "extra.NAME" (an extra of the
// identity, NAME of A-Z a-z 0-9 _ . -): each is the client option
// "identity_<field>" (memkv/client.h).
inline constexpr std::string_view kIdentityFields[] = {"model",  "revision", "kv_dtype", "layout",        "block_tokens",
                                                       "tp_rank", "tp_size", "engine",   "engine_version"};
inline constexpr std::string_view kExtraPrefix = "extra.";

struct StoreUri {
  std::vector<std::string> servers;  // "host:port", in the URI's order
  std::string name_space;            // the key form (NamespaceKeyForm); no leading or trailing '/'
  // The query's fields in the URI's order, each name once, each value
  // percent-decoded and not empty: {"kv_dtype", "f16"}, {"extra.lora", "a"}.
  std::vector<std::pair<std::string, std::string>> identity;
};

// InvalidArgument naming what is wrong with `uri` and what is allowed (an
// unknown query field is named, with the fields allowed).
Result<StoreUri> ParseStoreUri(std::string_view uri);

// The key form of a namespace as written in the URI (trailing '/' already
// dropped; not empty): see the file comment. A namespace made only of the
// kept characters, without empty segments and within kMaxNamespaceBytes, is
// its own key form.
std::string NamespaceKeyForm(std::string_view name_space);

// "<namespace>/c/<lower-case hex of hash>".
std::string ChunkKey(std::string_view name_space, std::span<const uint8_t> hash);
// "<namespace>/m/<name>".
std::string ManifestKey(std::string_view name_space, std::string_view name);

}  // namespace memkv::kvstore

#endif  // MEMKV_KVSTORE_URI_H_
