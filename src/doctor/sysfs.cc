#include "doctor/sysfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/errno_text.h"
#include "base/parse_number.h"
#include "base/unique_fd.h"

namespace memkv::doctor {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::string PortDir(const std::string& device, uint8_t port) {
  return "/sys/class/infiniband/" + device + "/ports/" + std::to_string(port);
}

}  // namespace

FsView::FsView(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (root_.empty()) root_ = "/";
}

std::string FsView::Resolve(const std::string& path) const { return root_ == "/" ? path : root_ + path; }

Result<std::string> FsView::ReadFile(const std::string& path) const {
  const std::string full = Resolve(path);
  UniqueFd fd(::open(full.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) return NotFound(path + " does not exist");
    return IoError("open(" + path + "): " + ErrnoText(err));
  }
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("read(" + path + "): " + ErrnoText(errno));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (16u << 20)) return IoError("read(" + path + "): larger than 16 MiB");
  }
  return text;
}

Result<std::vector<std::string>> FsView::ListDir(const std::string& path) const {
  std::error_code ec;
  std::filesystem::directory_iterator it(Resolve(path), ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) {
      return NotFound(path + " does not exist");
    }
    return IoError("opendir(" + path + "): " + ec.message());
  }
  std::vector<std::string> names;
  for (const auto& entry : it) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool FsView::Exists(const std::string& path) const {
  std::error_code ec;
  return std::filesystem::exists(Resolve(path), ec);
}

std::string FirstLine(std::string_view text) {
  size_t nl = text.find('\n');
  return std::string(Trim(text.substr(0, nl)));
}

std::optional<uint64_t> ParseUint(std::string_view text) {
  text = Trim(text);
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) return ParseHex(text.substr(2));
  return ParseDecimal(text);
}

Result<std::map<std::string, uint64_t>> ReadHwCounters(const FsView& fs, const std::string& device, uint8_t port) {
  const std::string dir = PortDir(device, port) + "/hw_counters";
  MEMKV_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.ListDir(dir));
  std::map<std::string, uint64_t> out;
  for (const std::string& name : names) {
    Result<std::string> text = fs.ReadFile(dir + "/" + name);
    if (!text.ok()) continue;  // a counter the driver refuses to read is no evidence either way
    if (auto v = ParseUint(*text)) out[name] = *v;
  }
  return out;
}

std::map<std::string, uint64_t> ParseEthtoolText(std::string_view text) {
  std::map<std::string, uint64_t> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    size_t colon = line.rfind(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = Trim(line.substr(0, colon));
    std::optional<uint64_t> v = ParseUint(line.substr(colon + 1));
    if (name.empty() || !v) continue;
    out[std::string(name)] = *v;
  }
  return out;
}

std::optional<verbs::Gid> ParseGid(std::string_view text) {
  text = Trim(text);
  verbs::Gid gid{};
  size_t byte = 0;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == ':') {
      ++i;
      continue;
    }
    if (byte >= gid.size() || i + 4 > text.size()) return std::nullopt;
    std::optional<uint64_t> group = ParseUint("0x" + std::string(text.substr(i, 4)));
    if (!group) return std::nullopt;
    gid[byte++] = static_cast<uint8_t>(*group >> 8);
    gid[byte++] = static_cast<uint8_t>(*group & 0xff);
    i += 4;
  }
  if (byte != gid.size()) return std::nullopt;
  return gid;
}

Result<verbs::PortInfo> PortFromSysfs(const FsView& fs, const std::string& device, uint8_t port) {
  const std::string dir = PortDir(device, port);
  Result<std::string> state = fs.ReadFile(dir + "/state");
  if (!state.ok()) {
    if (state.status().code() == StatusCode::kNotFound) {
      return NotFound("port " + std::to_string(port) + " of " + device + " does not exist (" + dir + ")");
    }
    return state.status();
  }
  verbs::PortInfo info;
  info.device = device;
  info.port_num = port;
  // "4: ACTIVE"
  std::string line = FirstLine(*state);
  size_t colon = line.find(':');
  info.state = std::string(Trim(colon == std::string::npos ? line : line.substr(colon + 1)));
  info.active = info.state == "ACTIVE";
  Result<std::string> link = fs.ReadFile(dir + "/link_layer");
  info.ethernet = !link.ok() || FirstLine(*link) != "InfiniBand";

  Result<std::vector<std::string>> gids = fs.ListDir(dir + "/gids");
  std::vector<std::pair<uint32_t, std::string>> indices;
  if (gids.ok()) {
    for (const std::string& name : *gids) {
      if (auto i = ParseUint(name); i && *i < 65536) indices.emplace_back(static_cast<uint32_t>(*i), name);
    }
  }
  std::sort(indices.begin(), indices.end());
  for (const auto& [index, name] : indices) {
    Result<std::string> text = fs.ReadFile(dir + "/gids/" + name);
    if (!text.ok()) continue;
    std::optional<verbs::Gid> gid = ParseGid(*text);
    if (!gid || std::all_of(gid->begin(), gid->end(), [](uint8_t b) { return b == 0; })) continue;
    Result<std::string> type = fs.ReadFile(dir + "/gid_attrs/types/" + name);
    if (!type.ok()) continue;  // sysfs answers EINVAL for an unused slot
    verbs::GidEntry e;
    e.index = index;
    e.gid = *gid;
    std::string t = FirstLine(*type);
    if (t == "RoCE v2") {
      e.type = verbs::GidType::kRoceV2;
    } else if (t == "IB/RoCE v1" || t == "RoCE v1") {
      e.type = info.ethernet ? verbs::GidType::kRoceV1 : verbs::GidType::kIb;
    } else {
      continue;
    }
    if (Result<std::string> nd = fs.ReadFile(dir + "/gid_attrs/ndevs/" + name); nd.ok()) e.netdev = FirstLine(*nd);
    if (info.netdev.empty() && !e.netdev.empty()) info.netdev = e.netdev;
    info.gids.push_back(std::move(e));
  }
  if (info.netdev.empty()) {
    if (Result<std::string> nd = fs.ReadFile(dir + "/gid_attrs/ndevs/0"); nd.ok()) info.netdev = FirstLine(*nd);
  }
  return info;
}

bool HasCapIpcLock(std::string_view status) {
  constexpr uint64_t kCapIpcLock = 14;
  while (!status.empty()) {
    size_t nl = status.find('\n');
    std::string_view line = status.substr(0, nl);
    status = nl == std::string_view::npos ? std::string_view() : status.substr(nl + 1);
    if (line.rfind("CapEff:", 0) != 0) continue;
    std::optional<uint64_t> caps = ParseUint("0x" + std::string(Trim(line.substr(7))));
    return caps && (*caps & (uint64_t{1} << kCapIpcLock)) != 0;
  }
  return false;
}

Result<MemlockLimit> ParseMemlock(std::string_view limits, std::string_view status) {
  constexpr std::string_view kLabel = "Max locked memory";
  while (!limits.empty()) {
    size_t nl = limits.find('\n');
    std::string_view line = limits.substr(0, nl);
    limits = nl == std::string_view::npos ? std::string_view() : limits.substr(nl + 1);
    if (line.rfind(kLabel, 0) != 0) continue;
    std::vector<std::string_view> f = Fields(line.substr(kLabel.size()));
    if (f.empty()) break;
    MemlockLimit m;
    m.cap_ipc_lock = HasCapIpcLock(status);
    if (f[0] == "unlimited") {
      m.unlimited = true;
    } else if (auto v = ParseUint(f[0])) {
      m.soft_bytes = *v;
    } else {
      break;
    }
    return m;
  }
  return ProtocolError("no \"Max locked memory\" line in the limits file");
}

}  // namespace memkv::doctor
