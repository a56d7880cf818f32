// What `memkv doctor` reports (docs/doctor.md): a Report is a list of
// Findings, each one check of one layer of the runbook's three (switch, host
// NIC, MemKV) with a severity, what was seen, what was expected and the
// commands that fix it.
//
// Checks only append; renderers (render.h) and the exit code read. Host
// checks (host_checks.h) and any later check (a path check to a peer) add to
// the same Report, so a new check is a function that appends Findings with
// ids of its own. Ids are stable: scripts and tests match on them, so never
// rename one; add a new id instead.
//
// Plain values; no threads involved.
#ifndef MEMKV_DOCTOR_FINDING_H_
#define MEMKV_DOCTOR_FINDING_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memkv::doctor {

// The runbook's layers, in the order the table prints them.
enum class Layer { kSwitch = 0, kHostNic = 1, kMemkv = 2 };
const char* LayerName(Layer layer);  // "switch hints", "host NIC", "MemKV"
const char* LayerKey(Layer layer);   // JSON: "switch", "host_nic", "memkv"

// kInfo: worth knowing, never changes the exit code (switch hints, values
// doctor could not verify). kWarning: MemKV works but not as the runbook
// intends (best-effort queue, counters moving). kError: MemKV refuses to
// start, RDMA cannot work, or traffic lands on a lossy priority.
enum class Severity { kOk = 0, kInfo = 1, kWarning = 2, kError = 3 };
const char* SeverityName(Severity severity);  // "ok", "info", "warning", "error"

struct Finding {
  std::string id;                // stable, dotted: "mtu.active", "dcb.pfc"
  Layer layer = Layer::kHostNic;
  Severity severity = Severity::kOk;
  std::string check;             // what was checked: "active MTU vs rdma.mtu"
  std::string observed;          // the value seen: "1024 (mlx5_0 port 1)"
  std::string expected;          // the value wanted: ">= 4096 (rdma.mtu)"
  std::string message;           // why this severity, in a sentence or two (may be empty when ok)
  std::vector<std::string> fix;  // commands or config lines, each complete (the runbook's)
};

// One doctor run. `device` is empty when there is no RDMA device to check.
struct Report {
  std::string host;
  std::string device;
  uint32_t port = 0;
  std::string netdev;
  std::string config;            // where the MemKV settings came from: a path, or "defaults (no config file)"
  uint32_t interval_ms = 0;      // how long counters were watched
  std::vector<Finding> findings;

  // Appends; the reference is valid until the next Add.
  Finding& Add(Finding finding);
  int Count(Severity severity) const;
  int errors() const { return Count(Severity::kError); }
  int warnings() const { return Count(Severity::kWarning); }
  // The first finding with `id`, or nullptr.
  const Finding* Find(std::string_view id) const;
};

// 0 when there are neither errors nor warnings, 1 with warnings only, 2 with
// any error.
int ExitCode(const Report& report);

}  // namespace memkv::doctor

#endif  // MEMKV_DOCTOR_FINDING_H_
