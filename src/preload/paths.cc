#include "preload/paths.h"

namespace memkv::preload {

std::string NormalizePath(std::string_view path, std::string_view base) {
  std::vector<std::string_view> parts;
  auto add_components = [&parts](std::string_view text) {
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t end = text.find('/', pos);
      if (end == std::string_view::npos) end = text.size();
      std::string_view part = text.substr(pos, end - pos);
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
      } else if (!part.empty() && part != ".") {
        parts.push_back(part);
      }
      pos = end + 1;
    }
  };
  if (path.empty() || path[0] != '/') add_components(base);
  add_components(path);
  std::string out;
  for (std::string_view part : parts) {
    out += '/';
    out += part;
  }
  return out.empty() ? std::string("/") : out;
}

Prefixes Prefixes::Parse(std::string_view spec, std::vector<std::string>* rejected) {
  Prefixes result;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t end = spec.find(':', pos);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view entry = spec.substr(pos, end - pos);
    pos = end + 1;
    if (entry.empty()) continue;
    std::string normalized = NormalizePath(entry, "/");
    if (entry[0] != '/' || normalized == "/") {
      if (rejected != nullptr) rejected->emplace_back(entry);
      continue;
    }
    result.prefixes_.push_back(std::move(normalized));
  }
  return result;
}

bool Prefixes::Match(std::string_view normalized, std::string* key, size_t* index) const {
  for (size_t i = 0; i < prefixes_.size(); ++i) {
    const std::string& prefix = prefixes_[i];
    if (index != nullptr) *index = i;
    if (normalized.size() < prefix.size() || normalized.compare(0, prefix.size(), prefix) != 0) continue;
    if (normalized.size() == prefix.size()) {
      key->clear();
      return true;
    }
    if (normalized[prefix.size()] == '/') {
      key->assign(normalized.substr(prefix.size() + 1));
      return true;
    }
  }
  return false;
}

}  // namespace memkv::preload
