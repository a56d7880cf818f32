#include "bench/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "base/bytes.h"
#include "base/clock.h"
#include "base/unique_fd.h"

namespace memkv::bench {
namespace {

std::string ErrnoText(const std::string& call) { return call + ": " + std::strerror(errno); }

}  // namespace

Result<std::string> RandomAuthKeyHex() {
  UniqueFd fd(::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  uint8_t key[32];
  if (!fd.valid() || ::read(fd.get(), key, sizeof(key)) != ssize_t(sizeof(key))) {
    return Internal(ErrnoText("read(/dev/urandom, 32)"));
  }
  return HexEncode(key, sizeof(key));
}

Result<std::string> MakeTempDir(const std::string& base, const std::string& prefix) {
  std::string tmpl = base + "/" + prefix + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) return IoError(ErrnoText("mkdtemp(" + tmpl + ")"));
  return std::string(buf.data());
}

Result<pid_t> SpawnChild(const std::vector<std::string>& args, int stdout_fd, const std::string& log_path) {
  if (args.empty()) return InvalidArgument("SpawnChild: no program");
  std::vector<std::string> copies = args;
  std::vector<char*> argv;
  for (std::string& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  UniqueFd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!log.valid()) return IoError(ErrnoText("open(" + log_path + ")"));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Internal(ErrnoText("fork"));
  if (pid == 0) {  // only async-signal-safe calls from here on
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(stdout_fd >= 0 ? stdout_fd : log.get(), STDOUT_FILENO);
    ::dup2(log.get(), STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

int TerminateChild(pid_t pid, int grace_ms) {
  ::kill(pid, SIGTERM);
  const Nanos deadline = MonotonicNanos() + Nanos(grace_ms) * 1'000'000;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    if (MonotonicNanos() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // poll interval for the exit
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return 128 + SIGKILL;
}

std::string FindOnPath(const std::string& name, const std::string& path_env) {
  size_t start = 0;
  while (start <= path_env.size()) {
    size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    const std::string dir = path_env.substr(start, end - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

Result<uint64_t> ResidentBytes(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/status";
  std::ifstream in(path);
  if (!in) return NotFound("cannot read " + path);
  uint64_t total_kib = 0;
  bool found = false;
  for (std::string line; std::getline(in, line);) {
    for (const char* field : {"VmRSS:", "HugetlbPages:"}) {
      if (line.rfind(field, 0) != 0) continue;
      total_kib += std::strtoull(line.c_str() + std::strlen(field), nullptr, 10);  // "   1234 kB"
      found = true;
    }
  }
  if (!found) return NotFound(path + " has no VmRSS (a zombie?)");
  return total_kib * 1024;
}

}  // namespace memkv::bench
