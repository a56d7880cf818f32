// Writing a whole text file at once: the benchmarks' JSON and plot files.
//
// A plain function; thread-compatible (two calls on one path race).
#ifndef MEMKV_BASE_TEXT_FILE_H_
#define MEMKV_BASE_TEXT_FILE_H_

#include <string>
#include <string_view>

#include "memkv/status.h"

namespace memkv {

// Writes `text` to `path`, replacing what was there; IoError naming the path
// when it cannot be opened or written.
Status WriteTextFile(const std::string& path, std::string_view text);

}  // namespace memkv

#endif  // MEMKV_BASE_TEXT_FILE_H_
