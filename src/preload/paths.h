// Which paths are MemKV values, and under which key.
//
// MEMKV_PRELOAD_PREFIX is a ':'-separated list of absolute directory paths.
// A path names a MemKV value when, made absolute (against the working
// directory or a directory descriptor) and normalized lexically (`//`, `.`
// and `..` collapsed; symbolic links are not followed), it is a prefix or
// lies below one; its key is the part below the prefix ("" for the prefix
// itself, which is the root directory of the store). Pure functions and a
// value type: safe from any thread once built.
#ifndef MEMKV_PRELOAD_PATHS_H_
#define MEMKV_PRELOAD_PATHS_H_

#include <string>
#include <string_view>
#include <vector>

namespace memkv::preload {

// `path` made absolute against `base` (itself absolute; unused when `path`
// is) with empty, `.` and `..` components collapsed. `..` at the root stays
// at the root, as the kernel does.
std::string NormalizePath(std::string_view path, std::string_view base);

class Prefixes {
 public:
  // Parses a MEMKV_PRELOAD_PREFIX value; entries that are empty, relative
  // or "/" are dropped (and named in *rejected, if given).
  static Prefixes Parse(std::string_view spec, std::vector<std::string>* rejected = nullptr);

  bool empty() const { return prefixes_.empty(); }
  // For an absolute normalized path: true and *key set when it is a prefix
  // or below one; *index, when given, is the matching prefix's position.
  bool Match(std::string_view normalized, std::string* key, size_t* index = nullptr) const;
  size_t size() const { return prefixes_.size(); }
  // The index-th prefix, normalized, without a trailing '/'.
  const std::string& at(size_t index) const { return prefixes_.at(index); }

 private:
  std::vector<std::string> prefixes_;  // normalized, no trailing '/'
};

}  // namespace memkv::preload

#endif  // MEMKV_PRELOAD_PATHS_H_
