// Test helpers of doctor_test: a small JSON reader (to prove `--json` is
// JSON and read it back), a child-process runner for the real `memkv`
// binary, and scratch copies of fixtures. Tests only.
#ifndef MEMKV_DOCTOR_TEST_UTIL_H_
#define MEMKV_DOCTOR_TEST_UTIL_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/temp_dir.h"

namespace memkv::doctor::testing {

struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;

  bool is_null() const { return kind == Kind::kNull; }
  bool has(const std::string& key) const;
  // Member or element; a null Json when absent.
  const Json& operator[](const std::string& key) const;
  const Json& operator[](size_t index) const;
};

// The whole text must be one JSON value (surrounding whitespace allowed).
std::optional<Json> ParseJson(std::string_view text);

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] a path) with this process's environment minus every
// MEMKV_* variable, plus `env`, and waits for it.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});

// A fresh directory under $TMPDIR, removed on destruction, with fixture
// helpers.
class ScratchDir : public ::memkv::testing::TempDir {
 public:
  // Copies the fixture directory `from` to <path>/<name> and returns that path.
  std::string CopyFixture(const std::string& from, const std::string& name) const;
  // Writes `content` to `dir` + `rel` (absolute-style rel, e.g. "/sys/..."),
  // creating directories.
  static void Write(const std::string& dir, const std::string& rel, const std::string& content);
};

}  // namespace memkv::doctor::testing

#endif  // MEMKV_DOCTOR_TEST_UTIL_H_
