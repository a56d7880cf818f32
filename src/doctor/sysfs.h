// Reading sysfs and procfs as the kernel lays them out, under a root: "/"
// for the live host, a fixture directory in tests. Shared by SystemProbe and
// FixtureProbe so both parse the very same files the same way.
//
// Pure functions over a FsView (read-only, no state beyond the root).
#ifndef MEMKV_DOCTOR_SYSFS_H_
#define MEMKV_DOCTOR_SYSFS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/probe.h"
#include "memkv/status.h"
#include "verbs/verbs.h"

namespace memkv::doctor {

class FsView {
 public:
  // `root` "/" or a directory; paths given to the methods are absolute as on
  // the host and resolved under it.
  explicit FsView(std::string root);

  const std::string& root() const { return root_; }
  std::string Resolve(const std::string& path) const;
  // NotFound when the file does not exist; IoError naming the path and errno
  // when it cannot be read (sysfs answers EINVAL or EOPNOTSUPP for some).
  Result<std::string> ReadFile(const std::string& path) const;
  // Sorted names, "." and ".." left out. NotFound when absent.
  Result<std::vector<std::string>> ListDir(const std::string& path) const;
  bool Exists(const std::string& path) const;

 private:
  std::string root_;
};

// The first line of `text` without trailing whitespace ("9000\n" -> "9000").
std::string FirstLine(std::string_view text);
// A decimal (or 0x hex) unsigned value, surrounding whitespace allowed.
std::optional<uint64_t> ParseUint(std::string_view text);

// /sys/class/infiniband/<dev>/ports/<port>/hw_counters/*: every file holding
// a number. NotFound when the directory does not exist.
Result<std::map<std::string, uint64_t>> ReadHwCounters(const FsView& fs, const std::string& device, uint8_t port);

// `ethtool -S` output ("NIC statistics:\n     rx_packets: 12\n"), the text
// form fixtures record. Lines that are not "name: number" are skipped.
std::map<std::string, uint64_t> ParseEthtoolText(std::string_view text);

// A GID as sysfs prints it ("fe80:0000:0000:0000:0a5c:01ff:fe02:0301").
std::optional<verbs::Gid> ParseGid(std::string_view text);

// What sysfs shows of a port: state ("4: ACTIVE"), link_layer, the GID table
// (gids/N with gid_attrs/types/N and gid_attrs/ndevs/N; all-zero entries
// left out) and the netdev. active_mtu, max_mtu and max_mr_size are not in
// sysfs (only verbs reports them) and stay 0. NotFound when the port's
// directory does not exist.
Result<verbs::PortInfo> PortFromSysfs(const FsView& fs, const std::string& device, uint8_t port);

// "Max locked memory" of a /proc/<pid>/limits text and CAP_IPC_LOCK from the
// CapEff line of a /proc/<pid>/status text (empty: no capability known).
Result<MemlockLimit> ParseMemlock(std::string_view limits, std::string_view status);

// CAP_IPC_LOCK (bit 14) set in the "CapEff:" line of a /proc/<pid>/status text.
bool HasCapIpcLock(std::string_view status);

}  // namespace memkv::doctor

#endif  // MEMKV_DOCTOR_SYSFS_H_
