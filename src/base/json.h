// A small JSON reader for the benchmark's reference tools (fio's
// --output-format=json). It builds a plain tree; enough for reading a few
// numbers out of a trusted tool's report, not a general-purpose library:
// numbers are doubles, \u escapes outside ASCII become '?', and nesting is
// limited to kMaxDepth.
//
// Pure functions and values; thread-compatible.
#ifndef MEMKV_BENCH_JSON_LITE_H_
#define MEMKV_BENCH_JSON_LITE_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memkv/status.h"

namespace memkv::bench {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in document order

  // The member `key` of an object, or nullptr (also when this is not an object).
  const JsonValue* Find(std::string_view key) const;
  // Follows object members by name; nullptr when any step is missing.
  const JsonValue* Path(std::initializer_list<std::string_view> keys) const;
  // The number, or `fallback` when this is not a number.
  double NumberOr(double fallback) const { return type == Type::kNumber ? number : fallback; }
};

inline constexpr int kMaxJsonDepth = 64;

// Parses one JSON document. Text before the first '{' or '[' is skipped
// (fio sometimes prints a warning line first); trailing whitespace is
// allowed, anything else after the document is an error. InvalidArgument
// naming the byte offset on malformed input.
Result<JsonValue> ParseJson(std::string_view text);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_JSON_LITE_H_
