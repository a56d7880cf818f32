// The MemKV version, from project(VERSION ...) in the top-level CMakeLists.txt
// (the same number the Debian package carries).
#ifndef MEMKV_BASE_VERSION_H_
#define MEMKV_BASE_VERSION_H_

namespace memkv {

inline constexpr const char* kMemkvVersion = MEMKV_VERSION;

}  // namespace memkv

#endif  // MEMKV_BASE_VERSION_H_
