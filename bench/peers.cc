#include "bench/peers.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "bench/process.h"

namespace memkv::bench {

std::string InstallCommand(const PeerProgram& program) { return "apt-get install -y " + program.package; }

std::string FindPeer(const PeerProgram& program, const std::string& given, bool install,
                     const std::string& path_env, std::string* why) {
  if (!given.empty()) {
    if (::access(given.c_str(), X_OK) == 0) return given;
    *why = program.flag + " " + given + " is not executable";
    return "";
  }
  std::string found = FindOnPath(program.name, path_env);
  const std::string command = InstallCommand(program);
  if (found.empty() && install) {
    std::fprintf(stderr, "%s not found; running: %s\n", program.name.c_str(), command.c_str());
    std::fflush(stderr);
    const int rc = std::system((command + " 1>&2").c_str());  // the report on stdout stays clean
    if (rc != 0) std::fprintf(stderr, "warning: '%s' exited with status %d\n", command.c_str(), rc);
    found = FindOnPath(program.name, path_env);
  }
  if (found.empty()) {
    *why = program.name + " not found on PATH: install the package " + program.package + " (" + command +
           ") or pass --install-peers" + (program.flag.empty() ? "" : ", or " + program.flag + " PATH");
  }
  return found;
}

}  // namespace memkv::bench
