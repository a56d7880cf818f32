#include "server/daemon.h"

#include <algorithm>
#include <cstdio>

#include "base/json.h"
#include "base/log.h"
#include "base/thread_name.h"
#include "base/units.h"
#include "base/version.h"
#include "server/open_drives.h"

namespace memkv::server {
namespace {

// "1.25 s" or "340 ms".
std::string FormatSeconds(uint64_t ns) {
  char buf[32];
  if (ns >= 1000000000) {
    std::snprintf(buf, sizeof(buf), "%.2f s", double(ns) / 1e9);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu ms", static_cast<unsigned long long>(ns / 1000000));
  }
  return buf;
}

// The line that ends "preparing the ... DRAM pool", with how long it took.
void LogPrefault(const storage::PoolBacking& backing) {
  if (backing.prefault_nanos == 0) {
    LOG_INFO_C("start") << "memory pool not prefaulted (memory.prefault: false): the first values written pay "
                           "for the page faults";
    return;
  }
  char rate[32];
  std::snprintf(rate, sizeof(rate), "%.2f GiB/s",
                double(backing.mapping_bytes) / double(1ULL << 30) * 1e9 / double(backing.prefault_nanos));
  LOG_INFO_C("start") << "memory pool faulted in: " << FormatSize(backing.mapping_bytes) << " in "
                      << FormatSeconds(backing.prefault_nanos) << " (" << rate << ")";
}

// The pool is mapped before RDMA registers it. Pinned it must be
// hugetlb-backed, and Create refuses when free hugepages do not cover it
// (docs/configuration.md).
Result<std::unique_ptr<storage::MemoryStore>> CreatePool(const DaemonOptions& options, const PoolPin& pin,
                                                         const storage::PrefaultProgress& progress) {
  const config::ServerConfig& c = options.config;
  storage::MemoryStoreOptions store_options;
  store_options.max_size_bytes = c.memory.max_size_bytes;
  store_options.block_size_bytes = c.memory.block_size_bytes;
  store_options.hugepages = options.hugepages.value_or(storage::PoolPolicyFor(pin.rdma_registers, pin.direct_io));
  store_options.prefault = c.memory.prefault;
  store_options.read_check_interval_ns = Nanos{c.memory.read_check_interval_ms} * 1'000'000;
  store_options.prefault_progress = progress;
  store_options.pinned_max_fraction = c.memory.pinned_max_fraction;
  store_options.pin_ttl_ms = c.memory.pin_ttl_ms;
  store_options.pin_ttl_max_ms = c.memory.pin_ttl_max_ms;
  // Faulting a pool of gigabytes in takes seconds (docs/cli.md): say so
  // before, not only after, so a first start does not look hung.
  if (store_options.prefault) {
    LOG_INFO_C("start") << "preparing the " << FormatSize(store_options.max_size_bytes)
                        << " DRAM pool: faulting it in (memory.prefault) ...";
  }
  Result<std::unique_ptr<storage::MemoryStore>> store = storage::MemoryStore::Create(store_options);
  if (store.ok()) {
    LogPrefault((*store)->backing());
    return store;
  }
  if (store_options.hugepages == storage::HugePagePolicy::kRequire &&
      store.status().code() == StatusCode::kFailedPrecondition) {
    return Status(store.status().code(), "the memory pool is pinned (" + pin.reason +
                                             "), so it must be 2 MiB hugepages: " + store.status().message());
  }
  return Status(store.status().code(), store.status().ToString());
}

// The Credentials for an administrator key and the configured tenants.
Result<std::shared_ptr<const Credentials>> CredentialsFor(std::span<const uint8_t> admin_key,
                                                          const std::vector<config::TenantConfig>& tenants,
                                                          TenantStats* stats) {
  std::vector<TenantCredential> credentials;
  credentials.reserve(tenants.size());
  for (const config::TenantConfig& t : tenants) {
    TenantCredential& c = credentials.emplace_back();
    c.identity.name = t.name;
    c.identity.prefix = t.prefix;
    c.identity.read_only = t.read_only;
    c.identity.rdma = t.rdma;
    c.identity.max_connections = t.max_connections;
    c.keys.push_back(t.key);
    if (!t.next_key.empty()) c.keys.push_back(t.next_key);
  }
  return Credentials::Create(admin_key, std::move(credentials), stats);
}

// What changed between two loads of the config file that only a restart
// applies: everything but network.auth_key and tenants.
std::vector<std::string> RestartNeeded(const config::ServerConfig& was, const config::ServerConfig& now) {
  std::vector<std::string> out;
  const config::NetworkConfig& a = was.network;
  const config::NetworkConfig& b = now.network;
  if (a.host != b.host || a.port != b.port) out.push_back("network.address");
  if (a.tls_cert != b.tls_cert) out.push_back("network.tls_cert");
  if (a.tls_key != b.tls_key) out.push_back("network.tls_key");
  if (a.max_connections != b.max_connections) out.push_back("network.max_connections");
  if (a.max_unauthenticated_connections != b.max_unauthenticated_connections) {
    out.push_back("network.max_unauthenticated_connections");
  }
  if (a.frame_timeout_ms != b.frame_timeout_ms) out.push_back("network.frame_timeout_ms");
  if (a.loads_first != b.loads_first) out.push_back("network.loads_first");
  if (a.busy_poll_us != b.busy_poll_us) out.push_back("network.busy_poll_us");
  if (!(was.memory == now.memory)) out.push_back("memory");
  if (!(was.rdma == now.rdma)) out.push_back("rdma");
  if (!(was.storage == now.storage)) out.push_back("storage");
  if (!(was.log == now.log)) out.push_back("log");
  if (!(was.metrics == now.metrics)) out.push_back("metrics");
  if (!(was.events == now.events)) out.push_back("events");
  if (!(was.fleet == now.fleet)) out.push_back("fleet");
  // Each tenant's events endpoints are bound at start.
  for (const config::TenantConfig& t : now.tenants) {
    auto before = std::find_if(was.tenants.begin(), was.tenants.end(),
                               [&](const config::TenantConfig& w) { return w.name == t.name; });
    const bool had = before != was.tenants.end() && !before->events_publish.empty();
    if ((had || !t.events_publish.empty()) &&
        (before == was.tenants.end() || before->events_publish != t.events_publish ||
         before->events_replay != t.events_replay || before->prefix != t.prefix)) {
      out.push_back("tenants[" + t.name + "].events_publish");
    }
  }
  return out;
}

}  // namespace

std::string ReloadReport::ToJson() const {
  std::string out = "{\"tenants\":" + std::to_string(tenants) + ",\"keys\":" + std::to_string(keys) +
                    ",\"connections_closed\":" + std::to_string(connections_closed) +
                    ",\"all_checked\":" + (all_checked ? "true" : "false") + ",\"restart_needed\":[";
  for (size_t i = 0; i < restart_needed.size(); ++i) {
    if (i > 0) out += ",";
    out += JsonQuote(restart_needed[i]);
  }
  return out + "]}";
}

std::string ReloadReport::ToString() const {
  std::string out = std::to_string(tenants) + " tenants, " + std::to_string(keys) + " keys, " +
                    std::to_string(connections_closed) + " connections closed (credential removed)";
  if (!all_checked) out += "; some workers had not re-checked yet, their connections follow on their next sweep";
  if (!restart_needed.empty()) {
    out += "; changed but applied only on a restart:";
    for (const std::string& field : restart_needed) out += " " + field;
  }
  return out;
}

Result<PoolPin> PoolPinFor(const config::ServerConfig& config, verbs::Provider& provider) {
  MEMKV_ASSIGN_OR_RETURN(std::vector<std::string> devices, provider.Devices());
  PoolPin pin;
  pin.rdma_registers = std::find(devices.begin(), devices.end(), config.rdma.device) != devices.end();
  pin.direct_io = config.storage.mode == config::StorageMode::kDirect;
  pin.reason = pin.rdma_registers ? "RDMA device " + config.rdma.device + " registers it"
               : pin.direct_io    ? "storage.mode direct does O_DIRECT I/O from it"
                                  : "";
  return pin;
}

Result<std::unique_ptr<Daemon>> Daemon::Create(DaemonOptions options, DaemonSeams seams, Step* failed) {
  Step ignored;
  if (failed == nullptr) failed = &ignored;
  if (seams.verbs == nullptr) seams.verbs = &verbs::SystemProvider();
  if (!seams.open_drives) seams.open_drives = OpenDrives;
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(options)));
  MEMKV_RETURN_IF_ERROR(daemon->Build(seams, failed));
  return daemon;
}

// The Publisher the config asks for (events.*).
events::PublisherOptions EventsOptions(const config::EventsConfig& e) {
  events::PublisherOptions o;
  o.publish = e.publish;
  o.replay = e.replay;
  o.topic = e.topic;
  o.encoding = e.encoding == config::EventsEncoding::kMap ? events::Encoding::kMap : events::Encoding::kArray;
  o.queue_size = e.queue_size;
  o.replay_batches = e.replay_buffer;
  o.replay_bytes = e.replay_buffer_size_bytes;
  return o;
}

Status Daemon::StartEvents(Step* failed) {
  const config::EventsConfig& e = options_.config.events;
  if (e.enabled()) {
    *failed = Step::kEvents;
    Result<std::unique_ptr<events::Publisher>> publisher = events::Publisher::Create(EventsOptions(e));
    if (!publisher.ok()) return publisher.status();
    events_ = std::move(publisher).value();
    LOG_INFO_C("start") << "block events: publishing on " << events_->publish_endpoint()
                        << (events_->replay_endpoint().empty() ? std::string(", no replay")
                                                               : ", replay on " + events_->replay_endpoint());
  }
  // Each tenant with endpoints of its own gets a publisher of its keys'
  // events alone, with the events section's topic, encoding and bounds.
  std::vector<TenantLimits> with_events;
  for (const config::TenantConfig& t : options_.config.tenants) {
    if (t.events_publish.empty()) continue;
    *failed = Step::kEvents;
    events::PublisherOptions o = EventsOptions(e);
    o.publish = t.events_publish;
    o.replay = t.events_replay;
    Result<std::unique_ptr<events::Publisher>> publisher = events::Publisher::Create(std::move(o));
    if (!publisher.ok()) {
      return Status(publisher.status().code(), "tenants[] " + t.name + ": " + publisher.status().message());
    }
    LOG_INFO_C("start") << "block events of tenant " << t.name << ": publishing on "
                        << (*publisher)->publish_endpoint()
                        << ((*publisher)->replay_endpoint().empty() ? std::string(", no replay")
                                                                    : ", replay on " + (*publisher)->replay_endpoint());
    tenant_events_.push_back(std::move(publisher).value());
    with_events.push_back({t.name, t.prefix, 0, 0});
  }
  tenant_events_map_ = TenantMap(std::move(with_events));
  return Status::Ok();
}

// A store that starts holding nothing (memory mode, freshly formatted or
// empty drives) tells routers to forget whatever they knew of this server.
void Daemon::AnnounceEmptyStore() {
  if (events_ == nullptr && tenant_events_.empty()) return;
  std::optional<drive::ExtentStoreStats> drives = tier_->DrivesStats();
  if (tier_->MemoryStats().keys == 0 && (!drives || drives->keys == 0)) {
    if (events_ != nullptr) events_->Publish(events::Event::AllCleared());
    for (const auto& publisher : tenant_events_) publisher->Publish(events::Event::AllCleared());
  }
}

// Storage changes fan out to the block events (when on) and to the
// per-namespace eviction counts.
storage::StoreObserver Daemon::StoreObserver() {
  events::Publisher* publisher = events_.get();
  NamespaceStats* namespaces = namespaces_.get();
  Identities* identities = identities_.get();
  const TenantMap* tenant_map = &tenant_events_map_;
  const std::vector<std::unique_ptr<events::Publisher>>* tenant_publishers = &tenant_events_;
  return [publisher, namespaces, identities, tenant_map, tenant_publishers](const storage::StoreEvent& e) {
    const bool stored = e.kind == storage::StoreEventKind::kStored;
    if (!stored) identities->CountRemoval(e);
    if (!stored && e.reason == storage::RemovalReason::kEvicted) {
      NamespaceCounts evicted;
      evicted.evictions = 1;
      namespaces->Count(e.key, evicted);
    }
    const std::string_view medium = e.medium == storage::StoreMedium::kDrive ? events::kMediumDrive : events::kMediumDram;
    // `key` names the value as its publisher's subscribers know it (a hash
    // of it stands in for a put without a block hash).
    auto publish = [&](events::Publisher* to, std::string_view key) {
      to->Publish(stored ? events::ValueStored(key, e.value_size, e.block_hash, e.parent_hash, e.hash_kind, medium)
                         : events::ValueRemoved(key, e.block_hash, e.hash_kind, medium));
    };
    if (publisher != nullptr) publish(publisher, e.key);
    if (tenant_map->empty()) return;
    // A tenant's own stream carries its keys alone, as its clients name them.
    const uint32_t t = tenant_map->Find(e.key);
    if (t != TenantMap::kNone) {
      publish((*tenant_publishers)[t].get(), std::string_view(e.key).substr((*tenant_map)[t].prefix.size()));
    }
  };
}

storage::StoreEventSet Daemon::ObservedEvents() const {
  // A publisher takes every event; without one the observer counts only the
  // removals the identities (and, for evictions, the namespaces) count.
  if (events_ != nullptr || !tenant_events_.empty()) return storage::StoreEventSet::All();
  storage::StoreEventSet set = storage::StoreEventSet::None();
  for (storage::RemovalReason reason : kCountedRemovals) set = set.WithRemoved(reason);
  return set.WithRemoved(storage::RemovalReason::kEvicted);
}

Status Daemon::Build(DaemonSeams& seams, Step* failed) {
  const config::ServerConfig& c = options_.config;
  *failed = Step::kRdma;
  MEMKV_ASSIGN_OR_RETURN(PoolPin pin, PoolPinFor(c, *seams.verbs));
  *failed = Step::kPool;
  MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<storage::MemoryStore> pool,
                         CreatePool(options_, pin, seams.prefault_progress));
  if (seams.before_threads) seams.before_threads();
  // The publisher's thread and libzmq's inherit the signal mask set above.
  MEMKV_RETURN_IF_ERROR(StartEvents(failed));
  namespaces_ = std::make_unique<NamespaceStats>(
      NamespaceStatsOptions{c.metrics.namespace_separator, c.metrics.namespace_top});
  tenant_stats_ = std::make_unique<TenantStats>();
  {
    IdentitiesOptions identities{{}, c.identities.require, c.identities.max};
    for (const std::string& entry : c.identities.accept) {
      MEMKV_ASSIGN_OR_RETURN(IdentitySelector selector, IdentitySelector::Parse(entry));
      identities.accept.push_back(std::move(selector));
    }
    identities_ = std::make_unique<Identities>(std::move(identities), config::TenantMapOf(c.tenants));
  }
  MEMKV_ASSIGN_OR_RETURN(std::shared_ptr<const Credentials> credentials,
                         CredentialsFor(options_.auth_key, c.tenants, tenant_stats_.get()));
  credentials_ = std::make_unique<CredentialStore>(std::move(credentials));
  {
    MutexLock lock(reload_mu_);  // no Reload runs yet; taken so every access holds it
    file_config_ = c;
    if (!options_.config_path.empty()) {
      // The baseline a reload compares with: the file as it reads now (the
      // caller may have filled in what the file left to the host).
      if (Result<config::ServerConfig> file = config::LoadServerConfigFile(options_.config_path); file.ok()) {
        file_config_ = std::move(file).value();
      }
    }
  }

  std::unique_ptr<drive::ExtentStore> drives;
  if (c.storage.mode != config::StorageMode::kMemory) {
    *failed = Step::kDrives;
    MEMKV_ASSIGN_OR_RETURN(drives, seams.open_drives(c.storage));
  }
  tier::TieredStoreOptions tier_options;
  tier_options.io_threads = static_cast<int>(c.storage.io_threads);
  tier_options.promote_on_read = c.storage.promote_on_read;
  tier_options.flush_on_loop_ns = int64_t{c.storage.flush_on_loop_us} * 1000;
  tier_options.observer = StoreObserver();
  tier_options.observed = ObservedEvents();
  tier_ = std::make_unique<tier::TieredStore>(std::move(pool), std::move(drives), tier_options);
  tier_->SetTenants(std::make_shared<const TenantMap>(config::TenantMapOf(c.tenants)));
  AnnounceEmptyStore();

  *failed = Step::kDrives;
  MEMKV_RETURN_IF_ERROR(StartFleet());

  // No device is a normal state (TCP only); a configured MTU above the port's
  // active MTU is refused here, before anything listens.
  *failed = Step::kRdma;
  MEMKV_ASSIGN_OR_RETURN(rdma_, RdmaEndpoint::Create(c.rdma, &tier_->memory(), *seams.verbs));

  ServerOptions server_options;
  server_options.host = c.network.host;
  server_options.port = c.network.port;
  server_options.auth_key = options_.auth_key;
  server_options.workers = options_.workers;
  server_options.handshake_timeout_ms = options_.handshake_timeout_ms;
  server_options.write_stall_timeout_ms = options_.write_stall_timeout_ms;
  server_options.max_connections = c.network.max_connections;
  server_options.max_unauthenticated_connections = c.network.max_unauthenticated_connections;
  server_options.frame_timeout_ms = c.network.frame_timeout_ms;
  server_options.loads_first = c.network.loads_first;
  server_options.busy_poll_us = c.network.busy_poll_us;
  server_options.max_value_bytes = c.memory.max_value_size_bytes;
  server_options.rdma = rdma_.get();
  server_options.namespaces = namespaces_.get();
  server_options.identities = identities_.get();
  server_options.credentials = credentials_.get();
  server_options.tenant_stats = tenant_stats_.get();
  server_options.fleet = fleet_.get();
  Result<std::unique_ptr<Server>> server = Server::Create(server_options, tier_.get());
  if (!server.ok()) {
    *failed = Step::kListen;
    return Status(server.status().code(), "cannot listen on " + c.network.host + ":" +
                                              std::to_string(c.network.port) + ": " + server.status().message());
  }
  server_ = std::move(server).value();
  fleet_->set_address(address());
  sweeper_ = std::make_unique<ExpirySweeper>([tier = tier_.get()](size_t max) { return tier->SweepExpired(max); },
                                             kExpirySweepInterval);

  AdminOptions admin_options;
  admin_options.host = c.network.host;
  admin_options.port = c.network.port == 0 ? 0 : static_cast<uint16_t>(server_->port() + 1);
  admin_options.tls_cert_path = c.network.tls_cert;
  admin_options.tls_key_path = c.network.tls_key;
  admin_options.admin_key = options_.auth_key;  // signed admin requests (AdminService::SetAdminKey on rotation)
  AdminSources sources;
  sources.metrics = &server_->metrics();
  sources.namespaces = namespaces_.get();
  sources.identities = identities_.get();
  sources.tenants = tenant_stats_.get();
  sources.tier = tier_.get();
  sources.rdma = rdma_.get();
  sources.events = events_.get();
  sources.storage_mode = std::string(config::StorageModeName(c.storage.mode));
  sources.version = kMemkvVersion;
  sources.data_address = address();
  sources.serving = [server = server_.get()] { return server->serving(); };
  sources.fleet = fleet_.get();
  if (!options_.config_path.empty()) {
    sources.reload = [this]() -> Result<std::string> {
      MEMKV_ASSIGN_OR_RETURN(ReloadReport report, Reload());
      return report.ToJson();
    };
  }
  Result<std::unique_ptr<AdminService>> admin = AdminService::Start(admin_options, sources);
  if (!admin.ok()) {
    *failed = Step::kAdmin;
    return Status(admin.status().code(), "cannot start the admin endpoint on " + c.network.host + ":" +
                                             std::to_string(admin_options.port) + ": " + admin.status().message());
  }
  admin_ = std::move(admin).value();
  return Status::Ok();
}

Status Daemon::StartFleet() {
  const config::ServerConfig& c = options_.config;
  FleetIdentity identity;
  identity.capacity_bytes = tier_->MemoryStats().pool_bytes;
  if (std::optional<drive::ExtentStoreStats> drives = tier_->DrivesStats()) {
    identity.capacity_bytes += drives->usable_bytes();
    // Kept in every drive's superblock: the id moves with the data.
    identity.id = drives->store_uuid.ToString();
    identity.source = "the drives' store UUID";
  } else {
    Result<std::string> id = MemoryModeServerId(c.fleet, options_.data_dir, &identity.source);
    if (!id.ok()) return id.status();
    identity.id = std::move(id).value();
  }
  identity.weight = c.fleet.weight.value_or(0);
  // Unset: half the pool (a put waiting for the drives holds its pool space).
  const uint64_t busy_queue = c.storage.busy_queue_size_bytes.value_or(tier_->MemoryStats().pool_bytes / 2);
  fleet_ = std::make_unique<FleetState>(std::move(identity), busy_queue);
  const FleetIdentity& id = fleet_->identity();
  LOG_INFO_C("start") << "server id " << id.id << " (" << id.source << ") weight " << fleet_->effective_weight()
                      << (id.weight == 0 ? " (its capacity, " + FormatSize(id.capacity_bytes) + ")"
                                         : " (fleet.weight; capacity " + FormatSize(id.capacity_bytes) + ")")
                      << "; puts answered Busy at "
                      << (busy_queue == 0 ? std::string("never (storage.busy_queue_size: 0)")
                                          : FormatSize(busy_queue) + " waiting for the drives");
  return Status::Ok();
}

Daemon::~Daemon() {
  Status s = Shutdown();
  if (!s.ok()) LOG_ERROR_C("daemon") << "serving ended with " << s.ToString();
}

std::string Daemon::address() const { return options_.config.network.host + ":" + std::to_string(port()); }

Status Daemon::Run() { return server_->Run(); }

void Daemon::Start() {
  runner_ = std::thread([this] {
    SetThreadName("memkv-accept");
    run_status_ = server_->Run();
  });
}

void Daemon::Stop() {
  if (server_ != nullptr) server_->Stop();
}

Result<ReloadReport> Daemon::Reload() {
  MutexLock lock(reload_mu_);
  if (options_.config_path.empty()) {
    return FailedPrecondition("this server was started without a config file (memkv start --config PATH), so a "
                              "reload has nothing to read; nothing changed");
  }
  Result<config::ServerConfig> loaded = config::LoadServerConfigFile(options_.config_path);
  if (!loaded.ok()) {
    return Status(loaded.status().code(), "reload of " + options_.config_path + " changed nothing: the file has " +
                                              "problems:\n" + loaded.status().message());
  }
  const config::ServerConfig& now = *loaded;
  std::vector<uint8_t> admin_key = options_.auth_key;
  if (now.network.auth_key) {
    admin_key = *now.network.auth_key;
  } else if (file_config_.network.auth_key) {
    return FailedPrecondition("reload of " + options_.config_path + " changed nothing: it drops network.auth_key, " +
                              "and the data directory's key file that would replace it is read at start only; " +
                              "set network.auth_key to the administrator key, or restart");
  }
  Result<std::shared_ptr<const Credentials>> credentials = CredentialsFor(admin_key, now.tenants, tenant_stats_.get());
  if (!credentials.ok()) {
    return Status(credentials.status().code(),
                  "reload of " + options_.config_path + " changed nothing: " + credentials.status().message());
  }
  ReloadReport report;
  report.tenants = (*credentials)->tenant_count();
  report.keys = (*credentials)->key_count();
  report.restart_needed = RestartNeeded(file_config_, now);
  tier_->SetTenants(std::make_shared<const TenantMap>(config::TenantMapOf(now.tenants)));
  const uint64_t revoked_before = server_->credentials_revoked();
  credentials_->Replace(std::move(credentials).value());
  options_.auth_key = std::move(admin_key);
  if (admin_ != nullptr) admin_->SetAdminKey(options_.auth_key);
  report.all_checked = server_->RecheckCredentials(kReloadRecheckTimeoutNs);
  report.connections_closed = server_->credentials_revoked() - revoked_before;
  file_config_ = now;
  LOG_INFO_C("daemon") << "reloaded " << options_.config_path << ": " << report.ToString();
  return report;
}

Status Daemon::Shutdown() {
  Stop();
  if (!runner_.joinable()) return Status::Ok();
  runner_.join();
  return run_status_;
}

}  // namespace memkv::server
