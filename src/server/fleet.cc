#include "server/fleet.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include "base/errno_text.h"
#include "base/units.h"
#include "base/unique_fd.h"
#include "drive/format.h"

namespace memkv::server {
namespace {

bool IsServerId(std::string_view id) {
  return !id.empty() && id.size() <= proto::kMaxServerIdBytes && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

Status WriteIdFile(const std::string& path, const std::string& id) {
  // A temporary name and a rename, so a crash never leaves half an id.
  const std::string tmp = path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return IoError("cannot create " + tmp + ": " + ErrnoMessage(errno));
  const std::string text = id + "\n";
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) || ::fsync(fd.get()) != 0) {
    return IoError("cannot write " + tmp + ": " + ErrnoMessage(errno));
  }
  fd.Reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) return IoError("cannot rename " + tmp + ": " + ErrnoMessage(errno));
  return Status::Ok();
}

}  // namespace

Result<std::string> MemoryModeServerId(const config::FleetConfig& fleet, const std::string& data_dir,
                                       std::string* source) {
  if (!fleet.id.empty()) {
    *source = "fleet.id";
    return fleet.id;
  }
  if (data_dir.empty()) {
    *source = "made at start: it changes at every restart; set fleet.id, or give the server a data directory, to keep one";
    return drive::Uuid::Random().ToString();
  }
  const std::string path = data_dir + "/server-id";
  *source = path;
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0) {
    std::ifstream in(path);
    std::string id;
    if (!in || !(in >> id)) return IoError("cannot read the server id file " + path + ": " + ErrnoMessage(errno));
    if (!IsServerId(id)) {
      return InvalidArgument("the server id file " + path + " holds '" + id.substr(0, 80) +
                             "', not a server id (1..64 characters of A-Z a-z 0-9 . _ -); fix it, or delete it to "
                             "make a new id (clients then place this server's keys anew)");
    }
    return id;
  }
  if (::mkdir(data_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return IoError("cannot create data directory " + data_dir + ": " + ErrnoMessage(errno));
  }
  std::string id = drive::Uuid::Random().ToString();
  MEMKV_RETURN_IF_ERROR(WriteIdFile(path, id));
  *source = path + " (made now)";
  return id;
}

FleetState::FleetState(FleetIdentity identity, uint64_t busy_queue_bytes)
    : identity_(std::move(identity)), busy_queue_bytes_(busy_queue_bytes) {}

Status FleetState::AdmitPut() {
  if (draining()) {
    shed_draining_.fetch_add(1, std::memory_order_relaxed);
    return Draining("server " + identity_.id + " at " + address_ +
                    " is draining and takes no new keys; place the key on the next server");
  }
  if (busy()) {
    shed_busy_.fetch_add(1, std::memory_order_relaxed);
    return Busy("server " + identity_.id + " at " + address_ + " is busy: " + FormatSize(queued_bytes()) +
                " of puts wait for the drives, at or above its bound of " + FormatSize(busy_queue_bytes_) +
                " (storage.busy_queue_size); skip the store or retry later");
  }
  return Status::Ok();
}

proto::ServerInfo FleetState::Info() const {
  proto::ServerInfo info;
  info.id = identity_.id;
  info.capacity_bytes = identity_.capacity_bytes;
  info.weight = identity_.weight;
  info.draining = draining();
  info.busy = busy();
  return info;
}

}  // namespace memkv::server
