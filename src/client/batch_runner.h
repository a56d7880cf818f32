// BatchRunner: how a Client carries out a batch (put, get into the caller's
// buffers, exists, delete) over its server pools: keys checked and grouped
// by server, each server's share cut into frames (or, over RDMA, one
// pipelined exchange per value) and driven over that server's connections,
// every key answered with its own status.
//
// Each call takes the client's current view of its servers once
// (membership.h) and routes every key by the rules the single-key calls
// follow (Router): a first round grouped by each key's first server, then a
// second round, grouped by their next server, for the keys whose answer
// calls for one (a put to a draining or unreachable server, a read of an
// unreachable one, a miss on a new or draining owner).
//
// Owned by the client beside what it reads (options, membership, the RDMA
// engine, the counters), which must outlive it. Thread-safety: any thread,
// many at once (the blocking Batch* calls run it on the caller's thread,
// asynchronous submissions on a driver thread); it keeps no state of its
// own between calls.
#ifndef MEMKV_CLIENT_BATCH_RUNNER_H_
#define MEMKV_CLIENT_BATCH_RUNNER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "client/counters.h"
#include "client/store_shed.h"
#include "memkv/client.h"

namespace memkv::client {

class Membership;
class RdmaEngine;
class RdmaExchange;
class ServerPool;

class BatchRunner {
 public:
  BatchRunner(const ClientOptions& options, const std::unique_ptr<Membership>& membership,
              const std::unique_ptr<RdmaEngine>& rdma, ClientCounters& counters);
  ~BatchRunner();
  BatchRunner(const BatchRunner&) = delete;
  BatchRunner& operator=(const BatchRunner&) = delete;

  // What Client::BatchPut / BatchGetInto / BatchExists / BatchDelete return.
  // `options`: empty (plain puts) or one per key (Client::BatchPutWith).
  BatchResult Put(std::span<const std::string_view> keys, std::span<const std::span<const uint8_t>> values,
                  std::span<const PutOptions> options = {});
  // What Client::MatchPrefix returns.
  Result<size_t> MatchPrefix(std::span<const std::string_view> keys);
  BatchResult GetInto(std::span<const std::string_view> keys, std::span<const std::span<uint8_t>> buffers,
                      std::vector<size_t>* sizes);
  BatchResult Exists(std::span<const std::string_view> keys);
  BatchResult Delete(std::span<const std::string_view> keys);

  // Admits or sheds every store of the client: Put (the client's single-key
  // path asks it too) and the batch puts above (store_shed.h).
  StoreShedder& stores() { return stores_; }

 private:
  struct Impl;  // one per call, over the view it took
  const ClientOptions& options_;
  const std::unique_ptr<Membership>& membership_;
  const std::unique_ptr<RdmaEngine>& rdma_;
  ClientCounters& counters_;
  StoreShedder stores_;
};

// Counts a successful operation's value bytes under the transport that
// carried them (the single-key calls count with these too).
void CountTcp(ClientCounters& counters, uint64_t bytes);
void CountTransport(ClientCounters& counters, const RdmaExchange& x, uint64_t bytes);

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_BATCH_RUNNER_H_
