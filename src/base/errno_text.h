// An errno value in a message, in the three forms MemKV's messages use:
//   ErrnoText(EINVAL)     "Invalid argument (EINVAL)": the text for people, the
//                         symbol for searching and for scripts
//   ErrnoName(EIO)        "EIO (Input/output error)": the drive layer's form,
//                         symbol first
//   ErrnoMessage(ENOENT)  "No such file or directory": strerror alone, for the
//                         messages (connect, bind, config file reads) whose
//                         wording users, docs and scripts already match
// Pure functions; strerror's text is the C library's.
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

inline std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return std::string(name != nullptr ? name : "errno " + std::to_string(err)) + " (" + std::strerror(err) + ")";
}

inline std::string ErrnoMessage(int err) { return std::strerror(err); }

}  // namespace memkv

#endif  // MEMKV_BASE_ERRNO_TEXT_H_
