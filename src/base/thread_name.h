// Thread names: what `top -H`, `ps -L`, gdb and /proc/PID/task/TID/comm show
// for a thread. docs/threads.md lists every thread the server starts, by
// this name. Linux keeps the first 15 bytes of a name; a longer one is cut.
//
// SetThreadName names the calling thread; a thread MemKV starts calls it
// first thing. ScopedThreadName names the calling thread until it goes out of
// scope, then gives the old name back: a thread started meanwhile inherits
// the name (Linux copies a new thread's name from the thread that creates
// it). The Daemon names the threads of the storage layers that way, which
// start threads without naming them.
//
// Any thread, for itself. A name is a diagnostic: failures are ignored.
#ifndef MEMKV_BASE_THREAD_NAME_H_
#define MEMKV_BASE_THREAD_NAME_H_

#include <pthread.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace memkv {

inline constexpr size_t kMaxThreadNameBytes = 15;

inline void SetThreadName(std::string_view name) {
  char text[kMaxThreadNameBytes + 1] = {};
  name.copy(text, kMaxThreadNameBytes);
  pthread_setname_np(pthread_self(), text);
}

// The calling thread's name ("" when it cannot be read).
inline std::string ThreadName() {
  char text[kMaxThreadNameBytes + 1] = {};
  if (pthread_getname_np(pthread_self(), text, sizeof(text)) != 0) return "";
  return text;
}

class ScopedThreadName {
 public:
  explicit ScopedThreadName(std::string_view name) : previous_(ThreadName()) { SetThreadName(name); }
  ~ScopedThreadName() {
    if (!previous_.empty()) SetThreadName(previous_);
  }
  ScopedThreadName(const ScopedThreadName&) = delete;
  ScopedThreadName& operator=(const ScopedThreadName&) = delete;

 private:
  std::string previous_;
};

}  // namespace memkv

#endif  // MEMKV_BASE_THREAD_NAME_H_
