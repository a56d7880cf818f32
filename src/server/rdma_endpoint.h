// RdmaEndpoint: the server's side of the RDMA transport (docs/rdma.md).
//
// Made once at start-up: opens the configured device, checks rdma.mtu
// against the port's active MTU (start refuses when it is larger), resolves
// gid_index / traffic_class / service_level (0 = auto, detect.h), and
// registers the whole DRAM pool once with remote read and write access.
//
// Per client connection, Accept() answers the RDMA offer carried by Connect:
// it creates one responder QP per client QP and connects it with the
// resolved attributes. The server never posts work requests: clients move
// bytes with one-sided WRITE (put) and READ (get) into and out of the pool,
// at the addresses the control ops (RdmaPut / RdmaGet) hand out.
//
// Thread-safe: workers call Accept concurrently.
#ifndef MEMKV_SERVER_RDMA_ENDPOINT_H_
#define MEMKV_SERVER_RDMA_ENDPOINT_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/server_config.h"
#include "memkv/status.h"
#include "proto/messages.h"
#include "storage/memory_store.h"
#include "verbs/detect.h"
#include "verbs/verbs.h"

namespace memkv {

class RdmaEndpoint {
 public:
  // nullptr (with one INFO line) when the host has no RDMA device at all, or
  // the configured device is absent while others exist (a WARN naming them):
  // the server then serves TCP only. FailedPrecondition when rdma.mtu exceeds
  // the port's active MTU (start refuses), naming both values.
  static Result<std::unique_ptr<RdmaEndpoint>> Create(const RdmaConfig& config, MemoryStore* store,
                                                      verbs::Provider& provider);
  ~RdmaEndpoint();

  // The answer to a client's offer; on acceptance `qps` receives the
  // connected responder QPs, which the connection owns (destroying them cuts
  // the client off from the pool).
  proto::RdmaAnswer Accept(const proto::RdmaOffer& offer, const std::string& peer,
                           std::vector<std::unique_ptr<verbs::QueuePair>>* qps);

  const verbs::PortInfo& port() const { return context_->port(); }
  // One line for the start-up log: device, port, MTU, GID, marking.
  std::string Describe() const;

 private:
  RdmaEndpoint() = default;

  std::mutex mu_;  // serializes QP creation on the shared CQ
  std::unique_ptr<verbs::Context> context_;
  std::unique_ptr<verbs::Registration> pool_;
  std::unique_ptr<verbs::CompletionQueue> cq_;  // required by QP creation; nothing completes on it
  verbs::ResolvedPath path_;
  verbs::Gid gid_{};
  uint32_t mtu_ = 4096;
};

}  // namespace memkv

#endif  // MEMKV_SERVER_RDMA_ENDPOINT_H_
