// StoreShedder: the client sheds stores, rather than block the engine, while
// the tier is slow (docs/client-library.md, "Loads before stores").
//
// A store (a put call: Put, PutWith, BatchPut, BatchPutWith, an asynchronous
// batch put) asks Admit before it is sent. It is shed, answered kBusy for
// every key with a message that says the client shed it and why, naming the
// option, and counted in ClientCounters::stores_shed (the counter a server's
// Busy answers go to too), when
//   - store_shed_inflight (> 0) stores are in flight from this client
//     already, or
//   - the recent average store latency (a moving average over the stores
//     that finished: each weighs 1/8) exceeds store_shed_latency_ms (> 0)
//     and a store is in flight: one store at a time still goes while the
//     tier is slow, so the average follows the tier back down once it
//     recovers.
// An admitted store calls Finish with its latency when it is done, whatever
// its outcome. Loads never ask: they are never shed.
//
// Thread-safety: any thread; one mutex, held for a few instructions.
#ifndef MEMKV_CLIENT_STORE_SHED_H_
#define MEMKV_CLIENT_STORE_SHED_H_

#include <cstdint>
#include <string_view>

#include "base/clock.h"
#include "base/mutex.h"
#include "client/counters.h"
#include "memkv/status.h"

namespace memkv::client {

class StoreShedder {
 public:
  // 0 turns either bound off. `counters` must outlive the shedder.
  StoreShedder(uint32_t latency_ms, uint32_t max_inflight, ClientCounters* counters)
      : latency_ns_(Nanos(latency_ms) * 1'000'000), max_inflight_(max_inflight), counters_(counters) {}

  // Ok: the store of `keys` values (the call `call`, as the caller knows it)
  // goes, and Finish must follow. Busy: it is shed (counted, logged at INFO
  // at most once per 10 s).
  Status Admit(std::string_view call, uint64_t keys);
  void Finish(Nanos latency_ns);

  // The moving average of store latency (0 before the first store).
  Nanos average_ns() const;

 private:
  static constexpr int kWeightShift = 3;  // each finished store weighs 1/8

  const Nanos latency_ns_;
  const uint32_t max_inflight_;
  ClientCounters* const counters_;
  mutable Mutex mu_;
  uint32_t inflight_ MEMKV_GUARDED_BY(mu_) = 0;
  Nanos average_ns_ MEMKV_GUARDED_BY(mu_) = 0;
  bool measured_ MEMKV_GUARDED_BY(mu_) = false;
};

// Admits a store, and calls Finish with its latency when it goes out of scope.
class StoreTicket {
 public:
  StoreTicket(StoreShedder* shedder, std::string_view call, uint64_t keys)
      : shedder_(shedder), status_(shedder->Admit(call, keys)), start_(MonotonicNanos()) {}
  ~StoreTicket() {
    if (status_.ok()) shedder_->Finish(MonotonicNanos() - start_);
  }
  StoreTicket(const StoreTicket&) = delete;
  StoreTicket& operator=(const StoreTicket&) = delete;
  // Ok, or the Busy the store is answered with.
  const Status& status() const { return status_; }

 private:
  StoreShedder* shedder_;
  Status status_;
  Nanos start_;
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_STORE_SHED_H_
