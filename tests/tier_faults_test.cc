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
#include <thread>
#include <vector>

#include "drive/store_fixture.h"
#include "memkv/client.h"
#include "server/admin.h"
#include "server/server.h"
#include "storage/memory_store.h"
#include "tier/tiered_store.h"
#include "tests/harness.h"

namespace memkv {
namespace {

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
    MemoryStoreOptions mo;
    // Room for 4 values: most values live on the drives only (the pool packs
    // values, so its size alone says how many fit).
    mo.max_size_bytes = 4 * kValueBytes;
    mo.block_size_bytes = 64 << 10;
    mo.hugepages = HugePagePolicy::kNever;
    tier_ = std::make_unique<TieredStore>(std::move(MemoryStore::Create(mo)).value(), std::move(drives_.store),
                                          TieredStoreOptions{.io_threads = 2});
    ServerOptions so;
    so.port = 0;
    so.auth_key.assign(32, 0xaa);
    so.workers = 2;
    server_ = std::move(Server::Create(so, tier_.get())).value();
    thread_ = std::thread([this] { (void)server_->Run(); });
    ClientOptions co;
    co.servers = {"127.0.0.1:" + std::to_string(server_->port())};
    co.auth_key_hex = std::string(64, 'a');
    co.transport = "tcp";
    client_ = std::move(Client::Create(co)).value();
    for (int i = 0; i < kValues; ++i) ASSERT_TRUE(client_->Put(Key(i), ValueOf(i)).ok()) << i;
  }

  void TearDown() override {
    client_.reset();
    if (server_ != nullptr) {
      server_->Stop();
      thread_.join();
    }
    server_.reset();
    tier_.reset();
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

  StoreFixture drives_{2, kBlock, 8 << 20};
  std::unique_ptr<TieredStore> tier_;  // owns the pool and drives_'s store
  std::unique_ptr<Server> server_;
  std::thread thread_;
  std::unique_ptr<Client> client_;
};

TEST_F(TierFaultsTest, AFailingDriveGoesOfflineAndTheOtherKeepsServing) {
  ASSERT_EQ(ReadAll(), kValues);
  drives_.faults->FailNth(1, IoKind::kRead, 1, EIO, /*sticky=*/true);  // counts from now
  drives_.faults->FailNth(1, IoKind::kWrite, 1, EIO, /*sticky=*/true);
  const int hits = ReadAll();
  EXPECT_GT(hits, 0) << "drive 0's values must still be served";
  EXPECT_LT(hits, kValues) << "drive 1's values (not in DRAM) must be misses";
  const ExtentStoreStats stats = *tier_->DrivesStats();
  EXPECT_TRUE(stats.degraded);
  EXPECT_EQ(stats.drives[1].state, DriveState::kOffline);
  EXPECT_EQ(stats.drives[0].state, DriveState::kOnline);
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
  AdminSources sources;
  sources.metrics = &server_->metrics();
  sources.tier = tier_.get();
  sources.storage_mode = "file";
  sources.serving = [this] { return server_->serving(); };
  AdminOptions options;
  options.host = "127.0.0.1";
  auto admin = AdminService::Start(options, sources);
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  const uint16_t port = (*admin)->port();
  EXPECT_EQ(testing::HttpRequestTo(port, "GET", "/v1/health").status, 200);
  EXPECT_EQ((*admin)->Health().status, "healthy");

  drives_.faults->FailNth(1, IoKind::kRead, 1, EIO, /*sticky=*/true);
  ReadAll();
  EXPECT_EQ((*admin)->Health().status, "degraded");
  EXPECT_EQ(testing::HttpRequestTo(port, "GET", "/v1/health").status, 200);

  drives_.faults->FailNth(0, IoKind::kRead, 1, EIO, /*sticky=*/true);
  EXPECT_LE(ReadAll(), 4) << "only what DRAM still holds (4 values)";
  const HealthReport h = (*admin)->Health();
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
    drives_.faults->FailNth(d, IoKind::kRead, 1, EIO, /*sticky=*/true);
    drives_.faults->FailNth(d, IoKind::kWrite, 1, EIO, /*sticky=*/true);
  }
  ReadAll();
  ASSERT_FALSE(tier_->DrivesStats()->drives[0].state == DriveState::kOnline &&
               tier_->DrivesStats()->drives[1].state == DriveState::kOnline);
  const std::map<std::string, std::string> env = {
      {"MEMKV_SERVERS", "127.0.0.1:" + std::to_string(server_->port())}, {"MEMKV_AUTH_KEY", std::string(64, 'a')}};
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
    auto sb = DecodeSuperblock(ReadRaw(drives_.paths[0], 0, kDriveHeaderBytes), "d0");
    return sb->data_offset;
  }();
  for (uint32_t d = 0; d < 2; ++d) drives_.faults->LimitWrites(d, data_offset + (kValues / 2) * kValueBytes);
  Status s = client_->Put("fault/too-much", ValueOf(999));
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("drive"), std::string::npos) << s.message();
  EXPECT_EQ(client_->Get("fault/too-much").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadAll(), kValues) << "a full drive still serves what it holds";
  EXPECT_EQ(tier_->Counters().write_failures, 1u);
  EXPECT_EQ(tier_->Counters().drive_evictions, 0u) << "evicting cannot make room on full drives";
  EXPECT_FALSE(tier_->DrivesStats()->degraded) << "full is not failed";
}

}  // namespace
}  // namespace memkv
