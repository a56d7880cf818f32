#include "client/store_shed.h"

#include <string>

#include "base/log.h"

namespace memkv::client {

Status StoreShedder::Admit(std::string_view call, uint64_t keys) {
  std::string why;
  {
    MutexLock lock(mu_);
    if (max_inflight_ > 0 && inflight_ >= max_inflight_) {
      why = std::to_string(inflight_) + " stores are in flight from this client, the limit store_shed_inflight is " +
            std::to_string(max_inflight_);
    } else if (latency_ns_ > 0 && measured_ && average_ns_ > latency_ns_ && inflight_ > 0) {
      why = "the recent average store latency " + std::to_string(average_ns_ / 1'000'000) +
            " ms exceeds store_shed_latency_ms " + std::to_string(latency_ns_ / 1'000'000) +
            " (one store at a time still goes, to tell when the tier recovers)";
    } else {
      ++inflight_;
      return Status::Ok();
    }
  }
  ClientCounters::Add(counters_->stores_shed, keys);
  std::string message = std::string(call) + " shed by the client, not stored: " + why;
  MEMKV_LOG_EVERY_C(kInfo, 10, "client") << message << "; shed stores are counted in stores_shed";
  return Busy(std::move(message));
}

void StoreShedder::Finish(Nanos latency_ns) {
  MutexLock lock(mu_);
  if (inflight_ > 0) --inflight_;
  if (!measured_) {
    average_ns_ = latency_ns;
    measured_ = true;
    return;
  }
  average_ns_ += (latency_ns - average_ns_) / (Nanos{1} << kWeightShift);
}

Nanos StoreShedder::average_ns() const {
  MutexLock lock(mu_);
  return average_ns_;
}

}  // namespace memkv::client
