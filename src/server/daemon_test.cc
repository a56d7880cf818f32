// The Daemon as its users see it: built from a config, serving a real client
// (the public API) on loopback, stopped cleanly; in memory mode, in file mode
// over a drive file in a temporary directory (created on the first start,
// found again on the next), and with its pool registered on a fake RDMA
// device. And the step a failed start names.
#include "server/daemon.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "drive/test_util.h"
#include "memkv/client.h"
#include "verbs/fake.h"

namespace memkv::server {
namespace {

using drive::Pattern;
using drive::TempDir;

const std::vector<uint8_t> kKey(32, 0xaa);

DaemonOptions MemoryOptions() {
  DaemonOptions options;
  config::ServerConfig& c = options.config;
  c.network.port = 0;
  c.memory.max_size_bytes = 16 << 20;
  c.memory.block_size_bytes = 1 << 20;
  c.memory.prefault = false;
  c.rdma.device = "srv0";
  c.storage.mode = config::StorageMode::kMemory;
  options.auth_key = kKey;
  options.workers = 2;
  options.hugepages = storage::HugePagePolicy::kNever;
  return options;
}

DaemonOptions FileOptions(const TempDir& dir) {
  DaemonOptions options = MemoryOptions();
  config::StorageConfig& s = options.config.storage;
  s.mode = config::StorageMode::kFile;
  s.block_size_bytes = 1 << 20;
  s.drives = {config::DriveConfig{.media = dir.File("data/drive0.memkv"), .size_bytes = 128 << 20}};
  s.io_threads = 2;
  return options;
}

DaemonSeams On(verbs::FakeFabric& fabric) {
  DaemonSeams seams;
  seams.verbs = &fabric;
  return seams;
}

std::unique_ptr<Client> ClientOf(const Daemon& daemon) {
  ClientOptions o;
  o.servers = {daemon.address()};
  o.auth_key_hex = std::string(64, 'a');
  o.transport = "tcp";
  o.timeout_ms = 5000;
  Result<std::unique_ptr<Client>> client = Client::Create(o);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

std::unique_ptr<Daemon> Started(DaemonOptions options, verbs::FakeFabric& fabric) {
  Result<std::unique_ptr<Daemon>> daemon = Daemon::Create(std::move(options), On(fabric));
  EXPECT_TRUE(daemon.ok()) << daemon.status().ToString();
  if (!daemon.ok()) return nullptr;
  (*daemon)->Start();
  return std::move(daemon).value();
}

TEST(DaemonTest, MemoryModeServesAClientAndStopsCleanly) {
  verbs::FakeFabric fabric;  // no device: TCP only
  std::unique_ptr<Daemon> daemon = Started(MemoryOptions(), fabric);
  ASSERT_NE(daemon, nullptr);
  EXPECT_NE(daemon->port(), 0);
  EXPECT_NE(daemon->admin_port(), 0);
  EXPECT_EQ(daemon->address(), "127.0.0.1:" + std::to_string(daemon->port()));
  EXPECT_EQ(daemon->rdma(), nullptr);
  EXPECT_EQ(daemon->tier().DrivesStats(), std::nullopt) << "memory mode has no drives";

  std::unique_ptr<Client> client = ClientOf(*daemon);
  ASSERT_NE(client, nullptr);
  const std::vector<uint8_t> value = Pattern(100000, 1);
  ASSERT_TRUE(client->Put("m/1", value).ok());
  Result<std::vector<uint8_t>> got = client->Get("m/1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == value);
  EXPECT_TRUE(daemon->memory().Exists("m/1"));
  EXPECT_EQ(client->Get("m/absent").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(daemon->admin().Health().status, "healthy");
  EXPECT_GT(daemon->metrics().connections_accepted.Value(), 0u);

  EXPECT_TRUE(daemon->Shutdown().ok());
  EXPECT_FALSE(daemon->server().serving());
  EXPECT_TRUE(daemon->Shutdown().ok()) << "a second Shutdown is harmless";
  client.reset();
  ClientOptions o;
  o.servers = {daemon->address()};
  o.auth_key_hex = std::string(64, 'a');
  o.transport = "tcp";
  o.timeout_ms = 2000;
  auto after = Client::Create(o);
  if (after.ok()) {
    EXPECT_EQ((*after)->Put("m/2", value).code(), StatusCode::kUnavailable) << "the listener is closed";
  }
}

TEST(DaemonTest, FileModeCreatesItsDriveAndFindsTheValuesAgainAfterARestart) {
  TempDir dir;
  verbs::FakeFabric fabric;
  const std::vector<uint8_t> small = Pattern(4096, 2);
  const std::vector<uint8_t> big = Pattern(6 << 20, 3);  // over a quarter of the pool: the drives only
  {
    std::unique_ptr<Daemon> daemon = Started(FileOptions(dir), fabric);
    ASSERT_NE(daemon, nullptr);
    ASSERT_TRUE(daemon->tier().DrivesStats().has_value());
    EXPECT_EQ(daemon->tier().DrivesStats()->drives.size(), 1u);
    std::unique_ptr<Client> client = ClientOf(*daemon);
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->Put("f/small", small).ok());
    Status put = client->Put("f/big", big);
    ASSERT_TRUE(put.ok()) << put.ToString();
    EXPECT_EQ(daemon->admin().Health().status, "healthy");
    client.reset();
    EXPECT_TRUE(daemon->Shutdown().ok());
  }
  // A new daemon over the same drive file: a fresh pool, the values on the drive.
  std::unique_ptr<Daemon> daemon = Started(FileOptions(dir), fabric);
  ASSERT_NE(daemon, nullptr);
  EXPECT_EQ(daemon->tier().DrivesStats()->keys, 2u) << "re-adopted from the journal";
  EXPECT_FALSE(daemon->memory().Exists("f/small")) << "the pool starts empty";
  std::unique_ptr<Client> client = ClientOf(*daemon);
  ASSERT_NE(client, nullptr);
  Result<std::vector<uint8_t>> got = client->Get("f/small");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == small);
  got = client->Get("f/big");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == big);
  client.reset();
  EXPECT_TRUE(daemon->Shutdown().ok());
}

// Put options through a real client: a restart keeps TTLs and retention (a
// short TTL still ends after it; a long one still runs), and a pinned put
// past memory.pinned_max_fraction is refused naming it.
TEST(DaemonTest, ARestartKeepsTtlsAndPinsPastTheCapAreRefused) {
  TempDir dir;
  verbs::FakeFabric fabric;
  const std::vector<uint8_t> value = Pattern(4096, 4);
  PutOptions short_lived;
  short_lived.ttl_ms = 1500;
  PutOptions long_lived;
  long_lived.ttl_ms = 3'600'000;
  long_lived.retention = Retention::kEvictFirst;
  {
    std::unique_ptr<Daemon> daemon = Started(FileOptions(dir), fabric);
    ASSERT_NE(daemon, nullptr);
    std::unique_ptr<Client> client = ClientOf(*daemon);
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->PutWith("t/short", value, short_lived).ok());
    ASSERT_TRUE(client->PutWith("t/long", value, long_lived).ok());
    ASSERT_TRUE(client->Put("t/plain", value).ok());
    client.reset();
    EXPECT_TRUE(daemon->Shutdown().ok());
  }
  DaemonOptions options = FileOptions(dir);
  options.config.memory.pinned_max_fraction = 0.25;  // 4 MiB of the 16 MiB pool
  std::unique_ptr<Daemon> daemon = Started(std::move(options), fabric);
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Client> client = ClientOf(*daemon);
  ASSERT_NE(client, nullptr);
  // Whether the restart took longer than 1.5 s or not, the short TTL ends:
  // if the restart had lost it, the value would stay forever.
  const Nanos deadline = MonotonicNanos() + 30'000'000'000;
  for (;;) {
    Result<bool> there = client->Exists("t/short");
    ASSERT_TRUE(there.ok()) << there.status().ToString();
    if (!*there) break;
    ASSERT_LT(MonotonicNanos(), deadline) << "t/short outlived its TTL across a restart";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the next poll
  }
  EXPECT_EQ(client->Get("t/short").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(client->Get("t/long").ok());
  EXPECT_TRUE(client->Get("t/plain").ok());

  PutOptions pin;
  pin.retention = Retention::kPinned;
  const std::vector<uint8_t> three_mib = Pattern(3 << 20, 5);
  ASSERT_TRUE(client->PutWith("p/1", three_mib, pin).ok());
  Status refused = client->PutWith("p/2", three_mib, pin);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused.ToString();
  EXPECT_NE(refused.message().find("memory.pinned_max_fraction"), std::string::npos) << refused.ToString();
  EXPECT_EQ(client->Get("p/2").status().code(), StatusCode::kNotFound) << "nothing stored";
  EXPECT_TRUE(client->Get("p/1").ok());
  client.reset();
  EXPECT_TRUE(daemon->Shutdown().ok());
}

TEST(DaemonTest, FakeVerbsRegisterThePoolUntilTheDaemonIsGone) {
  verbs::FakeFabric fabric;
  fabric.AddDevice("srv0");
  {
    std::unique_ptr<Daemon> daemon = Started(MemoryOptions(), fabric);
    ASSERT_NE(daemon, nullptr);
    ASSERT_NE(daemon->rdma(), nullptr);
    EXPECT_EQ(fabric.LiveRegistrations(), 1u) << "the whole pool, once";
    EXPECT_TRUE(daemon->admin().Health().rdma_active);
    std::unique_ptr<Client> client = ClientOf(*daemon);  // TCP beside RDMA
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->Put("r/1", Pattern(5000, 4)).ok());
    EXPECT_TRUE(*client->Get("r/1") == Pattern(5000, 4));
    client.reset();
    EXPECT_TRUE(daemon->Shutdown().ok());
    EXPECT_EQ(fabric.LiveRegistrations(), 1u) << "registered while the daemon exists";
  }
  EXPECT_EQ(fabric.LiveRegistrations(), 0u);
  EXPECT_EQ(fabric.LiveQps(), 0u);
}

TEST(DaemonTest, AFailedStartNamesItsStepAndLeavesNothingBehind) {
  verbs::FakeFabric fabric;
  verbs::PortInfo port = verbs::FakeFabric::HealthyPort("srv0");
  port.active_mtu = 1024;
  fabric.AddDevice(port);
  Daemon::Step step = Daemon::Step::kPool;
  Result<std::unique_ptr<Daemon>> daemon = Daemon::Create(MemoryOptions(), On(fabric), &step);
  ASSERT_FALSE(daemon.ok());
  EXPECT_EQ(step, Daemon::Step::kRdma);
  EXPECT_EQ(daemon.status().code(), StatusCode::kFailedPrecondition) << daemon.status().ToString();
  EXPECT_EQ(fabric.LiveRegistrations(), 0u);

  // The data port taken by another daemon: the second one's pool was
  // registered before it tried to listen, and is unregistered again.
  verbs::FakeFabric healthy;
  healthy.AddDevice("srv0");
  std::unique_ptr<Daemon> first = Started(MemoryOptions(), healthy);
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(healthy.LiveRegistrations(), 1u);
  DaemonOptions same = MemoryOptions();
  same.config.network.port = first->port();
  daemon = Daemon::Create(std::move(same), On(healthy), &step);
  ASSERT_FALSE(daemon.ok());
  EXPECT_EQ(step, Daemon::Step::kListen);
  EXPECT_NE(daemon.status().message().find("cannot listen on 127.0.0.1:" + std::to_string(first->port())),
            std::string::npos)
      << daemon.status().ToString();
  EXPECT_EQ(healthy.LiveRegistrations(), 1u) << "only the first daemon's pool";
}

TEST(DaemonTest, ThePoolIsFaultedInBeforeTheThreadsHookWhichRunsOnce) {
  verbs::FakeFabric fabric;
  DaemonOptions options = MemoryOptions();
  options.config.memory.prefault = true;
  uint64_t last_done = 0, last_total = 0;
  int hooks = 0;
  DaemonSeams seams = On(fabric);
  seams.prefault_progress = [&](uint64_t done, uint64_t total) {
    EXPECT_EQ(hooks, 0) << "progress comes before the hook";
    last_done = done;
    last_total = total;
  };
  seams.before_threads = [&] { ++hooks; };
  Result<std::unique_ptr<Daemon>> daemon = Daemon::Create(std::move(options), std::move(seams));
  ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
  EXPECT_EQ(hooks, 1);
  EXPECT_GT(last_total, 0u);
  EXPECT_EQ(last_done, last_total) << "the last call says the pool is done";
  EXPECT_GT((*daemon)->memory().backing().prefault_nanos, 0u);
}

// Publishing events of a fresh store: the one AllBlocksCleared, once sent.
uint64_t PublishedOnceSent(const Daemon& daemon) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (daemon.events()->counters().batches_published == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  return daemon.events()->counters().events_published;
}

TEST(DaemonTest, EventsAreOffUnlessConfigured) {
  verbs::FakeFabric fabric;
  std::unique_ptr<Daemon> daemon = Started(MemoryOptions(), fabric);
  ASSERT_NE(daemon, nullptr);
  EXPECT_EQ(daemon->events(), nullptr);
  EXPECT_EQ(daemon->admin().MetricsText().find("memkv_events_"), std::string::npos);
}

TEST(DaemonTest, AFreshStoreAnnouncesAllBlocksClearedAndARestartWithValuesDoesNot) {
  TempDir dir;
  verbs::FakeFabric fabric;
  DaemonOptions options = FileOptions(dir);
  options.config.events.publish = "tcp://127.0.0.1:0";
  {
    std::unique_ptr<Daemon> daemon = Started(options, fabric);
    ASSERT_NE(daemon, nullptr);
    ASSERT_NE(daemon->events(), nullptr);
    EXPECT_EQ(daemon->events()->counters().events_queued, 1u) << "a freshly formatted drive holds nothing";
    EXPECT_EQ(PublishedOnceSent(*daemon), 1u);
    EXPECT_NE(daemon->admin().MetricsText().find("memkv_events_published_total 1"), std::string::npos);
    std::unique_ptr<Client> client = ClientOf(*daemon);
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->Put("e/kept", Pattern(4096, 1)).ok());
    client.reset();
    EXPECT_TRUE(daemon->Shutdown().ok());
  }
  std::unique_ptr<Daemon> daemon = Started(options, fabric);
  ASSERT_NE(daemon, nullptr);
  EXPECT_EQ(daemon->events()->counters().events_queued, 0u) << "the drive still holds a value";
}

TEST(DaemonTest, ATakenEventsAddressIsAStartErrorNamingIt) {
  verbs::FakeFabric fabric;
  DaemonOptions options = MemoryOptions();
  options.config.events.publish = "tcp://127.0.0.1:0";
  std::unique_ptr<Daemon> first = Started(options, fabric);
  ASSERT_NE(first, nullptr);
  DaemonOptions same = MemoryOptions();
  same.config.events.publish = first->events()->publish_endpoint();
  Daemon::Step step = Daemon::Step::kPool;
  Result<std::unique_ptr<Daemon>> second = Daemon::Create(std::move(same), On(fabric), &step);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(step, Daemon::Step::kEvents);
  EXPECT_NE(second.status().message().find(first->events()->publish_endpoint()), std::string::npos)
      << second.status().ToString();
  EXPECT_NE(second.status().message().find("EADDRINUSE"), std::string::npos) << second.status().ToString();
}

TEST(DaemonTest, StopBeforeRunMakesRunReturnAtOnce) {
  verbs::FakeFabric fabric;
  Result<std::unique_ptr<Daemon>> daemon = Daemon::Create(MemoryOptions(), On(fabric));
  ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
  (*daemon)->Stop();
  EXPECT_TRUE((*daemon)->Run().ok());
}

}  // namespace
}  // namespace memkv::server
