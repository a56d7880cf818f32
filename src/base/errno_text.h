// ErrnoText: an errno value as a message names it, "Invalid argument (EINVAL)":
// the text for people, the symbol for searching and for scripts.
#ifndef MEMKV_BASE_ERRNO_TEXT_H_
#define MEMKV_BASE_ERRNO_TEXT_H_

#include <string.h>

#include <cstring>
#include <string>

namespace memkv {

inline std::string ErrnoText(int err) {
  const char* name = strerrorname_np(err);
  std::string text = std::strerror(err);
  if (name != nullptr) text += std::string(" (") + name + ")";
  return text;
}

}  // namespace memkv

#endif  // MEMKV_BASE_ERRNO_TEXT_H_
