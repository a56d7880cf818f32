// Thread names: what `top -H`, `ps -L`, gdb and /proc/PID/task/TID/comm show
// for a thread. docs/threads.md lists every thread the server starts, by
// this name. Linux keeps the first 15 bytes of a name; a longer one is cut.
//
// SetThreadName names the calling thread; a thread MemKV starts calls it
// first thing, in the layer that starts it.
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

}  // namespace memkv

#endif  // MEMKV_BASE_THREAD_NAME_H_
