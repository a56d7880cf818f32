// Drive faults seen through the server: an in-process server whose drive
// tier runs on a fault-injecting I/O engine (the one seam where a failing disk
// is provoked on demand), driven by a real client over loopback TCP.
//   - an I/O error on one drive takes it offline: its values become misses,
//     the other drive keeps serving, new puts land there, the store reports
//     degraded;
//   - every drive full: puts fail cleanly with ResourceExhausted and reads
//     keep being served.
#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "drive/store_fixture.h"
#include "memkv/client.h"
#include "server/daemon.h"
#include "tests/harness.h"
#include "verbs/fake.h"

namespace memkv {
namespace {

using server::AdminService;
using server::Daemon;
using server::DaemonOptions;
using server::DaemonSeams;
using server::HealthReport;

constexpr uint64_t kBlock = 64 << 10;
constexpr size_t kValueBytes = 48 << 10;  // one extent each: values alternate over the drives
constexpr int kValues = 24;

std::vector<uint8_t> ValueOf(int i) {
  std::vector<uint8_t> v(kValueBytes);
  for (size_t j = 0; j < v.size(); ++j) v[j] = uint8_t(i * 131 + j * 7 + (j >> 9));
  return v;
}

class TierFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(drives_.Format().ok());
    Status opened = drives_.OpenFaulty();
    ASSERT_TRUE(opened.ok()) << opened.ToString();
    DaemonOptions options;
    config::ServerConfig& c = options.config;
    c.network.port = 0;
    // Room for 4 values: most values live on the drives only (the pool packs
    // values, so its size alone says how many fit).
    c.memory.max_size_bytes = 4 * kValueBytes;
    c.memory.block_size_bytes = 64 << 10;
    c.memory.prefault = false;
    c.memory.read_check_interval_ms = 0;
    c.rdma.device = "none";  // not on the fake fabric: TCP only
    c.storage.mode = config::StorageMode::kFile;
    c.storage.io_threads = 2;
    options.auth_key.assign(32, 0xaa);
    options.workers = 2;
    options.hugepages = storage::HugePagePolicy::kNever;
    DaemonSeams seams;
    seams.verbs = &fabric_;
    // The drives are drives_'s, opened over the fault-injecting engine.
    seams.open_drives = [this](const config::StorageConfig&) -> Result<std::unique_ptr<drive::ExtentStore>> {
      return std::move(drives_.store);
    };
    auto daemon = Daemon::Create(std::move(options), std::move(seams));
    ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
    daemon_ = std::move(daemon).value();
    daemon_->Start();
    ClientOptions co;
    co.servers = {daemon_->address()};
    co.auth_key_hex = std::string(64, 'a');
    co.transport = "tcp";
    client_ = std::move(Client::Create(co)).value();
    for (int i = 0; i < kValues; ++i) ASSERT_TRUE(client_->Put(Key(i), ValueOf(i)).ok()) << i;
  }

  void TearDown() override {
    client_.reset();
    if (daemon_ != nullptr) {
      EXPECT_TRUE(daemon_->Shutdown().ok());
    }
    daemon_.reset();
  }

  static std::string Key(int i) { return "fault/" + std::to_string(i); }

  // Reads every value: each is byte-exact or a clean miss. Returns the hits.
  int ReadAll() {
    int hits = 0;
    for (int i = 0; i < kValues; ++i) {
      Result<std::vector<uint8_t>> got = client_->Get(Key(i));
      if (got.ok()) {
        EXPECT_TRUE(*got == ValueOf(i)) << i;
        ++hits;
      } else {
        EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << i << ": " << got.status().ToString();
      }
    }
    return hits;
  }

  drive::StoreFixture drives_{2, kBlock, 8 << 20};
  verbs::FakeFabric fabric_;          // no device: the daemon serves TCP only
  std::unique_ptr<Daemon> daemon_;    // owns the pool and drives_'s store
  std::unique_ptr<Client> client_;
};

TEST_F(TierFaultsTest, AFailingDriveGoesOfflineAndTheOtherKeepsServing) {
  ASSERT_EQ(ReadAll(), kValues);
  drives_.faults->FailNth(1, drive::IoKind::kRead, 1, EIO, /*sticky=*/true);  // counts from now
  drives_.faults->FailNth(1, drive::IoKind::kWrite, 1, EIO, /*sticky=*/true);
  const int hits = ReadAll();
  EXPECT_GT(hits, 0) << "drive 0's values must still be served";
  EXPECT_LT(hits, kValues) << "drive 1's values (not in DRAM) must be misses";
  const drive::ExtentStoreStats stats = *daemon_->tier().DrivesStats();
  EXPECT_TRUE(stats.degraded);
  EXPECT_EQ(stats.drives[1].state, drive::DriveState::kOffline);
  EXPECT_EQ(stats.drives[0].state, drive::DriveState::kOnline);
  // New puts go to the drive that is left, and read back.
  for (int i = 0; i < 8; ++i) {
    Status s = client_->Put("fault/new/" + std::to_string(i), ValueOf(100 + i));
    ASSERT_TRUE(s.ok()) << i << ": " << s.ToString();
  }
  for (int i = 0; i < 8; ++i) {
    Result<std::vector<uint8_t>> got = client_->Get("fault/new/" + std::to_string(i));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(*got == ValueOf(100 + i));
  }
  EXPECT_EQ(ReadAll(), hits) << "the misses stay misses; the hits stay hits";
}

TEST_F(TierFaultsTest, HealthGoesDegradedThenUnhealthyWith503) {
  AdminService* admin = &daemon_->admin();
  const uint16_t port = admin->port();
  EXPECT_EQ(testing::HttpRequestTo(port, "GET", "/v1/health").status, 200);
  EXPECT_EQ(admin->Health().status, "healthy");

  drives_.faults->FailNth(1, drive::IoKind::kRead, 1, EIO, /*sticky=*/true);
  ReadAll();
  EXPECT_EQ(admin->Health().status, "degraded");
  EXPECT_EQ(testing::HttpRequestTo(port, "GET", "/v1/health").status, 200);

  drives_.faults->FailNth(0, drive::IoKind::kRead, 1, EIO, /*sticky=*/true);
  EXPECT_LE(ReadAll(), 4) << "only what DRAM still holds (4 values)";
  const HealthReport h = admin->Health();
  EXPECT_EQ(h.status, "unhealthy");
  EXPECT_EQ(h.drives_online, 0u);
  EXPECT_EQ(h.drives_offline, 2u);
  EXPECT_NE(h.reason.find("no drive is online"), std::string::npos) << h.reason;
  testing::HttpResult r = testing::HttpRequestTo(port, "GET", "/v1/health");
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("\"unhealthy\""), std::string::npos) << r.body;
  EXPECT_EQ(client_->Put("fault/after", ValueOf(5)).code(), StatusCode::kUnavailable)
      << "no drive to write through to";
}

// Every Unavailable once said "is the server running?", even when the
// server was up and answered that its drives were offline.
TEST_F(TierFaultsTest, EveryDriveOfflineIsReportedAsTheServersAnswerNotAsADownServer) {
  for (uint32_t d = 0; d < 2; ++d) {
    drives_.faults->FailNth(d, drive::IoKind::kRead, 1, EIO, /*sticky=*/true);
    drives_.faults->FailNth(d, drive::IoKind::kWrite, 1, EIO, /*sticky=*/true);
  }
  ReadAll();
  ASSERT_FALSE(daemon_->tier().DrivesStats()->drives[0].state == drive::DriveState::kOnline &&
               daemon_->tier().DrivesStats()->drives[1].state == drive::DriveState::kOnline);
  const std::map<std::string, std::string> env = {
      {"MEMKV_SERVERS", daemon_->address()}, {"MEMKV_AUTH_KEY", std::string(64, 'a')}};
  testing::CommandResult r = testing::RunMemkv({"put", "fault/cli"}, env, "value");
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("drive"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("offline"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("is the server running"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the server is up and answered this itself"), std::string::npos) << r.err;
}

TEST_F(TierFaultsTest, FullDrivesFailPutsCleanlyAndKeepServingReads) {
  // Both filesystems fill up right after the values already written (each
  // drive filled from its first unit; the journals, before the data, keep
  // working).
  const uint64_t data_offset = [&] {
    auto sb = drive::DecodeSuperblock(drive::ReadRaw(drives_.paths[0], 0, drive::kDriveHeaderBytes), "d0");
    return sb->data_offset;
  }();
  for (uint32_t d = 0; d < 2; ++d) drives_.faults->LimitWrites(d, data_offset + (kValues / 2) * kValueBytes);
  Status s = client_->Put("fault/too-much", ValueOf(999));
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("drive"), std::string::npos) << s.message();
  EXPECT_EQ(client_->Get("fault/too-much").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadAll(), kValues) << "a full drive still serves what it holds";
  EXPECT_EQ(daemon_->tier().Counters().write_failures, 1u);
  EXPECT_EQ(daemon_->tier().Counters().drive_evictions, 0u) << "evicting cannot make room on full drives";
  EXPECT_FALSE(daemon_->tier().DrivesStats()->degraded) << "full is not failed";
}

}  // namespace
}  // namespace memkv
