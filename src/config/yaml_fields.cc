#include "config/yaml_fields.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <exception>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include <yaml-cpp/eventhandler.h>

#include "base/parse_number.h"
#include "base/units.h"

namespace memkv::config::internal {
namespace {

std::string ChildPath(const std::string& parent, std::string_view name) {
  return parent.empty() ? std::string(name) : parent + "." + std::string(name);
}

// Where a problem with a value should point. yaml-cpp places a null value at
// the start of the next line, so fall back to the key for those.
void NoteField(const YAML::Node& key, const YAML::Node& value, const std::string& path,
               Diagnostics* d) {
  const YAML::Mark mark = value.IsNull() ? key.Mark() : value.Mark();
  d->NoteLocation(path, mark.line, mark.column);
}

void ReportUnknownKey(const std::string& path, const std::vector<FieldSpec>& fields,
                      std::string_view key, Diagnostics* d) {
  std::vector<std::string_view> names;
  for (const FieldSpec& f : fields) names.push_back(f.name);
  std::string text = "unknown field '" + path + "'";
  if (std::optional<std::string_view> close = ClosestName(key, names)) {
    text += " (did you mean '" + std::string(*close) + "'?)";
  }
  d->Fail(path, text + "; allowed: " + JoinNames(names));
}

// Counts the YAML documents in a stream that hold any node. Used instead of
// YAML::LoadAll, which in yaml-cpp 0.7 never returns on some inputs (a lone
// ",": the parser keeps reporting empty documents without consuming input).
class DocumentCounter : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    has_node_ = false;
    start_ = mark;
  }
  void OnDocumentEnd() override {
    if (!has_node_) return;
    if (++documents_ == 2) second_ = start_;
  }
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { has_node_ = true; }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { has_node_ = true; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {
    has_node_ = true;
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    has_node_ = true;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    has_node_ = true;
  }
  void OnMapEnd() override {}
  int documents() const { return documents_; }
  const YAML::Mark& second_start() const { return second_; }

 private:
  YAML::Mark start_;
  YAML::Mark second_;
  bool has_node_ = false;
  int documents_ = 0;
};

// Counts non-empty documents, taking at most `limit` parser steps.
void CountDocuments(std::string_view text, int limit, DocumentCounter* counter) {
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  for (int i = 0; i < limit && parser.HandleNextDocument(*counter); ++i) {
  }
}

}  // namespace

std::optional<YAML::Node> LoadYamlDocument(std::string_view text, Diagnostics* d) {
  YAML::Node document;
  DocumentCounter counter;
  try {
    CountDocuments(text, 64, &counter);
    document = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    d->NoteLocation("", e.mark.line, e.mark.column);
    d->Fail("", "YAML syntax error: " + e.msg);
    return std::nullopt;
  } catch (const std::exception& e) {
    d->Fail("", std::string("YAML parser failed: ") + e.what());
    return std::nullopt;
  }
  if (counter.documents() > 1) {
    d->NoteLocation("", counter.second_start().line, counter.second_start().column);
    d->Fail("", "found " + std::to_string(counter.documents()) +
                    " YAML documents; a config is one document (remove the extra '---')");
    return std::nullopt;
  }
  return document;
}

std::string_view NodeKind(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a string";
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "nothing";
}

void ReadMap(const YAML::Node& node, const std::string& path, const std::vector<FieldSpec>& fields,
             Diagnostics* d) {
  if (node.IsNull()) return;
  if (!node.IsMap()) {
    std::vector<std::string_view> names;
    for (const FieldSpec& f : fields) names.push_back(f.name);
    d->Fail(path, (path.empty() ? std::string("the document") : path) + ": expected a map of " +
                      JoinNames(names) + "; got " + std::string(NodeKind(node)));
    return;
  }
  std::set<std::string, std::less<>> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    // Copies, not references: the iterator hands out a temporary pair.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      d->NoteLocation(path, key.Mark().line, key.Mark().column);
      d->Fail(path, (path.empty() ? std::string("the document") : path) + ": a key is " +
                        std::string(NodeKind(key)) + "; keys are field names");
      continue;
    }
    const std::string& name = key.Scalar();
    const std::string field_path = ChildPath(path, name);
    NoteField(key, value, field_path, d);
    if (!seen.insert(name).second) {
      d->Fail(field_path, "duplicate field '" + field_path + "'; give each field once");
      continue;
    }
    auto spec = std::find_if(fields.begin(), fields.end(),
                             [&](const FieldSpec& f) { return f.name == name; });
    if (spec == fields.end()) {
      ReportUnknownKey(field_path, fields, name, d);
      continue;
    }
    spec->read(value, field_path);
  }
}

bool ReadString(const YAML::Node& node, const std::string& path, Diagnostics* d, std::string* out) {
  if (node.IsNull()) return false;
  if (!node.IsScalar()) {
    d->Fail(path, path + ": expected a string, got " + std::string(NodeKind(node)));
    return false;
  }
  *out = node.Scalar();
  return true;
}

bool ReadBool(const YAML::Node& node, const std::string& path, Diagnostics* d, bool* out) {
  std::string text;
  if (!ReadString(node, path, d, &text)) return false;
  if (text == "true" || text == "false") {
    *out = text == "true";
    return true;
  }
  d->Fail(path, path + ": '" + text + "' is not a boolean; allowed: true, false");
  return false;
}

bool ReadStringList(const YAML::Node& node, const std::string& path, Diagnostics* d,
                    std::vector<std::string>* out) {
  if (node.IsNull()) return false;
  if (!node.IsSequence()) {
    d->Fail(path, path + ": expected a list, got " + std::string(NodeKind(node)));
    return false;
  }
  std::vector<std::string> items;
  bool ok = true;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    d->NoteLocation(item_path, node[i].Mark().line, node[i].Mark().column);
    if (!node[i].IsScalar()) {
      d->Fail(item_path, item_path + ": expected a string, got " + std::string(NodeKind(node[i])));
      ok = false;
    } else {
      items.push_back(node[i].Scalar());
    }
  }
  if (ok) *out = std::move(items);
  return ok;
}

bool ReadUint(const YAML::Node& node, const std::string& path, uint64_t max,
              std::string_view allowed, Diagnostics* d, uint64_t* out) {
  if (node.IsNull()) return false;
  if (!node.IsScalar()) {
    d->Fail(path, path + ": expected an integer, got " + std::string(NodeKind(node)) +
                      "; allowed: " + std::string(allowed));
    return false;
  }
  std::optional<uint64_t> value = ParseDecimal(node.Scalar());
  if (!value) {
    d->Fail(path, path + ": '" + node.Scalar() +
                      "' is not a non-negative integer; allowed: " + std::string(allowed));
    return false;
  }
  if (*value > max) {
    d->Fail(path,
            path + ": " + node.Scalar() + " is out of range; allowed: " + std::string(allowed));
    return false;
  }
  *out = *value;
  return true;
}

bool ReadUint32(const YAML::Node& node, const std::string& path, std::string_view allowed,
                Diagnostics* d, uint32_t* out) {
  uint64_t value = 0;
  if (!ReadUint(node, path, std::numeric_limits<uint32_t>::max(), allowed, d, &value)) {
    return false;
  }
  *out = static_cast<uint32_t>(value);
  return true;
}

bool ReadSize(const YAML::Node& node, const std::string& path, Diagnostics* d, uint64_t* out) {
  if (node.IsNull()) return false;
  if (!node.IsScalar()) {
    d->Fail(path, path + ": expected a size such as '2 MiB', got " + std::string(NodeKind(node)));
    return false;
  }
  Result<uint64_t> size = ParseSize(node.Scalar());
  if (!size.ok()) {
    d->Fail(path, path + ": " + size.status().message());
    return false;
  }
  *out = *size;
  return true;
}

bool ReadFraction(const YAML::Node& node, const std::string& path, Diagnostics* d, double* out) {
  if (node.IsNull()) return false;
  const std::string text = node.IsScalar() ? node.Scalar() : std::string();
  char* end = nullptr;
  const double value = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  if (!node.IsScalar() || text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    d->Fail(path, path + ": '" + text + "' is not a number; allowed: a decimal fraction such as 0.5");
    return false;
  }
  *out = value;
  return true;
}

bool ReadDurationMs(const YAML::Node& node, const std::string& path, Diagnostics* d, uint64_t* out) {
  if (node.IsNull()) return false;
  const std::string text = node.IsScalar() ? node.Scalar() : std::string();
  const std::string allowed = "; allowed: a whole number and a unit (ms, s, m, h, d), such as '30m' or '24h'";
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string_view unit = std::string_view(text).substr(digits);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};
  const auto* found = std::find_if(std::begin(kUnits), std::end(kUnits), [&](const auto& u) { return u.first == unit; });
  std::optional<uint64_t> number = digits == 0 ? std::nullopt : ParseDecimal(text.substr(0, digits));
  if (!node.IsScalar() || !number || found == std::end(kUnits)) {
    d->Fail(path, path + ": '" + text + "' is not a duration" + allowed);
    return false;
  }
  if (*number > std::numeric_limits<uint64_t>::max() / found->second) {
    d->Fail(path, path + ": '" + text + "' is out of range" + allowed);
    return false;
  }
  *out = *number * found->second;
  return true;
}

FieldSpec StringField(std::string_view name, Diagnostics* d, std::string* out) {
  return {name, [d, out](const YAML::Node& v, const std::string& p) { ReadString(v, p, d, out); }};
}

FieldSpec SizeField(std::string_view name, Diagnostics* d, uint64_t* out) {
  return {name, [d, out](const YAML::Node& v, const std::string& p) { ReadSize(v, p, d, out); }};
}

FieldSpec BoolField(std::string_view name, Diagnostics* d, bool* out) {
  return {name, [d, out](const YAML::Node& v, const std::string& p) { ReadBool(v, p, d, out); }};
}

FieldSpec Uint32Field(std::string_view name, std::string_view allowed, Diagnostics* d,
                      uint32_t* out) {
  return {name, [d, out, allowed](const YAML::Node& v, const std::string& p) {
            ReadUint32(v, p, allowed, d, out);
          }};
}

FieldSpec FractionField(std::string_view name, Diagnostics* d, double* out) {
  return {name, [d, out](const YAML::Node& v, const std::string& p) { ReadFraction(v, p, d, out); }};
}

FieldSpec DurationField(std::string_view name, Diagnostics* d, uint64_t* out_ms) {
  return {name, [d, out_ms](const YAML::Node& v, const std::string& p) { ReadDurationMs(v, p, d, out_ms); }};
}

}  // namespace memkv::config::internal
