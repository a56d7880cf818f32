// Repeated keys in a batch: which items name a key that a later item of
// the same batch names again (a batch put stores only a key's last item).
#ifndef MEMKV_BASE_REPEATED_KEYS_H_
#define MEMKV_BASE_REPEATED_KEYS_H_

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace memkv {

// Calls repeat(i, last) for each item i < n whose key, key_at(i), item
// `last` > i names too, `last` being the key's last item. Keys are found
// equal through their hashes, sorted: no allocation once `scratch` has
// room for n pairs, and only items whose hashes are equal are compared.
template <class KeyAt, class Repeat>
void ForEachRepeatedKey(size_t n, KeyAt&& key_at, std::vector<std::pair<size_t, size_t>>* scratch, Repeat&& repeat) {
  if (n < 2) return;
  std::vector<std::pair<size_t, size_t>>& by_hash = *scratch;
  by_hash.clear();
  for (size_t i = 0; i < n; ++i) by_hash.emplace_back(std::hash<std::string_view>{}(key_at(i)), i);
  std::sort(by_hash.begin(), by_hash.end());
  for (size_t first = 0, end = 0; first < n; first = end) {
    end = first + 1;
    while (end < n && by_hash[end].first == by_hash[first].first) ++end;
    // [first, end): one hash, item indices ascending.
    for (size_t a = first; a + 1 < end; ++a) {
      const size_t i = by_hash[a].second;
      size_t last = i;
      for (size_t b = a + 1; b < end; ++b) {
        if (key_at(by_hash[b].second) == key_at(i)) last = by_hash[b].second;
      }
      if (last != i) repeat(i, last);
    }
  }
}

}  // namespace memkv

#endif  // MEMKV_BASE_REPEATED_KEYS_H_
