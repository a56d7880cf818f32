// TempDir: a fresh directory for a test, removed with its contents on
// destruction. The one scratch-directory helper of every unit and
// integration test (header-only, so any test target can use it).
//
// Made under $TMPDIR (or /tmp), or under a base the test names (/dev/shm for
// tests that only simulate durability), falling back to the default when
// that base cannot hold one. path() is empty when no directory could be
// made. Not thread-safe; owned by one test.
#ifndef MEMKV_BASE_TEMP_DIR_H_
#define MEMKV_BASE_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace memkv::testing {

class TempDir {
 public:
  TempDir() : TempDir(std::string()) {}
  // Under `base`, "" meaning $TMPDIR or /tmp.
  explicit TempDir(const std::string& base) {
    if (!base.empty()) path_ = Make(base);
    if (path_.empty()) path_ = Make(DefaultBase());
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // <path>/<name>; nothing is created.
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }
  // Writes `content` to <path>/<name> and returns that path.
  std::string Write(std::string_view name, std::string_view content) const {
    std::string file = File(name);
    std::ofstream(file, std::ios::binary) << content;
    return file;
  }

 private:
  static std::string DefaultBase() {
    const char* tmp = ::getenv("TMPDIR");  // the test's environment, read where the test asks
    return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  static std::string Make(const std::string& base) {
    std::string pattern = base + "/memkv-test-XXXXXX";
    return ::mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
  }

  std::string path_;
};

}  // namespace memkv::testing

#endif  // MEMKV_BASE_TEMP_DIR_H_
