// InProcessServer: a MemKV server in this process, its pool registered on a
// device of a verbs::FakeFabric, serving on a loopback port. For tests that
// need the RDMA seam's faults on both sides (a real memkv process cannot
// share a fake fabric with the test). Built by the Daemon, like memkv start.
#ifndef MEMKV_TESTS_IN_PROCESS_SERVER_H_
#define MEMKV_TESTS_IN_PROCESS_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "config/server_config.h"
#include "server/daemon.h"
#include "verbs/fake.h"

namespace memkv {

// Auth key: 32 bytes of 0xaa (64 'a' hex characters).
class InProcessServer {
 public:
  // `drives`: file mode (the drive tier behind the pool); null: memory mode.
  // `configure` changes the rest of the configuration (tenants, say).
  InProcessServer(verbs::FakeFabric& fabric, const config::RdmaConfig& rdma, uint64_t pool_bytes = 64 << 20,
                  std::unique_ptr<drive::ExtentStore> drives = nullptr,
                  const std::function<void(config::ServerConfig&)>& configure = {}) {
    server::DaemonOptions options;
    config::ServerConfig& c = options.config;
    c.network.port = 0;
    c.memory.max_size_bytes = pool_bytes;
    c.memory.block_size_bytes = 1 << 20;
    c.memory.prefault = false;
    c.memory.read_check_interval_ms = 0;
    c.rdma = rdma;
    c.storage.mode = drives != nullptr ? config::StorageMode::kFile : config::StorageMode::kMemory;
    options.auth_key.assign(32, 0xaa);
    if (configure) configure(c);
    options.workers = 2;
    options.hugepages = storage::HugePagePolicy::kAuto;  // registered on a fake device: no need to pin
    server::DaemonSeams seams;
    seams.verbs = &fabric;
    seams.open_drives = [&drives](const config::StorageConfig&) -> Result<std::unique_ptr<drive::ExtentStore>> {
      return std::move(drives);
    };
    Result<std::unique_ptr<server::Daemon>> daemon =
        server::Daemon::Create(std::move(options), std::move(seams));
    status_ = daemon.status();
    if (!daemon.ok()) return;
    daemon_ = std::move(daemon).value();
    daemon_->Start();
  }

  const Status& status() const { return status_; }
  std::string address() const { return daemon_->address(); }
  storage::MemoryStore& store() { return daemon_->memory(); }
  server::ServerMetrics& metrics() { return daemon_->metrics(); }
  bool rdma() const { return daemon_->rdma() != nullptr; }

 private:
  Status status_;
  std::unique_ptr<server::Daemon> daemon_;
};

}  // namespace memkv

#endif  // MEMKV_TESTS_IN_PROCESS_SERVER_H_
