// CheckHost: picks the device the way `memkv start` would, then runs the
// check groups of check_*.cc in the runbook's order. Counters are read first
// and again after the interval, so the other checks run inside it.
#include "doctor/host_checks.h"

#include <algorithm>
#include <cstdio>

#include "base/units.h"
#include "doctor/checks_internal.h"
#include "doctor/sysfs.h"

namespace memkv::doctor {
namespace internal {

Finding MakeFinding(std::string id, Layer layer, Severity severity, std::string check) {
  Finding f;
  f.id = std::move(id);
  f.layer = layer;
  f.severity = severity;
  f.check = std::move(check);
  return f;
}

std::string PfcArg(uint8_t priority) {
  std::string out;
  for (int p = 0; p < 8; ++p) out += std::string(p == 0 ? "" : ",") + (p == priority ? "1" : "0");
  return out;
}

std::string Hex8(uint8_t v) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02x", v);
  return buf;
}

std::string PriorityList(uint8_t mask) {
  std::string out;
  for (int p = 0; p < 8; ++p) {
    if ((mask & (1u << p)) != 0) out += (out.empty() ? "" : ", ") + std::to_string(p);
  }
  return out.empty() ? "none" : out;
}

std::string Bytes(uint64_t bytes) { return bytes == UINT64_MAX ? "unlimited" : FormatSize(bytes); }

}  // namespace internal

namespace {

using internal::MakeFinding;

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string Hostname(HostProbe& probe) {
  Result<std::string> name = probe.ReadFile("/proc/sys/kernel/hostname");
  return name.ok() ? FirstLine(*name) : "unknown";
}

// A netdev to suggest for Soft-RoCE: the first one up that is not loopback.
std::string SoftRoceNetdev(HostProbe& probe) {
  Result<std::vector<std::string>> names = probe.ListDir("/sys/class/net");
  if (!names.ok()) return "<if>";
  std::string first;
  for (const std::string& n : *names) {
    if (n == "lo") continue;
    Result<std::string> state = probe.ReadFile("/sys/class/net/" + n + "/operstate");
    if (state.ok() && FirstLine(*state) == "up") return n;
    if (first.empty()) first = n;
  }
  return first.empty() ? "<if>" : first;
}

void NoDevice(HostProbe& probe, Report* report) {
  Finding f = MakeFinding("device.present", Layer::kHostNic, Severity::kWarning, "RDMA devices on this host");
  f.observed = "none (ibv_get_device_list found none)";
  f.expected = "an RDMA device: a RoCE NIC (mlx5_0) or Soft-RoCE (rxe0)";
  f.message =
      "Without a device MemKV serves and uses inline-bulk TCP only. Check what the kernel sees with `rdma link` "
      "and `ibv_devices` (a missing driver or rdma-core); for Soft-RoCE load rdma_rxe and add a device on a "
      "netdev; to run clients on TCP deliberately, set MEMKV_TRANSPORT=tcp.";
  f.fix = {"rdma link", "ibv_devices", "modprobe rdma_rxe",
           "rdma link add rxe0 type rxe netdev " + SoftRoceNetdev(probe), "export MEMKV_TRANSPORT=tcp"};
  report->Add(std::move(f));
}

// The device to check and why it is that one; nullopt (with a finding) when
// it cannot be checked.
std::optional<std::string> PickDevice(HostProbe& probe, const DoctorOptions& options, Report* report) {
  Result<std::vector<std::string>> devices = probe.Devices();
  if (!devices.ok()) {
    Finding f = MakeFinding("device.present", Layer::kHostNic, Severity::kError, "RDMA devices on this host");
    f.observed = devices.status().message();
    f.expected = "the device list (ibv_get_device_list)";
    f.message = "The RDMA device list cannot be read; MemKV cannot use RDMA on this host.";
    f.fix = {"rdma link", "ibv_devices"};
    report->Add(std::move(f));
    return std::nullopt;
  }
  if (devices->empty()) {
    NoDevice(probe, report);
    return std::nullopt;
  }
  std::string device, source;
  if (!options.device.empty()) {
    device = options.device;
    source = "--device";
  } else if (!options.config_path.empty()) {
    device = options.config.rdma.device;
    source = "rdma.device";
  } else {
    device = devices->front();
    source = "the first RDMA device";
  }
  Finding f = MakeFinding("device.present", Layer::kHostNic, Severity::kOk, "RDMA device");
  f.expected = source == "the first RDMA device" ? "an RDMA device" : device + " (" + source + ")";
  if (std::find(devices->begin(), devices->end(), device) == devices->end()) {
    f.severity = Severity::kWarning;
    f.observed = device + " is not on this host (RDMA devices: " + Join(*devices) + ")";
    f.message = source == "rdma.device"
                    ? "memkv start serves inline-bulk TCP only with this config; set rdma.device to one of them."
                    : "Name a device that is present.";
    f.fix = {source == "rdma.device" ? "rdma.device: " + devices->front()
                                     : "memkv doctor --device " + devices->front()};
    report->Add(std::move(f));
    return std::nullopt;
  }
  f.observed = device + " (" + source + "; present: " + Join(*devices) + ")";
  if (options.config_path.empty() && device != kDefaultDevice) {
    f.severity = Severity::kInfo;
    f.message = "No config file was given: memkv start without one uses rdma.device " + kDefaultDevice +
                ", which is not " + device + "; put the device in the server's config.";
    f.fix = {"rdma.device: " + device};
  }
  report->Add(std::move(f));
  return device;
}

uint64_t MemTotalBytes(HostProbe& probe) {
  Result<std::string> meminfo = probe.ReadFile("/proc/meminfo");
  if (!meminfo.ok()) return 0;
  std::string_view text = *meminfo;
  size_t at = text.find("MemTotal:");
  if (at == std::string_view::npos) return 0;
  std::string_view rest = text.substr(at + 9);
  std::optional<uint64_t> kib = ParseUint(rest.substr(0, rest.find("kB")));
  return kib ? *kib * 1024 : 0;
}

}  // namespace

uint32_t ActiveMtuForNetdevMtu(uint32_t netdev_mtu) {
  if (netdev_mtu <= kRoceHeaderBytes) return 0;
  const uint32_t room = netdev_mtu - kRoceHeaderBytes;
  for (uint32_t mtu = 4096; mtu >= 256; mtu /= 2) {
    if (room >= mtu) return mtu;
  }
  return 0;
}

std::optional<HostState> CheckHost(HostProbe& probe, const DoctorOptions& options, Report* report) {
  report->host = Hostname(probe);
  report->config = options.config_path.empty() ? "defaults (no config file)" : options.config_path;
  report->interval_ms = options.interval_ms;

  std::optional<std::string> device = PickDevice(probe, options, report);
  if (!device) return std::nullopt;
  report->device = *device;
  report->port = options.port;

  Result<verbs::PortInfo> port = probe.Port(*device, options.port);
  if (!port.ok()) {
    Finding f = MakeFinding("port.state", Layer::kHostNic, Severity::kError,
                            "state of " + *device + " port " + std::to_string(options.port));
    f.observed = port.status().message();
    f.expected = "ACTIVE";
    f.message = "The port cannot be queried; memkv start refuses RDMA on it.";
    f.fix = {"ibv_devinfo -d " + *device, "rdma link"};
    report->Add(std::move(f));
    return std::nullopt;
  }

  HostState state;
  state.port = std::move(port).value();
  if (!options.netdev.empty()) state.port.netdev = options.netdev;
  state.netdev = state.port.netdev;
  state.mtu = options.config.rdma.mtu;
  state.pool_bytes = options.config.memory.max_size_bytes != 0 ? options.config.memory.max_size_bytes
                                                               : config::DefaultMemoryPoolBytes(MemTotalBytes(probe));
  report->netdev = state.netdev;

  state.counters_before = probe.ReadCounters(*device, options.port, state.netdev);

  internal::Ctx ctx{probe, options, state, *report};
  internal::CheckPortState(ctx);
  internal::CheckMtus(ctx);
  if (state.port.ethernet) {
    state.dcb = probe.Dcb(state.netdev);
    const config::RdmaConfig& r = options.config.rdma;
    state.path = verbs::ResolvePath(state.port, state.dcb, r.gid_index, r.traffic_class, r.service_level);
    internal::CheckGids(ctx);
    internal::CheckDcb(ctx);
    internal::CheckEcn(ctx);
    internal::CheckMarking(ctx);
  }
  internal::CheckMemory(ctx);

  probe.Wait(options.interval_ms);
  state.counters_after = probe.ReadCounters(*device, options.port, state.netdev);
  internal::CheckCounters(ctx);
  if (state.port.ethernet) internal::AddSwitchHints(ctx);
  return state;
}

}  // namespace memkv::doctor
