#include "cli/cli.h"

namespace memkv::cli {

std::optional<std::string> Environment::Get(std::string_view name) const {
  for (const auto& [k, v] : vars) {
    if (k == name) return v;
  }
  return std::nullopt;
}

std::string DefaultDataDir(const Environment& env) {
  if (auto home = env.Get("HOME"); home && !home->empty()) return *home + "/.memkv";
  return "memkv-data";
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kNotFound: return kExitNotFound;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded: return kExitUnavailable;
    case StatusCode::kAuthFailed: return kExitAuth;
    default: return kExitFailed;
  }
}

}  // namespace memkv::cli
