// The URI a kv_store consumer opens a MemKV backend with:
//
//   memkv://host:port[,host:port...]/namespace
//
// and the keys derived from its namespace: a chunk is <namespace>/c/<hex of
// its hash>, a manifest <namespace>/m/<name>, so the two never collide and
// every key of one namespace shares its prefix.
//
// The namespace is whatever follows the servers (oMLX appends its model
// name, which may be a local path or hold spaces). Its key form is
// reversible: letters, digits, -._~:@+= and '/' between segments stay as
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
#include <vector>

#include "memkv/status.h"

namespace memkv::kvstore {

inline constexpr size_t kMaxNamespaceBytes = 256;
inline constexpr size_t kMaxHashBytes = 256;          // KV_STORE_MAX_HASH_BYTES
inline constexpr size_t kMaxManifestNameBytes = 512;  // KV_STORE_MAX_NAME_BYTES

struct StoreUri {
  std::vector<std::string> servers;  // "host:port", in the URI's order
  std::string name_space;            // the key form (NamespaceKeyForm); no leading or trailing '/'
};

// InvalidArgument naming what is wrong with `uri` and what is allowed.
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
