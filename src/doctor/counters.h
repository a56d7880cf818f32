// Counter deltas: what moved between two CounterSnapshots, and which
// counters reveal RoCE trouble (docs/doctor.md, "counters.*").
//
// The host check reads a snapshot before and after an interval; a path check
// reads one before and after its transfer. Both diff them here. Pure
// functions.
#ifndef MEMKV_DOCTOR_COUNTERS_H_
#define MEMKV_DOCTOR_COUNTERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "doctor/probe.h"

namespace memkv::doctor {

enum class CounterSource { kHw, kEthtool };
const char* CounterSourceName(CounterSource source);  // "hw_counters", "ethtool"

struct CounterDelta {
  CounterSource source = CounterSource::kHw;
  std::string name;
  uint64_t before = 0;
  uint64_t after = 0;
  uint64_t delta = 0;  // after - before; after itself when the counter went backwards (cleared)
};

// Every counter present in `after`, in source then name order. A counter
// missing from `before` counts from 0.
std::vector<CounterDelta> Diff(const CounterSnapshot& before, const CounterSnapshot& after);

// The delta of one counter (0 when absent).
uint64_t DeltaOf(const std::vector<CounterDelta>& deltas, CounterSource source, const std::string& name);

// What a counter says when it moves.
enum class CounterGroup {
  kOther,
  kPause,       // PFC / global pause frames: rx|tx_prio<N>_pause, rx|tx_pause_ctrl_phy
  kCnp,         // DCQCN: np_cnp_sent, rp_cnp_handled, rp_cnp_ignored, np_ecn_marked_roce_packets
  kDiscard,     // *discard*, *drop* (not XDP), out_of_buffer
  kRetransmit,  // loss and recovery: out_of_sequence, packet_seq_err, local_ack_timeout_err,
                // implied_nak_seq_err, rnr_nak_retry_err, duplicate_request; rxe's
                // retry_exceeded_err, retry_rnr_event_err, completer_retry_err,
                // rcvd_seq_err, out_of_seq_request
};
CounterGroup Classify(CounterSource source, const std::string& name);

}  // namespace memkv::doctor

#endif  // MEMKV_DOCTOR_COUNTERS_H_
