#include "doctor/path_checks.h"

#include <cstdio>

#include "doctor/counters.h"

namespace memkv::doctor {
namespace {

Finding Make(const std::string& id, Layer layer, Severity severity, const std::string& check) {
  Finding f;
  f.id = id;
  f.layer = layer;
  f.severity = severity;
  f.check = check;
  return f;
}

std::string Gbps(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f Gbit/s", v);
  return buf;
}

// tx bytes of priority `prio` as ethtool names them (mlx5: tx_prio3_bytes).
uint64_t TxPrio(const std::vector<CounterDelta>& deltas, int prio) {
  return DeltaOf(deltas, CounterSource::kEthtool, "tx_prio" + std::to_string(prio) + "_bytes");
}

bool HasTxPrio(const CounterSnapshot& s, int prio) {
  return s.ethtool.count("tx_prio" + std::to_string(prio) + "_bytes") != 0;
}

}  // namespace

int ServiceLevelOf(const std::string& rdma_path) {
  const std::string tag = "service_level ";
  size_t at = rdma_path.find(tag);
  if (at == std::string::npos) return -1;
  int sl = -1;
  if (std::sscanf(rdma_path.c_str() + at + tag.size(), "%d", &sl) != 1) return -1;
  return sl;
}

void AddPathFindings(const PathCheckInput& in, Report* report) {
  const PathProbeResult& r = in.result;
  {
    Finding f = Make("path.tcp", Layer::kMemkv, r.tcp.ok() ? Severity::kOk : Severity::kError,
                     "TCP session to " + in.peer + " (reachable, auth key accepted)");
    f.observed = r.tcp.ok() ? "connected" : r.tcp.ToString();
    f.expected = "connected";
    if (!r.tcp.ok()) {
      f.message = "the server cannot be reached over TCP at all, so the RDMA result below says nothing about the path";
      f.fix = {"memkv start  # on the peer, and check MEMKV_AUTH_KEY equals its key",
               "nc -vz " + in.peer.substr(0, in.peer.rfind(':')) + " " + in.peer.substr(in.peer.rfind(':') + 1)};
    }
    report->Add(f);
  }
  {
    const bool ok = r.rdma.ok() && r.blocks_failed == 0;
    Finding f = Make("path.rdma", Layer::kMemkv, ok ? Severity::kOk : Severity::kError,
                     "RDMA transfer to " + in.peer + " with MemKV's attributes (MEMKV_TRANSPORT=rdma)");
    f.observed = std::to_string(r.blocks_ok) + " blocks written and read back byte-exact, " +
                 std::to_string(r.blocks_failed) + " failed" + (r.rdma.ok() ? "" : ": " + r.rdma.ToString());
    f.expected = "every block over RDMA";
    if (!ok && !r.rdma_accepted && !r.retry_exhausted) {
      f.message = "RDMA was not set up with the server; clients in MEMKV_TRANSPORT=auto would run on TCP";
      f.fix = {"see the message: an MTU mismatch names both values (set MEMKV_RDMA_MTU and rdma.mtu alike)",
               "rdma link; ibv_devices  # a device on both hosts"};
    }
    report->Add(f);
  }
  {
    // The runbook's cross-node failure: data packets larger than a hop's MTU
    // are dropped, so the requester exhausts its retries.
    Finding f = Make("path.mtu", Layer::kSwitch, r.retry_exhausted ? Severity::kError : Severity::kOk,
                     "path MTU " + std::to_string(in.mtu) + " carried end to end");
    f.observed = r.retry_exhausted ? "IBV_WC_RETRY_EXC_ERR (status 12): packets of the " + std::to_string(in.mtu) +
                                         "-byte path MTU were dropped on the way"
                                   : (r.rdma_accepted && r.blocks_ok > 0 ? "carried" : "not tested (RDMA did not run)");
    f.expected = "large transfers complete";
    if (!r.rdma_accepted && !r.retry_exhausted && !(r.blocks_ok > 0)) f.severity = Severity::kInfo;
    if (r.retry_exhausted) {
      f.message = "a hop between the hosts carries less than the RDMA path MTU: the NICs negotiated " +
                  std::to_string(in.mtu) + " but a switch port or a bond/VLAN interface on the path is smaller "
                  "(passes on one node, fails across nodes)";
      f.fix = {"nv set interface swp1-swp32 link mtu 9216; nv config apply  # every switch port on the path",
               "ip link set <netdev> mtu 9000  # both hosts, and any bond/VLAN on top",
               "or lower both ends: rdma.mtu: 1024 on the server, MEMKV_RDMA_MTU=1024 on clients"};
    }
    report->Add(f);
  }
  if (r.rdma_accepted) {
    Finding f = Make("path.marking", Layer::kMemkv, Severity::kInfo, "attributes the transfer ran with");
    f.observed = r.rdma_path;
    f.expected = "traffic_class = DSCP << 2 of the lossless DSCP, service_level = its priority";
    f.message = "the client stamps the server's traffic class and SL on its QPs; a switch that counts DSCPs "
                "sees this DSCP on every RoCE packet";
    report->Add(f);
  }
  if (r.blocks_ok > 0) {
    Finding f = Make("path.throughput", Layer::kMemkv, Severity::kInfo, "RDMA throughput of the probe");
    f.observed = "write " + Gbps(r.WriteGbps()) + ", read " + Gbps(r.ReadGbps()) + " (" +
                 std::to_string(r.blocks_ok) + " blocks, one connection)";
    f.expected = "near line rate on a healthy fabric (ib_write_bw -d <dev> -x <gid> for the raw figure)";
    report->Add(f);
  }
  {
    Finding f = Make("path.lossless_queue", Layer::kHostNic, Severity::kInfo,
                     "the lossless priority's tx counters moved during the transfer, priority 0's did not");
    const int sl = in.service_level;
    if (!in.have_counters || r.blocks_ok == 0) {
      f.observed = "not measured (no transfer, or no local device)";
    } else if (sl < 0 || !HasTxPrio(in.after, sl) || !HasTxPrio(in.after, 0)) {
      f.observed = "no per-priority tx counters on this NIC (ethtool -S shows no tx_prio<N>_bytes)";
      f.message = "cannot confirm the queue from this host; check the switch's per-queue counters";
    } else {
      std::vector<CounterDelta> d = Diff(in.before, in.after);
      const uint64_t lossless = TxPrio(d, sl), best_effort = TxPrio(d, 0);
      f.observed = "tx_prio" + std::to_string(sl) + "_bytes +" + std::to_string(lossless) + ", tx_prio0_bytes +" +
                   std::to_string(best_effort);
      f.expected = "tx_prio" + std::to_string(sl) + "_bytes climbs, tx_prio0_bytes stays (about) flat";
      if (lossless >= r.bytes / 4 && best_effort < lossless / 10) {
        f.severity = Severity::kOk;
      } else {
        f.severity = Severity::kError;
        f.message = "RoCE traffic left on the best-effort queue: the SL/DSCP does not land it on priority " +
                    std::to_string(sl);
        f.fix = {"mlnx_qos -i <netdev> --trust dscp",
                 "mlnx_qos -i <netdev> --dscp2prio set,26," + std::to_string(sl),
                 "rdma.service_level: " + std::to_string(sl) + " and a RoCEv2 rdma.gid_index on the server"};
      }
    }
    report->Add(f);
  }
}

}  // namespace memkv::doctor
