// The path check's findings (docs/doctor.md, "path.*"): what RunPathProbe
// saw across a real path to a peer, and whether the lossless priority's
// counters carried the transfer while priority 0's did not (the runbook's
// definitive check).
#ifndef MEMKV_DOCTOR_PATH_CHECKS_H_
#define MEMKV_DOCTOR_PATH_CHECKS_H_

#include <cstdint>
#include <string>

#include "doctor/finding.h"
#include "doctor/path_probe.h"
#include "doctor/probe.h"

namespace memkv::doctor {

struct PathCheckInput {
  std::string peer;
  uint32_t mtu = 4096;                // the MTU the probe used (MEMKV_RDMA_MTU)
  PathProbeResult result;
  CounterSnapshot before;             // the local port's counters around the transfer
  CounterSnapshot after;
  bool have_counters = false;         // a local device and netdev were known
  int service_level = -1;             // the SL the transfer ran with (from rdma_path); -1 unknown
};

// Appends path.tcp, path.rdma, path.mtu, path.throughput, path.marking and
// path.lossless_queue findings.
void AddPathFindings(const PathCheckInput& in, Report* report);

// The service level in ClientStats::rdma_path ("... service_level 3, ..."),
// or -1.
int ServiceLevelOf(const std::string& rdma_path);

}  // namespace memkv::doctor

#endif  // MEMKV_DOCTOR_PATH_CHECKS_H_
