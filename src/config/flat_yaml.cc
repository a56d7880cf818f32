#include "config/flat_yaml.h"

#include <cstdint>

namespace memkv::config::internal {
namespace {

constexpr std::string_view kAllowed =
    "; a client config is a map of option names to a value or a list of values "
    "(key: value, key: [a, b], or key: followed by '  - a' lines)";

// Reads one line's tokens; every failure names the line (1-based in text).
class LineReader {
 public:
  LineReader(std::string_view line, int number, Diagnostics* d) : s_(line), number_(number), d_(d) {}

  size_t pos() const { return pos_; }
  bool AtEnd() {
    SkipBlanks();
    return pos_ >= s_.size() || (s_[pos_] == '#' && (pos_ == 0 || s_[pos_ - 1] == ' ' || s_[pos_ - 1] == '\t'));
  }
  void SkipBlanks() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  bool Peek(char c) {
    SkipBlanks();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void Skip() { ++pos_; }

  // A problem at the current position; Diagnostics puts "file:line:col: "
  // before it.
  bool Fail(const std::string& what) {
    d_->NoteLocation("", number_, static_cast<int>(pos_));
    d_->Fail("", what);
    return false;
  }

  // A scalar up to one of `stops` (and a comment); quoted or plain.
  bool Scalar(std::string_view stops, std::string* out) {
    SkipBlanks();
    if (pos_ >= s_.size()) return Fail("a value is missing" + std::string(kAllowed));
    const char c = s_[pos_];
    if (c == '"') return DoubleQuoted(out);
    if (c == '\'') return SingleQuoted(out);
    if (std::string_view("&*!|>{%@`").find(c) != std::string_view::npos) {
      return Fail(std::string("'") + c + "' starts an anchor, alias, tag, block scalar or map, which a client "
                  "config does not use" + std::string(kAllowed));
    }
    if (c == '[' || (c == '-' && pos_ + 1 < s_.size() && s_[pos_ + 1] == ' ')) {
      return Fail("a list inside a list" + std::string(kAllowed));
    }
    const size_t start = pos_;
    size_t end = pos_;
    while (pos_ < s_.size()) {
      const char ch = s_[pos_];
      if (stops.find(ch) != std::string_view::npos) break;
      if (ch == '#' && (s_[pos_ - 1] == ' ' || s_[pos_ - 1] == '\t')) break;
      if (ch == ':' && (pos_ + 1 == s_.size() || s_[pos_ + 1] == ' ')) {
        return Fail("a map where a value belongs" + std::string(kAllowed));
      }
      ++pos_;
      if (ch != ' ' && ch != '\t') end = pos_;
    }
    *out = std::string(s_.substr(start, end - start));
    return true;
  }

 private:
  bool DoubleQuoted(std::string* out) {
    ++pos_;
    out->clear();
    while (pos_ < s_.size()) {
      char ch = s_[pos_++];
      if (ch == '"') return true;
      if (ch != '\\') {
        out->push_back(ch);
        continue;
      }
      if (pos_ >= s_.size()) break;
      ch = s_[pos_++];
      switch (ch) {
        case '"': case '\\': case '/': out->push_back(ch); break;
        case 'n': out->push_back('\n'); break;
        case 't': out->push_back('\t'); break;
        case '0': out->push_back('\0'); break;
        default:
          return Fail(std::string("the escape '\\") + ch + "' is not read in a client config; allowed: \\\" \\\\ \\n \\t");
      }
    }
    return Fail(std::string("YAML syntax error: ") + "a double-quoted value does not end on its line");
  }

  bool SingleQuoted(std::string* out) {
    ++pos_;
    out->clear();
    while (pos_ < s_.size()) {
      char ch = s_[pos_++];
      if (ch != '\'') {
        out->push_back(ch);
      } else if (pos_ < s_.size() && s_[pos_] == '\'') {
        out->push_back('\'');
        ++pos_;
      } else {
        return true;
      }
    }
    return Fail(std::string("YAML syntax error: ") + "a single-quoted value does not end on its line");
  }

  std::string_view s_;
  size_t pos_ = 0;
  int number_;
  Diagnostics* d_;
};

// YAML's null spellings: such a value is "nothing", as yaml-cpp reads it.
bool IsNullScalar(const std::string& text, bool quoted) {
  return !quoted && (text == "~" || text == "null" || text == "Null" || text == "NULL");
}

bool ReadFlowList(LineReader& r, int line, FlatYamlValue* value) {
  r.Skip();  // '['
  value->kind = FlatYamlValue::Kind::kList;
  if (r.Peek(']')) {
    r.Skip();
    return true;
  }
  while (true) {
    std::string item;
    if (!r.Scalar(",]", &item)) return false;
    value->items.push_back(std::move(item));
    value->item_lines.push_back(line);
    if (r.Peek(',')) {
      r.Skip();
      if (r.Peek(']')) {  // YAML allows a trailing comma: [a, b, ]
        r.Skip();
        return true;
      }
      continue;
    }
    if (r.Peek(']')) {
      r.Skip();
      return true;
    }
    return r.Fail("YAML syntax error: a flow list '[' does not end with ']' on its line");
  }
}

size_t Indent(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  return i;
}

}  // namespace

std::string_view FlatYamlKind(const FlatYamlValue& value) {
  switch (value.kind) {
    case FlatYamlValue::Kind::kNull: return "nothing";
    case FlatYamlValue::Kind::kScalar: return "a string";
    case FlatYamlValue::Kind::kList: return "a list";
  }
  return "nothing";
}

std::optional<std::vector<FlatYamlEntry>> ParseFlatYaml(std::string_view text, Diagnostics* d) {
  std::vector<FlatYamlEntry> entries;
  bool seen_content = false;
  int number = -1;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    start = end + 1;
    ++number;
    LineReader r(line, number, d);
    if (r.AtEnd()) {
      if (start > text.size()) break;
      continue;
    }
    if (Indent(line) < line.size() && line[Indent(line)] == '\t') {
      r.Fail("a tab in the indentation; YAML indents with spaces");
      return std::nullopt;
    }
    if (line.substr(0, 3) == "---" && (line.size() == 3 || line[3] == ' ')) {
      if (seen_content) {
        r.Fail("a second YAML document; a config is one document (remove the extra '---')");
        return std::nullopt;
      }
      seen_content = true;
      LineReader rest(line.substr(3), number, d);
      if (!rest.AtEnd()) {
        r.Fail("content after '---'" + std::string(kAllowed));
        return std::nullopt;
      }
      continue;
    }
    if (line.substr(0, 3) == "...") {
      r.Fail("'...' ends the document; a config is one document");
      return std::nullopt;
    }
    seen_content = true;
    const size_t indent = Indent(line);
    if (indent > 0) {
      // Only the entries of a block list under the last key are indented.
      r.SkipBlanks();
      FlatYamlEntry* last = entries.empty() ? nullptr : &entries.back();
      const bool item = r.Peek('-') && (r.pos() + 1 == line.size() || line[r.pos() + 1] == ' ');
      if (!item || last == nullptr || last->value.kind == FlatYamlValue::Kind::kScalar ||
          (last->value.kind == FlatYamlValue::Kind::kList && last->value.item_lines.empty()) ||
          (last->value.kind == FlatYamlValue::Kind::kList && last->value.item_lines.back() == last->line)) {
        r.Fail(std::string(item ? "a list entry that belongs to no key" : "an indented line (a nested map?)") +
               std::string(kAllowed));
        return std::nullopt;
      }
      r.Skip();
      std::string value;
      if (!r.Scalar("", &value)) return std::nullopt;
      last->value.kind = FlatYamlValue::Kind::kList;
      last->value.items.push_back(std::move(value));
      last->value.item_lines.push_back(number);
      continue;
    }
    if (r.Peek('-') && (line.size() == 1 || line[1] == ' ')) {
      r.Fail("the document is a list; expected a map" + std::string(kAllowed));
      return std::nullopt;
    }
    FlatYamlEntry entry;
    entry.line = number;
    entry.column = 0;
    if (!r.Scalar(":", &entry.key)) return std::nullopt;
    if (!r.Peek(':')) {
      r.Fail("'" + entry.key + "' is not followed by ':'" + std::string(kAllowed));
      return std::nullopt;
    }
    r.Skip();
    if (r.pos() < line.size() && line[r.pos()] != ' ' && line[r.pos()] != '\t') {
      // YAML reads "key:value" as one string, not a key and its value.
      r.Fail("'" + entry.key + ":' needs a blank before its value" + std::string(kAllowed));
      return std::nullopt;
    }
    if (r.AtEnd()) {
      // Nothing, unless block-list entries follow (item_lines marks them).
      entry.value_column = entry.column;
      entries.push_back(std::move(entry));
      continue;
    }
    entry.value_column = static_cast<int>(r.pos());
    if (r.Peek('[')) {
      if (!ReadFlowList(r, number, &entry.value)) return std::nullopt;
    } else {
      const bool quoted = r.Peek('"') || r.Peek('\'');
      std::string value;
      if (!r.Scalar("", &value)) return std::nullopt;
      if (!IsNullScalar(value, quoted)) {
        entry.value.kind = FlatYamlValue::Kind::kScalar;
        entry.value.items.push_back(std::move(value));
        entry.value.item_lines.push_back(number);
      }
    }
    if (!r.AtEnd()) {
      r.Fail("more text after the value of '" + entry.key + "'" + std::string(kAllowed));
      return std::nullopt;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace memkv::config::internal
