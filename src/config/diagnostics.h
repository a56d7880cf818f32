// Problem collection for the config layer (internal to src/config).
//
// A config is checked as a whole so that a user fixes every mistake in one
// edit instead of meeting them one run at a time. Diagnostics gathers one
// line per problem; each line is prefixed with where the problem sits
// ("config.yaml:7:12: ") when the field was seen in a YAML text.
//
// Fields are named by path: "network.address", "storage.drives[1].media",
// or an environment variable name. A field whose value could not be read at
// all is marked failed; later cross-field rules that involve it (or any of
// its ancestors) are dropped, because they would only restate the first
// problem against a default value the user never wrote.
//
// Not thread-safe; one instance per load.
#ifndef MEMKV_CONFIG_DIAGNOSTICS_H_
#define MEMKV_CONFIG_DIAGNOSTICS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/status.h"

namespace memkv::config::internal {

class Diagnostics {
 public:
  // `source` (a path, "<string>", or empty for none) starts every line.
  explicit Diagnostics(std::string source) : source_(std::move(source)) {}

  // Remembers the 0-based line/column where `field` appears in the text.
  void NoteLocation(const std::string& field, int line, int column);

  // `field` could not be read; reports `text` and silences rules on it.
  void Fail(const std::string& field, std::string text);

  // A rule over `fields` is violated. The first located field places the
  // line; the line is dropped when any of the fields already failed.
  void Violation(const std::vector<std::string>& fields, std::string text);

  bool IsFailed(std::string_view field) const;
  bool empty() const { return problems_.empty(); }

  // The problem lines in text order (those without a location last), so
  // they read top to bottom alongside the file.
  std::vector<std::string> lines() const;

  // Ok when no problems; else InvalidArgument with lines() joined by "\n".
  Status ToStatus() const;

 private:
  struct Location {
    int line;
    int column;
    auto operator<=>(const Location&) const = default;
  };
  struct Problem {
    std::optional<Location> location;
    std::string text;
  };
  void Add(const std::vector<std::string>& fields, std::string text);
  std::optional<Location> Locate(const std::vector<std::string>& fields) const;

  std::string source_;
  std::map<std::string, Location, std::less<>> locations_;
  std::set<std::string, std::less<>> failed_;
  std::vector<Problem> problems_;
};

// InvalidArgument with `lines` joined by "\n"; Ok when empty.
Status JoinProblems(const std::vector<std::string>& lines);

// The path one level up: "a.b[2].c" -> "a.b[2]" -> "a.b" -> "a" -> "".
std::string_view ParentPath(std::string_view path);

// The allowed name closest to `name` when it is a plausible typo of it.
std::optional<std::string_view> ClosestName(std::string_view name,
                                            std::span<const std::string_view> allowed);

// "a, b, c".
std::string JoinNames(std::span<const std::string_view> names);

// The 32-byte authentication key from its 64-hex form. The error names the
// length or the first bad character's position but never echoes the text:
// a near-miss key is still a secret and messages end up in logs.
inline constexpr size_t kAuthKeyBytes = 32;
Result<std::vector<uint8_t>> ParseAuthKeyHex(std::string_view text);

// Reads a small text file; IoError naming the path and the errno text.
Result<std::string> ReadConfigFile(const std::string& path);

}  // namespace memkv::config::internal

#endif  // MEMKV_CONFIG_DIAGNOSTICS_H_
