#include "server/key_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "base/bytes.h"
#include "base/errno_text.h"
#include "base/hmac.h"
#include "base/secret_file.h"
#include "base/unique_fd.h"

namespace memkv::server {
namespace {

std::string Errno() { return ErrnoMessage(errno); }

Status MakeDirs(const std::string& dir) {
  std::string partial;
  std::stringstream parts(dir);
  std::string part;
  if (!dir.empty() && dir[0] == '/') partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    partial += part;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      return IoError("cannot create data directory " + partial + ": " + Errno());
    }
    partial += "/";
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<uint8_t>> ReadAuthKeyFile(const std::string& path) {
  MEMKV_ASSIGN_OR_RETURN(std::string text,
                         ReadSecretFile(path, "auth key file " + path, 4096, "64 hex characters (a 32-byte key)"));
  std::istringstream in(text);
  std::string hex;
  in >> hex;
  auto key = HexDecode(hex);
  if (!key || key->size() != 32) {
    return InvalidArgument("auth key file " + path +
                           " must hold 64 hex characters (a 32-byte key); delete it to generate a new one");
  }
  return *key;
}

Result<AuthKeyFile> LoadOrCreateAuthKey(const std::string& data_dir) {
  MEMKV_RETURN_IF_ERROR(MakeDirs(data_dir));
  AuthKeyFile out;
  out.path = data_dir + "/auth.key";
  struct stat st{};
  if (::stat(out.path.c_str(), &st) == 0) {
    MEMKV_ASSIGN_OR_RETURN(out.key, ReadAuthKeyFile(out.path));
    return out;
  }
  out.key.resize(32);
  MEMKV_RETURN_IF_ERROR(RandomBytes(out.key.data(), out.key.size()));
  std::string text = HexEncode(out.key.data(), out.key.size()) + "\n";
  // Write to a temporary name and rename, so a crash never leaves half a key.
  std::string tmp = out.path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) return IoError("cannot create " + tmp + ": " + Errno());
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) || ::fsync(fd.get()) != 0) {
    return IoError("cannot write " + tmp + ": " + Errno());
  }
  fd.Reset();
  if (::rename(tmp.c_str(), out.path.c_str()) != 0) return IoError("cannot rename " + tmp + ": " + Errno());
  out.created = true;
  return out;
}

}  // namespace memkv::server
