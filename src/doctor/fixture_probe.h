// FixtureProbe: HostProbe over a recorded host, for tests and for
// `memkv doctor --fixture DIR` (docs/doctor.md, "Fixtures"). Layout of DIR:
//
//   sys/..., proc/...        sysfs and procfs files as the kernel shows them:
//                            /sys/class/infiniband/<dev>/ports/<p>/{state,
//                            link_layer,gids/N,gid_attrs/{types,ndevs}/N,
//                            hw_counters/*}, /sys/class/net/<if>/{mtu,
//                            ecn/roce_{np,rp}/enable/<prio>,qos/trust},
//                            /sys/kernel/mm/..., /proc/meminfo,
//                            /proc/self/{limits,status}, /proc/sys/kernel/hostname
//   verbs/<dev>/<port>       what only verbs reports, "key value" lines:
//                            active_mtu, max_mtu (bytes), max_mr_size
//   dcb/<if>.hex             the kernel's reply to RTM_GETDCB/DCB_CMD_IEEE_GET
//                            (or its NLMSG_ERROR) in hex, '#' comments allowed;
//                            parsed by verbs::ParseDcbReply. Absent: unreadable.
//   ethtool/<if>.txt         `ethtool -S <if>` output
//   after/, after2/, ...     later counter snapshots: the k-th ReadCounters
//                            call reads hw_counters files and ethtool/<if>.txt
//                            from after<k> (after1 is spelled after/), falling
//                            back to earlier snapshots for files not there
//   etc/memkv/config.yaml    optional: the MemKV config of that host (the
//                            CLI's default config under --fixture)
//
// Wait() does not sleep; it adds to waited_ms().
#ifndef MEMKV_DOCTOR_FIXTURE_PROBE_H_
#define MEMKV_DOCTOR_FIXTURE_PROBE_H_

#include <string>

#include "doctor/probe.h"
#include "doctor/sysfs.h"

namespace memkv::doctor {

class FixtureProbe final : public HostProbe {
 public:
  explicit FixtureProbe(std::string dir);

  Result<std::vector<std::string>> Devices() override;
  Result<verbs::PortInfo> Port(const std::string& device, uint8_t port) override;
  Result<verbs::DcbConfig> Dcb(const std::string& netdev) override;
  Result<std::string> ReadFile(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& path) override;
  Result<MemlockLimit> Memlock() override;
  CounterSnapshot ReadCounters(const std::string& device, uint8_t port, const std::string& netdev) override;
  void Wait(uint32_t ms) override { waited_ms_ += ms; }

  uint64_t waited_ms() const { return waited_ms_; }
  int counter_reads() const { return counter_reads_; }

 private:
  // Snapshot `k`'s directory ("" for the base, "/after", "/after2", ...).
  static std::string SnapshotDir(int k);
  // `path` as of snapshot `k`: from the latest snapshot <= k holding it.
  Result<std::string> ReadAt(int k, const std::string& path) const;

  FsView fs_;
  uint64_t waited_ms_ = 0;
  int counter_reads_ = 0;
};

}  // namespace memkv::doctor

#endif  // MEMKV_DOCTOR_FIXTURE_PROBE_H_
