#include "doctor/fixture_probe.h"

#include <algorithm>
#include <set>

#include "base/bytes.h"

namespace memkv::doctor {
namespace {

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Hex digits of a recorded reply; '#' starts a comment that runs to the end
// of the line.
std::string HexDigits(std::string_view text) {
  std::string hex;
  bool comment = false;
  for (char c : text) {
    if (c == '\n') comment = false;
    if (c == '#') comment = true;
    if (!comment && std::isxdigit(static_cast<unsigned char>(c))) hex += c;
  }
  return hex;
}

}  // namespace

FixtureProbe::FixtureProbe(std::string dir) : fs_(std::move(dir)) {}

std::string FixtureProbe::SnapshotDir(int k) {
  if (k == 0) return "";
  return k == 1 ? "/after" : "/after" + std::to_string(k);
}

Result<std::string> FixtureProbe::ReadAt(int k, const std::string& path) const {
  for (int j = k; j >= 0; --j) {
    Result<std::string> text = FsView(fs_.root() + SnapshotDir(j)).ReadFile(path);
    if (text.ok() || text.status().code() != StatusCode::kNotFound) return text;
  }
  return NotFound(path + " does not exist");
}

Result<std::vector<std::string>> FixtureProbe::Devices() {
  Result<std::vector<std::string>> names = fs_.ListDir("/sys/class/infiniband");
  if (!names.ok() && names.status().code() == StatusCode::kNotFound) return std::vector<std::string>{};
  return names;
}

Result<verbs::PortInfo> FixtureProbe::Port(const std::string& device, uint8_t port) {
  MEMKV_ASSIGN_OR_RETURN(std::vector<std::string> devices, Devices());
  if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
    return NotFound("RDMA device " + device + " not found; " +
                    (devices.empty() ? std::string("no RDMA devices present") : "present: " + Join(devices)));
  }
  MEMKV_ASSIGN_OR_RETURN(verbs::PortInfo info, PortFromSysfs(fs_, device, port));
  const std::string verbs_file = "/verbs/" + device + "/" + std::to_string(port);
  Result<std::string> text = fs_.ReadFile(verbs_file);
  if (!text.ok()) {
    return FailedPrecondition("fixture " + fs_.root() + " lacks " + verbs_file + " (active_mtu, max_mtu, max_mr_size)");
  }
  std::string_view rest = *text;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string line = FirstLine(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    size_t space = line.find(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos) continue;
    std::string key = line.substr(0, space);
    std::optional<uint64_t> v = ParseUint(line.substr(space + 1));
    if (!v) continue;
    if (key == "active_mtu") info.active_mtu = static_cast<uint32_t>(*v);
    if (key == "max_mtu") info.max_mtu = static_cast<uint32_t>(*v);
    if (key == "max_mr_size") info.max_mr_size = *v;
  }
  return info;
}

Result<verbs::DcbConfig> FixtureProbe::Dcb(const std::string& netdev) {
  const std::string prefix = "cannot read the DCB configuration of " + netdev + ": ";
  Result<std::string> text = fs_.ReadFile("/dcb/" + netdev + ".hex");
  if (!text.ok()) return Unavailable(prefix + "no dcbnl reply recorded (dcb/" + netdev + ".hex)");
  std::optional<std::vector<uint8_t>> bytes = HexDecode(HexDigits(*text));
  if (!bytes) return Unavailable(prefix + "dcb/" + netdev + ".hex is not hex");
  Result<verbs::DcbConfig> dcb = verbs::ParseDcbReply(*bytes);
  if (!dcb.ok()) return Unavailable(prefix + dcb.status().message());
  return dcb;
}

Result<std::string> FixtureProbe::ReadFile(const std::string& path) { return fs_.ReadFile(path); }

Result<std::vector<std::string>> FixtureProbe::ListDir(const std::string& path) { return fs_.ListDir(path); }

Result<MemlockLimit> FixtureProbe::Memlock() {
  MEMKV_ASSIGN_OR_RETURN(std::string limits, fs_.ReadFile("/proc/self/limits"));
  Result<std::string> status = fs_.ReadFile("/proc/self/status");
  return ParseMemlock(limits, status.ok() ? *status : std::string());
}

CounterSnapshot FixtureProbe::ReadCounters(const std::string& device, uint8_t port, const std::string& netdev) {
  const int k = counter_reads_++;
  CounterSnapshot snap;
  const std::string dir = "/sys/class/infiniband/" + device + "/ports/" + std::to_string(port) + "/hw_counters";
  std::set<std::string> names;
  bool any_dir = false;
  for (int j = 0; j <= k; ++j) {
    Result<std::vector<std::string>> listed = FsView(fs_.root() + SnapshotDir(j)).ListDir(dir);
    if (!listed.ok()) continue;
    any_dir = true;
    names.insert(listed->begin(), listed->end());
  }
  if (!any_dir) snap.hw_status = NotFound(dir + " does not exist");
  for (const std::string& name : names) {
    Result<std::string> text = ReadAt(k, dir + "/" + name);
    if (!text.ok()) continue;
    if (auto v = ParseUint(*text)) snap.hw[name] = *v;
  }
  Result<std::string> eth = ReadAt(k, "/ethtool/" + netdev + ".txt");
  if (eth.ok()) {
    snap.ethtool = ParseEthtoolText(*eth);
  } else {
    snap.ethtool_status = Unavailable("ethtool statistics of " + netdev + ": none recorded (ethtool/" + netdev + ".txt)");
  }
  return snap;
}

}  // namespace memkv::doctor
