// SystemProbe: HostProbe over the live host. sysfs and procfs under "/",
// libibverbs (verbs::SystemProvider) for what only verbs reports, dcbnl over
// rtnetlink (verbs::ReadDcb), ethtool statistics by the SIOCETHTOOL ioctl,
// getrlimit for the memlock limit. Needs no privileges: everything it does is
// a read that `ibv_devinfo`, `ethtool -S` and `dcb app show` also do.
#ifndef MEMKV_DOCTOR_SYSTEM_PROBE_H_
#define MEMKV_DOCTOR_SYSTEM_PROBE_H_

#include <map>
#include <string>

#include "doctor/probe.h"
#include "doctor/sysfs.h"

namespace memkv::doctor {

class SystemProbe final : public HostProbe {
 public:
  explicit SystemProbe(verbs::Provider& provider);

  Result<std::vector<std::string>> Devices() override;
  Result<verbs::PortInfo> Port(const std::string& device, uint8_t port) override;
  Result<verbs::DcbConfig> Dcb(const std::string& netdev) override;
  Result<std::string> ReadFile(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& path) override;
  Result<MemlockLimit> Memlock() override;
  CounterSnapshot ReadCounters(const std::string& device, uint8_t port, const std::string& netdev) override;
  void Wait(uint32_t ms) override;

 private:
  verbs::Provider& provider_;
  FsView fs_;
};

// `ethtool -S <netdev>` by ioctl: ETHTOOL_GSSET_INFO for the count, then
// ETHTOOL_GSTRINGS (ETH_SS_STATS) and ETHTOOL_GSTATS. Unavailable naming the
// netdev, the step and errno (EOPNOTSUPP for a netdev without statistics).
Result<std::map<std::string, uint64_t>> EthtoolStats(const std::string& netdev);

}  // namespace memkv::doctor

#endif  // MEMKV_DOCTOR_SYSTEM_PROBE_H_
