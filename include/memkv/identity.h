// CacheIdentity: what a KV block was computed by, so that blocks of one
// model, revision, dtype, layout, block size or tensor-parallel rank are
// never read by another (docs/client-library.md, "Cache identity").
//
// A client with an identity sends it on each connection (the Identify
// request); the server then keeps that connection's keys apart from every
// other identity's: two identities cannot name each other's blocks. The
// identity travels as its canonical text and is named by its tag, 16 hex
// digits of the text's SHA-256; `memkv ls`, /metrics and the access log
// group by the tag, and the server's memkv_identity_info metric maps a tag
// back to its fields.
#ifndef MEMKV_IDENTITY_H_
#define MEMKV_IDENTITY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memkv/status.h"

namespace memkv {

struct CacheIdentity {
  std::string model;           // "meta-llama/Llama-3.1-8B-Instruct" (required once any field is set)
  std::string revision;        // a commit, a tag, or a digest of the weights ("sha256:...")
  std::string kv_dtype;        // "bfloat16", "float8_e4m3fn", ...
  std::string layout;          // the engine's page layout ("NHD", "HND", "layer_first", ...)
  uint32_t block_tokens = 0;   // tokens per block
  uint32_t tp_rank = 0;        // tensor-parallel rank, < tp_size
  uint32_t tp_size = 1;        // tensor-parallel world size
  std::string engine;          // "vllm", "sglang", "lmcache", "llama.cpp", ...
  std::string engine_version;  // "0.11.0"
  // Free-form "name=value" fields (a pipeline rank, a LoRA adapter, a
  // quantization recipe); the order does not matter, names are unique.
  std::vector<std::pair<std::string, std::string>> extras;

  // No field set: the client has no identity (its keys are stored as named).
  bool empty() const;
  // Ok, or InvalidArgument naming the field and what is allowed: text
  // fields are UTF-8 without control characters, at most kMaxFieldBytes;
  // model is set; tp_rank < tp_size; at most kMaxExtras extras, whose names
  // are [A-Za-z0-9_.-]+ and unique.
  Status Check() const;
  // The canonical text: one "field=value" line per field in a fixed order,
  // extras sorted by name; what the server receives and the tag is hashed from.
  std::string Canonical() const;
  // 16 lowercase hex digits: the first 8 bytes of SHA-256(Canonical()).
  std::string Tag() const;
  // Parses a canonical text (what Canonical() writes) and checks it.
  static Result<CacheIdentity> Parse(std::string_view canonical);

  bool operator==(const CacheIdentity&) const = default;

  static constexpr size_t kMaxFieldBytes = 256;
  static constexpr size_t kMaxExtras = 16;
  static constexpr size_t kTagChars = 16;
};

}  // namespace memkv

#endif  // MEMKV_IDENTITY_H_
