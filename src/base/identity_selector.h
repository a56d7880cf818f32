// IdentitySelector: one entry of a server's identities.accept list, which
// names the cache identities (memkv/identity.h) it serves: a tag (16 hex
// digits) or fields that must match ("model=llama-3-8b,kv_dtype=bfloat16";
// fields: model, revision, kv_dtype, layout, block_tokens, tp_rank,
// tp_size, engine, engine_version, extra.NAME).
#ifndef MEMKV_BASE_IDENTITY_SELECTOR_H_
#define MEMKV_BASE_IDENTITY_SELECTOR_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memkv/identity.h"
#include "memkv/status.h"

namespace memkv {

class IdentitySelector {
 public:
  // InvalidArgument naming the entry and what is allowed.
  static Result<IdentitySelector> Parse(std::string_view text);

  bool Matches(const CacheIdentity& identity, std::string_view tag) const;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::string tag_;                                           // a tag entry
  std::vector<std::pair<std::string, std::string>> fields_;  // else: each must match
};

// Whether `tag` is 16 lowercase hex digits.
bool IsIdentityTag(std::string_view tag);

}  // namespace memkv

#endif  // MEMKV_BASE_IDENTITY_SELECTOR_H_
