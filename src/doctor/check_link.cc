// port.state, port.link_layer, mtu.netdev, mtu.active, mtu.client: the
// runbook's "Why MTU is the common failure" and its first verification step
// (ibv_devinfo: state and active_mtu).
#include <algorithm>

#include "doctor/checks_internal.h"
#include "doctor/sysfs.h"

namespace memkv::doctor::internal {
namespace {

constexpr uint32_t kDefaultClientMtu = 4096;

std::string PortName(const verbs::PortInfo& p) { return p.device + " port " + std::to_string(p.port_num); }

// The client MTU as this host's clients would use it; nullopt when the
// variable is set to something that is not a number.
std::optional<uint32_t> ClientMtu(const DoctorOptions& o) {
  if (!o.client_mtu) return kDefaultClientMtu;
  std::optional<uint64_t> v = ParseUint(*o.client_mtu);
  if (!v || *v > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

void CheckNetdevMtu(Ctx& ctx) {
  const verbs::PortInfo& port = ctx.state.port;
  const std::string nd = ctx.ifname();
  Finding f = MakeFinding("mtu.netdev", Layer::kHostNic, Severity::kOk, "netdev MTU of " + nd);
  uint32_t need = ctx.state.mtu;
  std::optional<uint32_t> client = ClientMtu(ctx.options);
  if (ctx.options.client_mtu && client && verbs::IsValidMtu(*client)) need = std::max(need, *client);
  f.expected = ">= " + std::to_string(need + kRoceHeaderBytes) + " for path MTU " + std::to_string(need) +
               (need == 4096 ? " (9000 in practice)" : "");

  Result<std::string> text = ctx.probe.ReadFile("/sys/class/net/" + nd + "/mtu");
  std::optional<uint64_t> mtu = text.ok() ? ParseUint(*text) : std::nullopt;
  if (!mtu) {
    f.severity = Severity::kInfo;
    f.observed = "unknown (" + (text.ok() ? "/sys/class/net/" + nd + "/mtu is not a number" : text.status().message()) + ")";
    f.message = "doctor cannot read the netdev's MTU; the active MTU check below still holds.";
    ctx.report.Add(std::move(f));
    return;
  }
  const uint32_t allows = ActiveMtuForNetdevMtu(static_cast<uint32_t>(*mtu));
  f.observed = std::to_string(*mtu) + " (leaves room for a RoCE path MTU of " + std::to_string(allows) + ")";
  if (allows < need) {
    f.severity = Severity::kError;
    f.message = "A netdev MTU of " + std::to_string(*mtu) + " minus " + std::to_string(kRoceHeaderBytes) +
                " bytes of RoCE headers carries path MTU " + std::to_string(allows) + " at most; MemKV is set to " +
                std::to_string(need) + ". Raise it to jumbo frames (and every hop with it: switch.mtu).";
    f.fix = {"ip link set " + nd + " mtu 9000"};
  } else if (port.active_mtu != 0 && port.active_mtu < allows && port.active_mtu < need) {
    f.severity = Severity::kWarning;
    f.message = "The netdev allows path MTU " + std::to_string(allows) + " but " + PortName(port) +
                " negotiated " + std::to_string(port.active_mtu) +
                ": something under the netdev is still at a lower MTU (a bond or VLAN sub-interface, the "
                "switch port).";
    f.fix = {"ibv_devinfo -d " + port.device + " | grep -E 'active_mtu|state'", "ip -d link show " + nd};
  }
  ctx.report.Add(std::move(f));
}

void CheckActiveMtu(Ctx& ctx) {
  const verbs::PortInfo& port = ctx.state.port;
  Finding f = MakeFinding("mtu.active", Layer::kMemkv, Severity::kOk, "rdma.mtu against the active MTU of " + PortName(port));
  f.observed = "rdma.mtu " + std::to_string(ctx.state.mtu) + ", active MTU " + std::to_string(port.active_mtu) +
               " (max " + std::to_string(port.max_mtu) + ")";
  f.expected = "rdma.mtu <= active MTU";
  Status s = verbs::CheckMtu(ctx.state.mtu, port, "rdma.mtu");
  if (!s.ok()) {
    f.severity = Severity::kError;
    f.message = s.message() + ". memkv start refuses to run like this.";
    f.fix = {"ip link set " + ctx.ifname() + " mtu 9000", "rdma.mtu: " + std::to_string(port.active_mtu)};
  }
  ctx.report.Add(std::move(f));
}

void CheckClientMtu(Ctx& ctx) {
  const verbs::PortInfo& port = ctx.state.port;
  const uint32_t server = ctx.state.mtu;
  const bool have_config = !ctx.options.config_path.empty();
  Finding f = MakeFinding("mtu.client", Layer::kMemkv, Severity::kOk, "MEMKV_RDMA_MTU of clients on this host");
  f.expected = have_config ? "= rdma.mtu " + std::to_string(server) + ", <= active MTU " + std::to_string(port.active_mtu)
                           : "<= active MTU " + std::to_string(port.active_mtu);
  if (!ctx.options.client_mtu) {
    f.observed = "unset (clients use " + std::to_string(kDefaultClientMtu) + ")";
    if (server != kDefaultClientMtu) {
      f.severity = Severity::kWarning;
      f.message = "Clients on the default MEMKV_RDMA_MTU " + std::to_string(kDefaultClientMtu) +
                  " are refused RDMA by a server with rdma.mtu " + std::to_string(server) +
                  " (RDMA MTU mismatch) and fall back to TCP.";
      f.fix = {"export MEMKV_RDMA_MTU=" + std::to_string(server)};
    }
    ctx.report.Add(std::move(f));
    return;
  }
  f.observed = *ctx.options.client_mtu;
  std::optional<uint32_t> client = ClientMtu(ctx.options);
  Status s = client ? verbs::CheckMtu(*client, port, "MEMKV_RDMA_MTU")
                    : InvalidArgument("MEMKV_RDMA_MTU " + *ctx.options.client_mtu +
                                      " is not a RoCE path MTU: use 256, 512, 1024, 2048 or 4096");
  if (!s.ok()) {
    f.severity = Severity::kError;
    f.message = s.message() + ". Clients on this host then fall back to TCP (or fail with MEMKV_TRANSPORT=rdma).";
    f.fix = {"export MEMKV_RDMA_MTU=" + std::to_string(std::min(server, port.active_mtu == 0 ? server : port.active_mtu))};
  } else if (have_config && *client != server) {
    f.severity = Severity::kError;
    f.message = "RDMA MTU mismatch: clients use MEMKV_RDMA_MTU " + std::to_string(*client) +
                " but rdma.mtu is " + std::to_string(server) + "; the server refuses their RDMA and they fall back to TCP.";
    f.fix = {"export MEMKV_RDMA_MTU=" + std::to_string(server)};
  }
  ctx.report.Add(std::move(f));
}

}  // namespace

void CheckPortState(Ctx& ctx) {
  const verbs::PortInfo& port = ctx.state.port;
  Finding f = MakeFinding("port.state", Layer::kHostNic, Severity::kOk, "state of " + PortName(port));
  f.observed = port.state.empty() ? "unknown" : port.state;
  f.expected = "ACTIVE";
  if (!port.active) {
    f.severity = Severity::kError;
    f.message = "The port is not ACTIVE: memkv start refuses RDMA on it and clients fall back to TCP. Check the "
                "link and cable, and that the netdev is up.";
    f.fix = {"ibv_devinfo -d " + port.device + " | grep -E 'active_mtu|state'", "ip link set " + ctx.ifname() + " up"};
  }
  ctx.report.Add(std::move(f));
  if (!port.ethernet) {
    Finding l = MakeFinding("port.link_layer", Layer::kHostNic, Severity::kWarning, "link layer of " + PortName(port));
    l.observed = "InfiniBand";
    l.expected = "Ethernet (RoCE)";
    l.message = "doctor checks RoCEv2 hosts; GID, DCB, ECN and switch checks do not apply to an InfiniBand port.";
    ctx.report.Add(std::move(l));
  }
}

void CheckMtus(Ctx& ctx) {
  CheckNetdevMtu(ctx);
  CheckActiveMtu(ctx);
  CheckClientMtu(ctx);
}

}  // namespace memkv::doctor::internal
