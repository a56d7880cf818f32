// CacheIdentity (memkv/identity.h): its checks, canonical text and tag.
#include <openssl/evp.h>

#include <algorithm>
#include <set>

#include "base/parse_number.h"
#include "base/utf8.h"
#include "base/identity_selector.h"
#include "memkv/identity.h"

namespace memkv {
namespace {

constexpr std::string_view kHeader = "memkv-identity 1";

// The text fields in canonical order, and how to reach each.
struct TextField {
  std::string_view name;
  std::string CacheIdentity::*field;
};
constexpr TextField kHead[] = {{"model", &CacheIdentity::model},
                               {"revision", &CacheIdentity::revision},
                               {"kv_dtype", &CacheIdentity::kv_dtype},
                               {"layout", &CacheIdentity::layout}};
constexpr TextField kTail[] = {{"engine", &CacheIdentity::engine},
                               {"engine_version", &CacheIdentity::engine_version}};
struct NumberField {
  std::string_view name;
  uint32_t CacheIdentity::*field;
};
constexpr NumberField kNumbers[] = {{"block_tokens", &CacheIdentity::block_tokens},
                                    {"tp_rank", &CacheIdentity::tp_rank},
                                    {"tp_size", &CacheIdentity::tp_size}};

Status CheckText(std::string_view name, std::string_view value) {
  if (value.size() > CacheIdentity::kMaxFieldBytes) {
    return InvalidArgument("cache identity: " + std::string(name) + " is " + std::to_string(value.size()) +
                           " bytes; allowed: at most " + std::to_string(CacheIdentity::kMaxFieldBytes));
  }
  if (!IsValidUtf8(value)) {
    return InvalidArgument("cache identity: " + std::string(name) + " '" + PrintableUtf8(value) +
                           "' is not UTF-8; allowed: UTF-8 text");
  }
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f) {
      return InvalidArgument("cache identity: " + std::string(name) + " '" + PrintableUtf8(value) +
                             "' holds a control character; allowed: printable text");
    }
  }
  return Status::Ok();
}

bool IsExtraName(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

std::vector<std::pair<std::string, std::string>> SortedExtras(const CacheIdentity& id) {
  auto extras = id.extras;
  std::sort(extras.begin(), extras.end());
  return extras;
}

}  // namespace

bool CacheIdentity::empty() const { return *this == CacheIdentity(); }

Status CacheIdentity::Check() const {
  for (const TextField& f : kHead) MEMKV_RETURN_IF_ERROR(CheckText(f.name, this->*f.field));
  for (const TextField& f : kTail) MEMKV_RETURN_IF_ERROR(CheckText(f.name, this->*f.field));
  if (model.empty()) {
    return InvalidArgument("cache identity: model is empty; allowed: the model's name (identity_model), required "
                           "once any identity field is set");
  }
  if (tp_size == 0 || tp_rank >= tp_size) {
    return InvalidArgument("cache identity: tp_rank " + std::to_string(tp_rank) + " with tp_size " +
                           std::to_string(tp_size) + "; allowed: tp_size >= 1 and 0 <= tp_rank < tp_size");
  }
  if (extras.size() > kMaxExtras) {
    return InvalidArgument("cache identity: " + std::to_string(extras.size()) + " extras; allowed: at most " +
                           std::to_string(kMaxExtras));
  }
  std::set<std::string_view> names;
  for (const auto& [name, value] : extras) {
    if (!IsExtraName(name)) {
      return InvalidArgument("cache identity: extra '" + PrintableUtf8(name) +
                             "' is not a name; allowed: 1 to 64 of A-Z a-z 0-9 _ . -");
    }
    if (!names.insert(name).second) {
      return InvalidArgument("cache identity: extra '" + name + "' is given twice; allowed: each name once");
    }
    MEMKV_RETURN_IF_ERROR(CheckText("extra " + name, value));
  }
  return Status::Ok();
}

std::string CacheIdentity::Canonical() const {
  std::string out(kHeader);
  out += '\n';
  auto line = [&out](std::string_view name, std::string_view value) {
    out.append(name).append("=").append(value).append("\n");
  };
  for (const TextField& f : kHead) line(f.name, this->*f.field);
  for (const NumberField& f : kNumbers) line(f.name, std::to_string(this->*f.field));
  for (const TextField& f : kTail) line(f.name, this->*f.field);
  for (const auto& [name, value] : SortedExtras(*this)) line("extra." + name, value);
  return out;
}

std::string CacheIdentity::Tag() const {
  const std::string text = Canonical();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string tag;
  for (size_t i = 0; i < kTagChars / 2; ++i) {
    tag += kHex[digest[i] >> 4];
    tag += kHex[digest[i] & 15];
  }
  return tag;
}

Result<CacheIdentity> CacheIdentity::Parse(std::string_view canonical) {
  auto bad = [](const std::string& why) {
    return InvalidArgument("cache identity: " + why + "; allowed: the canonical text CacheIdentity::Canonical writes");
  };
  std::vector<std::string_view> lines;
  while (!canonical.empty()) {
    const size_t end = canonical.find('\n');
    if (end == std::string_view::npos) return bad("the last line does not end in a newline");
    lines.push_back(canonical.substr(0, end));
    canonical.remove_prefix(end + 1);
  }
  const size_t fixed = 1 + std::size(kHead) + std::size(kNumbers) + std::size(kTail);
  if (lines.size() < fixed || lines[0] != kHeader) return bad("it does not start with '" + std::string(kHeader) + "'");
  CacheIdentity id;
  size_t at = 1;
  auto value_of = [&](std::string_view name, std::string_view* value) -> Status {
    std::string_view l = lines[at++];
    if (!l.starts_with(name) || l.size() <= name.size() || l[name.size()] != '=') {
      return bad("line " + std::to_string(at) + " is not '" + std::string(name) + "=...'");
    }
    *value = l.substr(name.size() + 1);
    return Status::Ok();
  };
  std::string_view value;
  for (const TextField& f : kHead) {
    MEMKV_RETURN_IF_ERROR(value_of(f.name, &value));
    id.*f.field = std::string(value);
  }
  for (const NumberField& f : kNumbers) {
    MEMKV_RETURN_IF_ERROR(value_of(f.name, &value));
    std::optional<uint64_t> n = ParseDecimal(value);
    if (!n || *n > UINT32_MAX) return bad(std::string(f.name) + " '" + PrintableUtf8(value) + "' is not a number");
    id.*f.field = static_cast<uint32_t>(*n);
  }
  for (const TextField& f : kTail) {
    MEMKV_RETURN_IF_ERROR(value_of(f.name, &value));
    id.*f.field = std::string(value);
  }
  std::string previous;
  for (; at < lines.size(); ++at) {
    std::string_view l = lines[at];
    const size_t eq = l.find('=');
    if (!l.starts_with("extra.") || eq == std::string_view::npos) {
      return bad("line " + std::to_string(at + 1) + " is not 'extra.NAME=...'");
    }
    std::string name(l.substr(6, eq - 6));
    if (!previous.empty() && name <= previous) return bad("the extras are not sorted by name");
    previous = name;
    id.extras.emplace_back(std::move(name), std::string(l.substr(eq + 1)));
  }
  MEMKV_RETURN_IF_ERROR(id.Check());
  return id;
}

}  // namespace memkv

// ---- IdentitySelector (base/identity_selector.h) ----

namespace memkv {
namespace {

constexpr std::string_view kSelectorAllowed =
    "a tag of 16 hex digits, or field=value pairs separated by commas; fields: model, revision, kv_dtype, layout, "
    "block_tokens, tp_rank, tp_size, engine, engine_version, extra.NAME";

// The field's value in `id` as text; false for an unknown field name.
bool FieldText(const CacheIdentity& id, std::string_view field, std::string* out) {
  for (const TextField& f : kHead) {
    if (f.name == field) return *out = id.*f.field, true;
  }
  for (const TextField& f : kTail) {
    if (f.name == field) return *out = id.*f.field, true;
  }
  for (const NumberField& f : kNumbers) {
    if (f.name == field) return *out = std::to_string(id.*f.field), true;
  }
  if (field.starts_with("extra.")) {
    out->clear();
    for (const auto& [name, value] : id.extras) {
      if (name == field.substr(6)) *out = value;
    }
    return true;
  }
  return false;
}

}  // namespace

bool IsIdentityTag(std::string_view tag) {
  return tag.size() == CacheIdentity::kTagChars &&
         std::all_of(tag.begin(), tag.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Result<IdentitySelector> IdentitySelector::Parse(std::string_view text) {
  IdentitySelector selector;
  selector.text_ = std::string(text);
  if (IsIdentityTag(text)) {
    selector.tag_ = std::string(text);
    return selector;
  }
  auto bad = [&](const std::string& why) {
    return InvalidArgument("'" + PrintableUtf8(text) + "': " + why + "; allowed: " + std::string(kSelectorAllowed));
  };
  if (text.empty()) return bad("empty");
  CacheIdentity probe;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view pair = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos) return bad("'" + std::string(pair) + "' is not field=value");
    std::string field(pair.substr(0, eq));
    std::string ignored;
    if (!FieldText(probe, field, &ignored) || field == "extra.") return bad("'" + field + "' is not a field");
    selector.fields_.emplace_back(std::move(field), std::string(pair.substr(eq + 1)));
  }
  return selector;
}

bool IdentitySelector::Matches(const CacheIdentity& identity, std::string_view tag) const {
  if (!tag_.empty()) return tag == tag_;
  std::string value;
  for (const auto& [field, wanted] : fields_) {
    if (!FieldText(identity, field, &value) || value != wanted) return false;
  }
  return true;
}

}  // namespace memkv
