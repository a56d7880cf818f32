#include "base/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/errno_text.h"
#include "base/unique_fd.h"

namespace memkv {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Result<std::string> ReadSecretFile(const std::string& path, std::string_view what, size_t max_bytes,
                                   std::string_view content) {
  const uid_t uid = ::geteuid();
  const std::string allowed = "allowed: a regular file of " + std::string(content) +
                              ", mode 0600 or 0400, owned by the server's user (uid " + std::to_string(uid) + ")";
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat refuses it next.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return InvalidArgument(std::string(what) + ": cannot open it (" + ErrnoText(errno) + "); " + allowed);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) {
    return IoError(std::string(what) + ": fstat: " + ErrnoText(errno));
  }
  if (!S_ISREG(st.st_mode)) return InvalidArgument(std::string(what) + " is " + KindOf(st.st_mode) + "; " + allowed);
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return FailedPrecondition(std::string(what) + " has mode " + mode + ", readable by group or others; " + allowed +
                              " (run: chmod 600 " + path + ")");
  }
  if (st.st_uid != uid) {
    return FailedPrecondition(std::string(what) + " is owned by uid " + std::to_string(st.st_uid) +
                              ", not the server's user; " + allowed);
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return InvalidArgument(std::string(what) + " is " + std::to_string(st.st_size) + " bytes; " + allowed);
  }
  // Read one byte past the bound, so a file that grew since fstat is refused too.
  std::string text(max_bytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(std::string(what) + ": read: " + ErrnoText(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > max_bytes) {
    return InvalidArgument(std::string(what) + " is more than " + std::to_string(max_bytes) + " bytes; " + allowed);
  }
  text.resize(got);
  return text;
}

}  // namespace memkv
