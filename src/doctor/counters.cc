#include "doctor/counters.h"

#include <regex>
#include <set>

namespace memkv::doctor {
namespace {

void DiffOne(CounterSource source, const std::map<std::string, uint64_t>& before,
             const std::map<std::string, uint64_t>& after, std::vector<CounterDelta>* out) {
  for (const auto& [name, value] : after) {
    CounterDelta d;
    d.source = source;
    d.name = name;
    auto it = before.find(name);
    d.before = it == before.end() ? 0 : it->second;
    d.after = value;
    d.delta = value >= d.before ? value - d.before : value;
    out->push_back(std::move(d));
  }
}

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

const char* CounterSourceName(CounterSource source) {
  return source == CounterSource::kHw ? "hw_counters" : "ethtool";
}

std::vector<CounterDelta> Diff(const CounterSnapshot& before, const CounterSnapshot& after) {
  std::vector<CounterDelta> out;
  DiffOne(CounterSource::kHw, before.hw, after.hw, &out);
  DiffOne(CounterSource::kEthtool, before.ethtool, after.ethtool, &out);
  return out;
}

uint64_t DeltaOf(const std::vector<CounterDelta>& deltas, CounterSource source, const std::string& name) {
  for (const CounterDelta& d : deltas) {
    if (d.source == source && d.name == name) return d.delta;
  }
  return 0;
}

CounterGroup Classify(CounterSource source, const std::string& name) {
  static const std::set<std::string> kCnp = {"np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored",
                                             "np_ecn_marked_roce_packets"};
  static const std::set<std::string> kRetransmit = {
      "out_of_sequence",     "packet_seq_err",     "local_ack_timeout_err", "implied_nak_seq_err",
      "rnr_nak_retry_err",   "duplicate_request",  "retry_exceeded_err",    "retry_rnr_event_err",
      "completer_retry_err", "rcvd_seq_err",       "out_of_seq_request"};
  static const std::regex kPause("(rx|tx)_prio[0-7]_pause|(rx|tx)_pause_ctrl_phy");
  if (source == CounterSource::kHw) {
    if (kCnp.count(name) != 0) return CounterGroup::kCnp;
    if (kRetransmit.count(name) != 0) return CounterGroup::kRetransmit;
    if (name == "out_of_buffer") return CounterGroup::kDiscard;
    return CounterGroup::kOther;
  }
  if (std::regex_match(name, kPause)) return CounterGroup::kPause;
  if ((Contains(name, "discard") || Contains(name, "drop")) && !Contains(name, "xdp")) return CounterGroup::kDiscard;
  if (name == "rx_out_of_buffer") return CounterGroup::kDiscard;
  return CounterGroup::kOther;
}

}  // namespace memkv::doctor
