#include "bench/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
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

}  // namespace memkv::bench
