// Helpers shared by the config tests: problem lines, substring checks and
// a temporary file. Test-only.
#ifndef MEMKV_CONFIG_CONFIG_TEST_UTIL_H_
#define MEMKV_CONFIG_CONFIG_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/status.h"

namespace memkv::config::testing {

// The lines of a failed load; fails the test when it did not fail with
// InvalidArgument.
template <typename T>
std::vector<std::string> ProblemLines(const Result<T>& result) {
  std::vector<std::string> lines;
  EXPECT_FALSE(result.ok()) << "expected a config error";
  if (result.ok()) return lines;
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << result.status().ToString();
  const std::string& m = result.status().message();
  size_t start = 0;
  while (start <= m.size()) {
    size_t nl = m.find('\n', start);
    if (nl == std::string::npos) nl = m.size();
    lines.push_back(m.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

inline bool LineHasAll(const std::string& line, std::initializer_list<std::string_view> parts) {
  for (std::string_view p : parts) {
    if (line.find(p) == std::string::npos) return false;
  }
  return true;
}

inline size_t CountLinesWith(const std::vector<std::string>& lines,
                             std::initializer_list<std::string_view> parts) {
  size_t n = 0;
  for (const std::string& line : lines) n += LineHasAll(line, parts) ? 1 : 0;
  return n;
}

// True when one line holds every part; prints the lines otherwise.
inline ::testing::AssertionResult HasLineWith(const std::vector<std::string>& lines,
                                              std::initializer_list<std::string_view> parts) {
  if (CountLinesWith(lines, parts) > 0) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure() << "no line holds all of:";
  for (std::string_view p : parts) failure << " [" << p << "]";
  failure << "\nlines:";
  for (const std::string& line : lines) failure << "\n  " << line;
  return failure;
}

// A file under the test temp dir holding `content`; removed on destruction.
class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    path_ = ::testing::TempDir() + "memkv_config_XXXXXX";
    int fd = mkstemp(path_.data());
    EXPECT_GE(fd, 0) << "mkstemp " << path_;
    if (fd < 0) return;
    EXPECT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
    close(fd);
  }
  ~TempFile() { unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace memkv::config::testing

#endif  // MEMKV_CONFIG_CONFIG_TEST_UTIL_H_
