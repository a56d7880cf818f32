// Callback<R(Args...)>: a move-only callable. Storage completions own what
// they carry (pinned values, reserved pool space, a batch's items), which
// std::function cannot hold because it must be copyable; C++23's
// std::move_only_function is the same idea.
//
// One heap allocation per callable wrapped; the tier wraps only on the drive
// path, so a completion that runs inline is never wrapped. Calling an empty
// Callback is undefined. Not thread-safe; moved between threads freely.
#ifndef MEMKV_TIER_CALLBACK_H_
#define MEMKV_TIER_CALLBACK_H_

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace memkv::tier {

template <typename Signature>
class Callback;

template <typename R, typename... Args>
class Callback<R(Args...)> {
 public:
  Callback() = default;
  template <typename F>
    requires(!std::is_same_v<std::decay_t<F>, Callback> && std::is_invocable_r_v<R, std::decay_t<F>&, Args...>)
  Callback(F&& f)  // NOLINT(google-explicit-constructor): a lambda converts, as for std::function
      : impl_(std::make_unique<Holder<std::decay_t<F>>>(std::forward<F>(f))) {}
  Callback(Callback&&) noexcept = default;
  Callback& operator=(Callback&&) noexcept = default;
  Callback(const Callback&) = delete;
  Callback& operator=(const Callback&) = delete;
  ~Callback() = default;

  explicit operator bool() const { return impl_ != nullptr; }
  R operator()(Args... args) { return impl_->Call(std::forward<Args>(args)...); }

 private:
  struct Base {
    virtual ~Base() = default;
    virtual R Call(Args&&... args) = 0;
  };
  template <typename F>
  struct Holder final : Base {
    template <typename G>
    explicit Holder(G&& g) : f(std::forward<G>(g)) {}
    R Call(Args&&... args) override { return std::invoke(f, std::forward<Args>(args)...); }
    F f;
  };
  std::unique_ptr<Base> impl_;
};

}  // namespace memkv::tier

#endif  // MEMKV_TIER_CALLBACK_H_
