#include "bench/flags.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace memkv::bench {

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool ParseCount(std::string_view flag, const std::string& text, uint32_t max, std::string_view what, uint32_t* out,
                std::string* error) {
  uint32_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || ptr != text.data() + text.size() || n == 0 || n > max) {
    *error = std::string(flag) + ": '" + text + "' is not a " + std::string(what) + " between 1 and " +
             std::to_string(max);
    return false;
  }
  *out = n;
  return true;
}

bool ParseSeconds(std::string_view flag, const std::string& text, double max, double* out, std::string* error) {
  char* end = nullptr;
  const double s = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(s) || s <= 0 || s > max) {
    char range[32];
    std::snprintf(range, sizeof(range), "(0, %g]", max);
    *error = std::string(flag) + ": '" + text + "' is not a number of seconds in " + range;
    return false;
  }
  *out = s;
  return true;
}

bool ParseCountList(std::string_view flag, const std::string& text, uint32_t max, std::string_view what,
                    std::vector<uint32_t>* out, std::string* error) {
  out->clear();
  for (const std::string& item : SplitComma(text)) {
    uint32_t n = 0;
    if (!ParseCount(flag, item, max, what, &n, error)) return false;
    out->push_back(n);
  }
  if (out->empty()) *error = std::string(flag) + ": empty list";
  return !out->empty();
}

bool ParseOpList(const std::string& text, bool* put, bool* get, std::string* error) {
  *put = *get = false;
  for (const std::string& item : SplitComma(text)) {
    if (item == "put") {
      *put = true;
    } else if (item == "get") {
      *get = true;
    } else {
      *error = "--ops: '" + item + "' is not put or get";
      return false;
    }
  }
  if (!*put && !*get) *error = "--ops: empty list";
  return *put || *get;
}

bool WalkFlags(const std::vector<std::string>& args, const std::function<bool(const std::string&)>& toggle,
               const std::function<bool(std::string_view)>& is_known,
               const std::function<bool(const std::string&, const std::string&, std::string*)>& apply, bool* help,
               std::string* error) {
  *help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    if (flag == "--help" || flag == "-h") {
      *help = true;
      return true;
    }
    if (toggle(flag)) continue;
    if (size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      *error = is_known(flag) ? flag + " needs a value" : "unknown option '" + flag + "'";
      return false;
    }
    if (!apply(flag, value, error)) return false;
  }
  return true;
}

void WalkFlagsOrExit(const char* program, const char* usage, const std::vector<std::string>& args,
                     const std::function<bool(std::string_view)>& is_known,
                     const std::function<bool(const std::string&, const std::string&, std::string*)>& apply) {
  bool help = false;
  std::string error;
  if (!WalkFlags(args, [](const std::string&) { return false; }, is_known, apply, &help, &error)) {
    std::fprintf(stderr, "%s: %s\n%s", program, error.c_str(), usage);
    std::exit(2);
  }
  if (help) {
    std::fputs(usage, stdout);
    std::exit(0);
  }
}

}  // namespace memkv::bench
