// KeyPage: one page of a key listing (the List opcode, docs/wire-protocol.md):
// of the keys offered, those that start with a prefix and sort bytewise after
// a cursor, the `limit` smallest, each once. A store offers every key it
// holds (under its own lock); a tier offers both of its stores' keys, and a
// key held by both is kept once. Pure code.
#ifndef MEMKV_BASE_KEY_PAGE_H_
#define MEMKV_BASE_KEY_PAGE_H_

#include <cstddef>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace memkv {

class KeyPage {
 public:
  // Keys shorter than `min_size` are left out (a tenant's listing never
  // shows its bare prefix, which it cannot name).
  KeyPage(std::string_view prefix, std::string_view after, size_t limit, size_t min_size = 0)
      : prefix_(prefix), after_(after), limit_(limit), min_size_(min_size) {}

  // Keeps `key` when it belongs to the page: O(log limit).
  void Offer(std::string_view key) {
    if (key.size() < min_size_ || !key.starts_with(prefix_) || key <= std::string_view(after_)) return;
    if (keys_.size() == limit_) {
      if (limit_ == 0 || key >= std::string_view(*keys_.rbegin())) {
        if (limit_ == 0 || key != std::string_view(*keys_.rbegin())) more_ = true;
        return;
      }
      if (keys_.contains(key)) return;
      keys_.erase(std::prev(keys_.end()));
      more_ = true;
    }
    keys_.emplace(key);
  }

  // True when a key of the page was left out for the limit: the listing goes
  // on after the page's last key.
  bool more() const { return more_; }

  // The page in bytewise order.
  std::vector<std::string> Take() {
    return {std::make_move_iterator(keys_.begin()), std::make_move_iterator(keys_.end())};
  }

 private:
  std::string prefix_;
  std::string after_;
  size_t limit_;
  size_t min_size_;
  std::set<std::string, std::less<>> keys_;
  bool more_ = false;
};

}  // namespace memkv

#endif  // MEMKV_BASE_KEY_PAGE_H_
