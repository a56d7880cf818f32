#include "base/json.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/utf8.h"

namespace memkv {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<JsonValue> Document() {
    const size_t start = text_.find_first_of("{[");
    if (start == std::string_view::npos) return Error("no JSON object or array in the text");
    pos_ = start;
    JsonValue v;
    if (!Value(&v, 0)) return Error(error_);
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the document");
    return v;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument("JSON at byte " + std::to_string(pos_) + ": " + what);
  }
  bool Fail(std::string what) {
    if (error_.empty()) error_ = std::move(what);
    return false;
  }

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return Fail("expected '" + std::string(word) + "'");
    pos_ += word.size();
    return true;
  }

  bool Value(JsonValue* out, int depth) {
    if (depth > kMaxJsonDepth) return Fail("nested deeper than " + std::to_string(kMaxJsonDepth));
    SkipSpace();
    if (pos_ >= text_.size()) return Fail("unexpected end");
    switch (text_[pos_]) {
      case '{':
        return Object(out, depth);
      case '[':
        return Array(out, depth);
      case '"':
        out->type = JsonValue::Type::kString;
        return String(&out->string);
      case 't':
        out->type = JsonValue::Type::kBool;
        out->boolean = true;
        return Literal("true");
      case 'f':
        out->type = JsonValue::Type::kBool;
        return Literal("false");
      case 'n':
        out->type = JsonValue::Type::kNull;
        return Literal("null");
      default:
        return Number(out);
    }
  }

  bool Object(JsonValue* out, int depth) {
    out->type = JsonValue::Type::kObject;
    ++pos_;  // '{'
    if (Eat('}')) return true;
    do {
      SkipSpace();
      std::string key;
      if (pos_ >= text_.size() || text_[pos_] != '"') return Fail("expected a member name");
      if (!String(&key)) return false;
      if (!Eat(':')) return Fail("expected ':'");
      JsonValue v;
      if (!Value(&v, depth + 1)) return false;
      out->object.push_back(JsonMember{std::move(key), std::move(v)});
    } while (Eat(','));
    return Eat('}') || Fail("expected ',' or '}'");
  }

  bool Array(JsonValue* out, int depth) {
    out->type = JsonValue::Type::kArray;
    ++pos_;  // '['
    if (Eat(']')) return true;
    do {
      JsonValue v;
      if (!Value(&v, depth + 1)) return false;
      out->array.push_back(std::move(v));
    } while (Eat(','));
    return Eat(']') || Fail("expected ',' or ']'");
  }

  bool String(std::string* out) {
    ++pos_;  // '"'
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == '"') return true;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) break;
      char e = text_[pos_++];
      switch (e) {
        case 'n':
          out->push_back('\n');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'u': {
          if (pos_ + 4 > text_.size()) return Fail("truncated \\u escape");
          const std::string hex(text_.substr(pos_, 4));
          char* end = nullptr;
          const long code = std::strtol(hex.c_str(), &end, 16);
          if (end != hex.c_str() + 4) return Fail("bad \\u escape");
          out->push_back(code < 0x80 ? char(code) : '?');
          pos_ += 4;
          break;
        }
        default:
          out->push_back(e);
          break;  // \" \\ \/
      }
    }
    return Fail("unterminated string");
  }

  bool Number(JsonValue* out) {
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) ||
                                   std::string_view("+-.eE").find(text_[pos_]) != std::string_view::npos)) {
      ++pos_;
    }
    const std::string digits(text_.substr(start, pos_ - start));
    char* end = nullptr;
    const double d = std::strtod(digits.c_str(), &end);
    if (digits.empty() || end != digits.c_str() + digits.size() || !std::isfinite(d)) {
      pos_ = start;
      return Fail("expected a value");
    }
    out->type = JsonValue::Type::kNumber;
    out->number = d;
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

const JsonValue* JsonValue::Find(std::string_view key) const {
  if (type != Type::kObject) return nullptr;
  for (const auto& [k, v] : object) {
    if (k == key) return &v;
  }
  return nullptr;
}

const JsonValue* JsonValue::Path(std::initializer_list<std::string_view> keys) const {
  const JsonValue* v = this;
  for (std::string_view k : keys) {
    if (v == nullptr) return nullptr;
    v = v->Find(k);
  }
  return v;
}

Result<JsonValue> ParseJson(std::string_view text) { return Parser(text).Document(); }

std::string JsonQuote(std::string_view raw) {
  // JSON text is UTF-8: bytes that are not become \xNN first (base/utf8.h).
  std::string printable;
  std::string_view text = raw;
  if (!IsValidUtf8(raw)) {
    printable = PrintableUtf8(raw);
    text = printable;
  }
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void JsonWriter::BeforeValue() {
  if (need_comma_) out_ += ',';
  need_comma_ = true;
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_ += '{';
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  out_ += '}';
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_ += '[';
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  out_ += ']';
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  out_ += JsonQuote(key);
  out_ += ':';
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  out_ += JsonQuote(value);
  return *this;
}

JsonWriter& JsonWriter::Number(uint64_t value) {
  BeforeValue();
  out_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::Number(int64_t value) {
  BeforeValue();
  out_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::Number(double value) {
  BeforeValue();
  if (!std::isfinite(value)) {
    out_ += "null";
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.15g", value);  // 15 significant digits: exact enough, and 0.1 stays 0.1
  out_ += buf;
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
  return *this;
}

}  // namespace memkv
