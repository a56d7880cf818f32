// counters.*: the runbook's "verification by counters" on the host itself.
// Each group is judged by how it moved during the interval (the delta), not
// by its total since the counters were last cleared.
#include "doctor/checks_internal.h"
#include "doctor/counters.h"

namespace memkv::doctor::internal {
namespace {

constexpr size_t kMaxListed = 6;

struct Group {
  CounterGroup group;
  const char* id;
  const char* what;
  const char* expected;
  bool trouble;  // moving means something is wrong (not just congestion signalling)
};

constexpr Group kGroups[] = {
    {CounterGroup::kPause, "counters.pause", "PFC pause frames (rx/tx_prio<N>_pause)",
     "pauses only under congestion", false},
    {CounterGroup::kCnp, "counters.cnp", "ECN marks and CNPs (DCQCN)", "CNPs only under congestion", false},
    {CounterGroup::kDiscard, "counters.discards", "discards and drops", "none during the check", true},
    {CounterGroup::kRetransmit, "counters.retransmit", "sequence errors, timeouts and retries",
     "none during the check", true},
};

std::string List(const std::vector<const CounterDelta*>& items, bool deltas) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < kMaxListed; ++i) {
    const CounterDelta& d = *items[i];
    out += (out.empty() ? "" : ", ") + d.name + (deltas ? " +" + std::to_string(d.delta) : " " + std::to_string(d.after));
  }
  if (items.size() > kMaxListed) out += " and " + std::to_string(items.size() - kMaxListed) + " more";
  return out;
}

}  // namespace

void CheckCounters(Ctx& ctx) {
  const HostState& s = ctx.state;
  const CounterSnapshot& after = s.counters_after;
  const std::string ms = std::to_string(ctx.options.interval_ms) + " ms";
  const std::string nd = ctx.ifname();
  const std::string prio = std::to_string(s.roce_priority);

  Finding r = MakeFinding("counters.read", Layer::kHostNic, Severity::kOk, "counters watched for " + ms);
  r.expected = "hw_counters of " + s.port.device + " port " + std::to_string(s.port.port_num) +
               " and ethtool statistics of " + nd;
  r.observed = (after.hw_status.ok() ? std::to_string(after.hw.size()) : "no") + " hw_counters, " +
               (after.ethtool_status.ok() ? std::to_string(after.ethtool.size()) : "no") + " ethtool statistics";
  if (!after.hw_status.ok() || !after.ethtool_status.ok()) {
    r.severity = !after.hw_status.ok() && !after.ethtool_status.ok() ? Severity::kWarning : Severity::kInfo;
    if (!after.hw_status.ok()) r.message += after.hw_status.message() + ".";
    if (!after.ethtool_status.ok()) r.message += (r.message.empty() ? "" : " ") + after.ethtool_status.message() + ".";
  }
  ctx.report.Add(std::move(r));

  const std::vector<CounterDelta> deltas = Diff(s.counters_before, after);
  for (const Group& g : kGroups) {
    std::vector<const CounterDelta*> members, moved, nonzero;
    for (const CounterDelta& d : deltas) {
      if (Classify(d.source, d.name) != g.group) continue;
      members.push_back(&d);
      if (d.delta > 0) moved.push_back(&d);
      if (d.after > 0) nonzero.push_back(&d);
    }
    Finding f = MakeFinding(g.id, Layer::kHostNic, Severity::kOk, g.what);
    f.expected = g.expected;
    if (members.empty()) {
      f.severity = Severity::kInfo;
      f.observed = "none on " + s.port.device + " / " + nd;
      f.message = "This NIC does not report these counters.";
      ctx.report.Add(std::move(f));
      continue;
    }
    if (!moved.empty()) {
      f.observed = List(moved, true) + " in " + ms;
      f.severity = g.trouble ? Severity::kWarning : Severity::kInfo;
      switch (g.group) {
        case CounterGroup::kPause:
          f.message = "PFC is pausing traffic: the path is congested. Occasional pauses are normal; a steady "
                      "stream is not.";
          break;
        case CounterGroup::kCnp:
          f.message = "ECN marks and CNPs are flowing: DCQCN is slowing senders (congestion on the path).";
          break;
        case CounterGroup::kDiscard:
          f.message = "Packets were discarded during the check: a lossy priority under load, or buffers "
                      "overflowing. RoCE traffic must ride the lossless priority (dcb.pfc).";
          break;
        default:
          f.message = "RDMA packets are being lost and retransmitted now: typically a hop whose MTU is below the "
                      "path MTU, or RoCE traffic on a lossy priority (mtu.*, dcb.pfc).";
          break;
      }
      if (g.trouble) f.fix = {"ethtool -S " + nd + " | grep -E 'prio" + prio + "|prio0|discard'"};
    } else {
      f.observed = "none moved in " + ms;
      if (!nonzero.empty()) {
        f.observed += "; since last cleared: " + List(nonzero, false);
        if (g.trouble) {
          f.severity = Severity::kInfo;
          f.message = "Counted before this check, not during it.";
        }
      }
    }
    ctx.report.Add(std::move(f));
  }
}

}  // namespace memkv::doctor::internal
