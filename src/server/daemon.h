// Daemon: the server's composition root. From a ServerConfig and a few
// injected seams it builds, in this order, the DRAM pool, the drives (file and
// direct modes), the TieredStore over them, the RDMA endpoint (when the
// configured device is on this host), the data Server and the AdminService,
// and serves until stopped. With events.publish set it binds the block events
// Publisher (docs/events.md) before the drives, and storage publishes to it. `memkv start`, the in-process test servers and
// the unit tests build a server through it, the same way.
//
// Ownership: the Daemon owns all of it. The TieredStore owns the pool and the
// drives; members are declared in construction order and destroyed in
// reverse (the events Publisher last: storage publishes to it until gone): the admin endpoint (it reads the others) first, then the server,
// then the RDMA endpoint (it registers the pool), the tier (pool and drives)
// last. The seams (the verbs provider, the callbacks) must outlive Create, the
// provider also the Daemon.
//
// Threads: Create, Start, Shutdown and the destructor belong to the thread
// that owns the Daemon. Run blocks the calling thread; Stop may be called
// from any thread, any number of times, before or during Run. The accessors
// hand out objects whose own headers state their thread rules. Every thread
// the Daemon starts, and every thread of the layers it composes, names itself
// first thing (docs/threads.md).
//
// Failures: Create returns the first failure, its message ready to print after
// "memkv start: " (it names the step and its arguments), and sets `*failed` to
// the step so a caller can tell configuration errors from a busy address;
// whatever was built before it is torn down again. Run returns an error only
// when serving itself fails (poll on the listener).
#ifndef MEMKV_SERVER_DAEMON_H_
#define MEMKV_SERVER_DAEMON_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "config/server_config.h"
#include "drive/extent_store.h"
#include "events/publisher.h"
#include "memkv/status.h"
#include "server/admin.h"
#include "server/credentials.h"
#include "server/expiry_sweeper.h"
#include "server/fleet.h"
#include "server/rdma_endpoint.h"
#include "server/server.h"
#include "server/tenant_stats.h"
#include "storage/hugepages.h"
#include "storage/memory_store.h"
#include "tier/tiered_store.h"
#include "verbs/verbs.h"

namespace memkv::server {

// Whether the pool is pinned, and why: it must then be hugetlb-backed.
struct PoolPin {
  bool rdma_registers = false;  // the configured RDMA device is on this host
  bool direct_io = false;       // storage.mode direct: O_DIRECT I/O from the pool
  // "RDMA device mlx5_0 registers it", "storage.mode direct does O_DIRECT I/O
  // from it", or empty when the pool is not pinned.
  std::string reason;
};

// The RDMA endpoint registers the pool exactly when the configured device is
// on this host (RdmaEndpoint::Create's rule, asked before the pool is mapped,
// since a registered pool must be hugetlb). Errors are the provider's.
Result<PoolPin> PoolPinFor(const config::ServerConfig& config, verbs::Provider& provider);

struct DaemonOptions {
  // Validated (ValidateServerConfig); memory.max_size_bytes must be set (the
  // caller sizes a 0 to the box). network.auth_key is not read: see auth_key.
  config::ServerConfig config;
  std::vector<uint8_t> auth_key;        // 32 bytes: the administrator key
  // The config file the server started with; Reload reads it again. Empty:
  // started without one (Reload then fails with FailedPrecondition).
  std::string config_path;
  // The data directory (memkv start --data-dir): in memory mode without
  // fleet.id, its `server-id` file keeps the server id. Empty: none (the id
  // is made at start).
  std::string data_dir;
  // What the config does not say (memkv start's flags).
  int workers = 0;                      // 0 = one per core, at most 8
  uint32_t handshake_timeout_ms = 10000;
  uint32_t write_stall_timeout_ms = 30000;
  // Overrides the pinned-pool rule (PoolPolicyFor): tests that register a
  // pool on a fake device on a host without hugepages.
  std::optional<storage::HugePagePolicy> hugepages;
};

using DriveOpener = std::function<Result<std::unique_ptr<drive::ExtentStore>>(const config::StorageConfig& storage)>;

// What the Daemon reaches the host through; every one optional.
struct DaemonSeams {
  // Null: verbs::SystemProvider(). Tests pass a verbs::FakeFabric.
  verbs::Provider* verbs = nullptr;
  // Opens the drives of storage.mode file or direct. Null: OpenDrives
  // (open_drives.h). Tests hand in a store over a fault-injecting I/O engine.
  DriveOpener open_drives;
  // The pool being faulted in (memory.prefault): bytes done of the total,
  // from one thread at a time; the last call has done == total.
  storage::PrefaultProgress prefault_progress;
  // Called once on Create's thread after the pool is mapped and before the
  // Daemon starts any thread that lives on (drive I/O, workers, admin):
  // memkv start blocks its signals there so every such thread inherits the
  // mask.
  std::function<void()> before_threads;
};

// What a reload did (Daemon::Reload).
struct ReloadReport {
  size_t tenants = 0;               // tenants configured now
  size_t keys = 0;                  // keys that may sign a Connect now, the administrator's included
  uint64_t connections_closed = 0;  // connections whose key the reload removed
  // Every worker re-checked its connections before Reload returned (else
  // the rest are closed on their workers' next sweep).
  bool all_checked = true;
  // Sections of the file that changed but apply only on a restart
  // ("memory", "network.address", ...): everything but network.auth_key and tenants.
  std::vector<std::string> restart_needed;
  // {"tenants":N,"keys":N,"connections_closed":N,"restart_needed":[...]}
  std::string ToJson() const;
  // One line for the log.
  std::string ToString() const;
};

class Daemon {
 public:
  // The step of Create that failed.
  enum class Step { kPool, kDrives, kRdma, kListen, kAdmin, kEvents };

  // Builds everything and binds both listeners (their ports are known on
  // return; connections queue until Run or Start). Logs what it builds.
  static Result<std::unique_ptr<Daemon>> Create(DaemonOptions options, DaemonSeams seams = {},
                                                Step* failed = nullptr);
  // Stops, waits for Start's thread, then tears down in member order.
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Serves on the calling thread until Stop; then drains and returns.
  Status Run();
  // Run on a thread of the Daemon's own (tests). At most once.
  void Start();
  // Asks Run to drain and return; does not wait. Any thread.
  void Stop();
  // Stop, then wait for Start's thread: Run's status (Ok without Start).
  Status Shutdown();

  // Reads the config file again (options.config_path) and applies its
  // credentials without a restart: network.auth_key and tenants[] (keys,
  // prefixes, read_only, rdma, quotas through TieredStore::SetTenants).
  // Connections whose key is still configured keep running (under their
  // tenant's new flags); those whose key is gone are answered AuthFailed and
  // closed. A file with problems changes nothing: InvalidArgument listing
  // every one. FailedPrecondition when the server has no config file, or the
  // file drops network.auth_key (the data directory's key file is read at
  // start only). Any thread; reloads run one at a time.
  Result<ReloadReport> Reload();
  TenantStats& tenant_stats() { return *tenant_stats_; }
  CredentialStore& credentials() { return *credentials_; }

  uint16_t port() const { return server_->port(); }
  uint16_t admin_port() const { return admin_->port(); }
  // "HOST:PORT" of the data listener, the port the bound one.
  std::string address() const;
  const config::ServerConfig& config() const { return options_.config; }

  tier::TieredStore& tier() { return *tier_; }
  storage::MemoryStore& memory() { return tier_->memory(); }
  Server& server() { return *server_; }
  ServerMetrics& metrics() { return server_->metrics(); }
  AdminService& admin() { return *admin_; }
  RdmaEndpoint* rdma() const { return rdma_.get(); }  // null: TCP only
  // Identity, draining and the put queue's bound (docs/fleet.md).
  FleetState& fleet() { return *fleet_; }
  // The block events Publisher; null when events.publish is not set. Any
  // thread may Publish to it while the Daemon lives.
  events::Publisher* events() const { return events_.get(); }

 private:
  explicit Daemon(DaemonOptions options) : options_(std::move(options)) {}
  Status Build(DaemonSeams& seams, Step* failed);
  Status StartEvents(Step* failed);
  // The server's id, capacity and weight (after the tier is built).
  Status StartFleet();
  void AnnounceEmptyStore();
  storage::StoreObserver StoreObserver();
  // The events StoreObserver() acts on, so the stores build no others.
  storage::StoreEventSet ObservedEvents() const;
  // How often expired values nobody looked up are freed.
  static constexpr std::chrono::milliseconds kExpirySweepInterval{100};
  // How long Reload waits for the workers to re-check their connections.
  static constexpr Nanos kReloadRecheckTimeoutNs = 5'000'000'000;

  DaemonOptions options_;
  // Declared in construction order; destroyed in reverse.
  std::unique_ptr<events::Publisher> events_;  // null: events off; outlives the storage that publishes
  // Tenants with events of their own (tenants[].events_publish), read at
  // start: tenant_events_map_[i] publishes on tenant_events_[i].
  TenantMap tenant_events_map_;
  std::vector<std::unique_ptr<events::Publisher>> tenant_events_;
  std::unique_ptr<NamespaceStats> namespaces_;  // counted by the server and by storage, so outlives both
  std::unique_ptr<Identities> identities_;      // the same
  std::unique_ptr<TenantStats> tenant_stats_;   // the tenants' request counts; outlives the credentials
  std::unique_ptr<CredentialStore> credentials_;  // administrator and tenant keys; outlives the server
  Mutex reload_mu_;                             // one Reload at a time
  config::ServerConfig file_config_ MEMKV_GUARDED_BY(reload_mu_);  // the file as last loaded
  std::unique_ptr<tier::TieredStore> tier_;  // owns the pool and the drives
  std::unique_ptr<RdmaEndpoint> rdma_;       // registers the pool; null: TCP only
  std::unique_ptr<FleetState> fleet_;        // read by the server and the admin endpoint
  std::unique_ptr<Server> server_;           // uses tier_ and rdma_
  std::unique_ptr<ExpirySweeper> sweeper_;   // frees expired values in tier_
  std::unique_ptr<AdminService> admin_;      // reads server_, tier_ and rdma_
  std::thread runner_;                       // Start's thread, running Run
  Status run_status_;                        // Run's result on runner_; read after join
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_DAEMON_H_
