// InProcessServer: a MemKV server in this process, its pool registered on a
// device of a verbs::FakeFabric, serving on a loopback port. For tests that
// need the RDMA seam's faults on both sides (a real memkv process cannot
// share a fake fabric with the test).
#ifndef MEMKV_TESTS_IN_PROCESS_SERVER_H_
#define MEMKV_TESTS_IN_PROCESS_SERVER_H_

#include <memory>
#include <string>
#include <thread>

#include "config/server_config.h"
#include "server/rdma_endpoint.h"
#include "server/server.h"
#include "storage/memory_store.h"
#include "tier/tiered_store.h"
#include "verbs/fake.h"

namespace memkv {

// Auth key: 32 bytes of 0xaa (64 'a' hex characters).
class InProcessServer {
 public:
  // `drives`: file mode (the drive tier behind the pool); null: memory mode.
  InProcessServer(verbs::FakeFabric& fabric, const RdmaConfig& rdma, uint64_t pool_bytes = 64 << 20,
                  std::unique_ptr<ExtentStore> drives = nullptr) {
    MemoryStoreOptions so;
    so.max_size_bytes = pool_bytes;
    so.block_size_bytes = 1 << 20;
    store_ = std::make_unique<TieredStore>(std::move(MemoryStore::Create(so)).value(), std::move(drives),
                                           TieredStoreOptions{});
    auto ep = RdmaEndpoint::Create(rdma, &store_->memory(), fabric);
    status_ = ep.status();
    if (!ep.ok()) return;
    rdma_ = std::move(ep).value();
    ServerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.auth_key.assign(32, 0xaa);
    o.workers = 2;
    o.rdma = rdma_.get();
    server_ = std::move(Server::Create(o, store_.get())).value();
    thread_ = std::thread([this] { (void)server_->Run(); });
  }
  ~InProcessServer() {
    if (server_ != nullptr) {
      server_->Stop();
      thread_.join();
    }
    server_.reset();
    rdma_.reset();
  }
  const Status& status() const { return status_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(server_->port()); }
  MemoryStore& store() { return store_->memory(); }
  ServerMetrics& metrics() { return server_->metrics(); }
  bool rdma() const { return rdma_ != nullptr; }

 private:
  Status status_;
  std::unique_ptr<TieredStore> store_;  // memory mode
  std::unique_ptr<RdmaEndpoint> rdma_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

}  // namespace memkv

#endif  // MEMKV_TESTS_IN_PROCESS_SERVER_H_
