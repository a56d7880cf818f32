#include "cli/args.h"

#include <algorithm>

namespace memkv::cli {

Result<std::vector<std::string>> ExpandOptions(const std::vector<std::string>& args,
                                               std::initializer_list<std::string_view> switches) {
  std::vector<std::string> out;
  out.reserve(args.size() + 4);
  bool options_done = false;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    if (options_done || a.rfind("--", 0) != 0 || a.size() <= 2 || eq == std::string::npos) {
      if (a == kEndOfOptions) options_done = true;
      out.push_back(a);
      continue;
    }
    const std::string name = a.substr(0, eq);
    if (name == "--help" || std::find(switches.begin(), switches.end(), name) != switches.end()) {
      return InvalidArgument(name + " takes no value (got '" + a + "')");
    }
    out.push_back(name);
    out.push_back(a.substr(eq + 1));
  }
  return out;
}

bool IsHelp(std::string_view arg) { return arg == "-h" || arg == "--help"; }

}  // namespace memkv::cli
