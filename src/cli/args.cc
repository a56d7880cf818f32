#include "cli/args.h"

#include <algorithm>

namespace memkv::cli {
namespace {

bool In(std::initializer_list<std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// "--data-dir needs a value; '--check' looks like an option (if it is the
// value, write --data-dir=--check)".
std::string NeedsValue(const std::string& name, const std::string* next) {
  std::string m = name + " needs a value";
  if (next == nullptr) return m;
  m += "; '" + *next + "' looks like an option";
  m += name.rfind("--", 0) == 0 ? " (if it is the value, write " + name + "=" + *next + ")"
                                 : " (a value that begins with '-' goes after the long option and '=')";
  return m;
}

}  // namespace

bool LooksLikeOption(std::string_view word) {
  if (word.size() < 2 || word[0] != '-') return false;
  return !std::all_of(word.begin() + 1, word.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Result<std::vector<std::string>> ExpandOptions(const std::vector<std::string>& args, const OptionTable& table) {
  std::vector<std::string> out;
  out.reserve(args.size() + 4);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == kEndOfOptions) {
      out.insert(out.end(), args.begin() + static_cast<long>(i), args.end());
      break;
    }
    if (!LooksLikeOption(a)) {
      out.push_back(a);
      continue;
    }
    const size_t eq = a.rfind("--", 0) == 0 ? a.find('=') : std::string::npos;
    const std::string name = a.substr(0, eq);
    const bool is_switch = IsHelp(name) || In(table.switches, name);
    const bool is_list = In(table.lists, name);
    if (!is_switch && !is_list && !In(table.valued, name) && !In(table.hidden, name)) {
      std::string m = "unknown option '" + name + "'";
      if (!table.operand.empty()) {
        m += " (a " + std::string(table.operand) + " that begins with '-' goes after '--')";
      }
      return InvalidArgument(m);
    }
    out.push_back(name);
    if (eq != std::string::npos) {
      if (is_switch) return InvalidArgument(name + " takes no value (got '" + a + "')");
      out.push_back(a.substr(eq + 1));
      continue;
    }
    if (is_switch) continue;
    const std::string* next = i + 1 < args.size() ? &args[i + 1] : nullptr;
    if (next == nullptr || LooksLikeOption(*next)) return InvalidArgument(NeedsValue(name, next));
    if (!is_list) out.push_back(args[++i]);
  }
  return out;
}

bool IsHelp(std::string_view arg) { return arg == "-h" || arg == "--help"; }

}  // namespace memkv::cli
