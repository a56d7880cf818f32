#include "doctor/system_probe.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/errno_text.h"
#include "base/unique_fd.h"

namespace memkv::doctor {
namespace {

// ioctl buffers with a flexible array at the end: 8-byte aligned storage.
class IoctlBuffer {
 public:
  explicit IoctlBuffer(size_t bytes) : words_((bytes + 7) / 8, 0) {}
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(words_.data());
  }
  uint8_t* bytes() { return reinterpret_cast<uint8_t*>(words_.data()); }

 private:
  std::vector<uint64_t> words_;
};

Status Ethtool(int fd, const std::string& netdev, void* data, const char* step) {
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, netdev.data(), netdev.size());
  ifr.ifr_data = static_cast<char*>(data);
  if (::ioctl(fd, SIOCETHTOOL, &ifr) != 0) {
    return Unavailable("ethtool statistics of " + netdev + ": SIOCETHTOOL(" + step + "): " + ErrnoText(errno));
  }
  return Status::Ok();
}

}  // namespace

Result<std::map<std::string, uint64_t>> EthtoolStats(const std::string& netdev) {
  if (netdev.empty() || netdev.size() >= IFNAMSIZ) {
    return Unavailable("ethtool statistics: '" + netdev + "' is not a netdev name");
  }
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Unavailable("ethtool statistics of " + netdev + ": socket: " + ErrnoText(errno));

  IoctlBuffer sset(sizeof(ethtool_sset_info) + sizeof(uint32_t));
  sset.as<ethtool_sset_info>()->cmd = ETHTOOL_GSSET_INFO;
  sset.as<ethtool_sset_info>()->sset_mask = uint64_t{1} << ETH_SS_STATS;
  MEMKV_RETURN_IF_ERROR(Ethtool(fd.get(), netdev, sset.bytes(), "ETHTOOL_GSSET_INFO"));
  uint32_t count = 0;
  if (sset.as<ethtool_sset_info>()->sset_mask != 0) {
    std::memcpy(&count, sset.bytes() + sizeof(ethtool_sset_info), sizeof(count));
  }
  std::map<std::string, uint64_t> out;
  if (count == 0) return out;
  if (count > 65536) return Unavailable("ethtool statistics of " + netdev + ": " + std::to_string(count) + " statistics?");

  IoctlBuffer strings(sizeof(ethtool_gstrings) + size_t{count} * ETH_GSTRING_LEN);
  strings.as<ethtool_gstrings>()->cmd = ETHTOOL_GSTRINGS;
  strings.as<ethtool_gstrings>()->string_set = ETH_SS_STATS;
  strings.as<ethtool_gstrings>()->len = count;
  MEMKV_RETURN_IF_ERROR(Ethtool(fd.get(), netdev, strings.bytes(), "ETHTOOL_GSTRINGS"));

  IoctlBuffer stats(sizeof(ethtool_stats) + size_t{count} * sizeof(uint64_t));
  stats.as<ethtool_stats>()->cmd = ETHTOOL_GSTATS;
  stats.as<ethtool_stats>()->n_stats = count;
  MEMKV_RETURN_IF_ERROR(Ethtool(fd.get(), netdev, stats.bytes(), "ETHTOOL_GSTATS"));

  // The kernel may shrink the counts if the set changed in between.
  uint32_t n = std::min(strings.as<ethtool_gstrings>()->len, stats.as<ethtool_stats>()->n_stats);
  n = std::min(n, count);
  const uint8_t* names = strings.bytes() + sizeof(ethtool_gstrings);
  const uint8_t* values = stats.bytes() + sizeof(ethtool_stats);
  for (uint32_t i = 0; i < n; ++i) {
    const char* name = reinterpret_cast<const char*>(names + size_t{i} * ETH_GSTRING_LEN);
    uint64_t v = 0;
    std::memcpy(&v, values + size_t{i} * sizeof(uint64_t), sizeof(v));
    out[std::string(name, strnlen(name, ETH_GSTRING_LEN))] = v;
  }
  return out;
}

SystemProbe::SystemProbe(verbs::Provider& provider) : provider_(provider), fs_("/") {}

Result<std::vector<std::string>> SystemProbe::Devices() { return provider_.Devices(); }

Result<verbs::PortInfo> SystemProbe::Port(const std::string& device, uint8_t port) {
  MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<verbs::Context> context, provider_.Open(device, port));
  return context->port();
}

Result<verbs::DcbConfig> SystemProbe::Dcb(const std::string& netdev) { return verbs::ReadDcb(netdev); }

Result<std::string> SystemProbe::ReadFile(const std::string& path) { return fs_.ReadFile(path); }

Result<std::vector<std::string>> SystemProbe::ListDir(const std::string& path) { return fs_.ListDir(path); }

Result<MemlockLimit> SystemProbe::Memlock() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_MEMLOCK, &lim) != 0) return Internal("getrlimit(RLIMIT_MEMLOCK): " + ErrnoText(errno));
  MemlockLimit m;
  m.unlimited = lim.rlim_cur == RLIM_INFINITY;
  m.soft_bytes = m.unlimited ? 0 : static_cast<uint64_t>(lim.rlim_cur);
  Result<std::string> status = fs_.ReadFile("/proc/self/status");
  m.cap_ipc_lock = status.ok() && HasCapIpcLock(*status);
  return m;
}

CounterSnapshot SystemProbe::ReadCounters(const std::string& device, uint8_t port, const std::string& netdev) {
  CounterSnapshot snap;
  Result<std::map<std::string, uint64_t>> hw = ReadHwCounters(fs_, device, port);
  if (hw.ok()) {
    snap.hw = std::move(hw).value();
  } else {
    snap.hw_status = hw.status();
  }
  Result<std::map<std::string, uint64_t>> eth = EthtoolStats(netdev);
  if (eth.ok()) {
    snap.ethtool = std::move(eth).value();
  } else {
    snap.ethtool_status = eth.status();
  }
  return snap;
}

void SystemProbe::Wait(uint32_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace memkv::doctor
