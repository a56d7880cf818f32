// JSON for MemKV's own documents: a small reader (fio's reports, the admin
// endpoint's answers read back by `memkv admin status`) and a writer.
//
// The reader builds a plain tree; enough for reading a few numbers and
// strings out of a trusted peer's document, not a general-purpose library:
// numbers are doubles, \u escapes outside ASCII become '?', and nesting is
// limited to kMaxJsonDepth.
//
// Pure functions and values; thread-compatible.
#ifndef MEMKV_BASE_JSON_H_
#define MEMKV_BASE_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memkv/status.h"

namespace memkv {

struct JsonMember;

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  // In document order. A struct of its own, not std::pair: clang cannot
  // instantiate std::pair over the still-incomplete JsonValue here.
  std::vector<JsonMember> object;

  // The member `key` of an object, or nullptr (also when this is not an object).
  const JsonValue* Find(std::string_view key) const;
  // Follows object members by name; nullptr when any step is missing.
  const JsonValue* Path(std::initializer_list<std::string_view> keys) const;
  // The number, or `fallback` when this is not a number.
  double NumberOr(double fallback) const { return type == Type::kNumber ? number : fallback; }
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

inline constexpr int kMaxJsonDepth = 64;

// Parses one JSON document. Text before the first '{' or '[' is skipped
// (fio sometimes prints a warning line first); trailing whitespace is
// allowed, anything else after the document is an error. InvalidArgument
// naming the byte offset on malformed input.
Result<JsonValue> ParseJson(std::string_view text);

// `text` as a JSON string literal, quotes included; control characters,
// quotes and backslashes escaped. UTF-8 is passed through; a byte that is not
// part of well-formed UTF-8 is written as the characters \xNN (PrintableUtf8
// of base/utf8.h, so the literal holds "\\xNN"): the document stays valid JSON.
std::string JsonQuote(std::string_view text);

// Builds one JSON document with commas and nesting handled:
//   JsonWriter w; w.BeginObject().Key("a").Number(1).Key("b").String("x").EndObject();
// Misuse (a value where a key is due, unbalanced ends) is a programming error.
class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Number(uint64_t value);
  JsonWriter& Number(int64_t value);
  JsonWriter& Number(double value);  // non-finite values are written as null
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  const std::string& text() const { return out_; }

 private:
  void BeforeValue();
  std::string out_;
  bool need_comma_ = false;
};

}  // namespace memkv

#endif  // MEMKV_BASE_JSON_H_
