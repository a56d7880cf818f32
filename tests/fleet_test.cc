// A server as one of a fleet (docs/fleet.md), met where a user meets it:
// real `memkv start` processes on loopback, and an in-process server whose
// drive writes can be held (the I/O engine seam) to build a put queue.
//   - ServerInfo: the id (fleet.id; the data directory's server-id file,
//     kept across restarts; the drives' store UUID in file mode, the same
//     after a restart and after the volume moves to another path and port),
//     the capacity and the weight;
//   - drain and undrain by the signed admin routes and by `memkv admin`:
//     unsigned refused 401, ready 503 "draining" while health stays healthy,
//     every put path answered Draining, reads served, undrain restores;
//   - Busy: puts waiting for the drives at the bound shed new puts, gets are
//     served, and nothing stored is lost;
//   - a restarted file-mode server is never ready before its drive index is
//     loaded: when /v1/ready first answers 200 every stored key is served.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/checksum.h"
#include "base/json.h"
#include "drive/store_fixture.h"
#include "http/http_client.h"
#include "memkv/client.h"
#include "proto/messages.h"
#include "server/admin_auth.h"
#include "server/daemon.h"
#include "tests/harness.h"
#include "tests/raw_connection.h"
#include "verbs/fake.h"

namespace memkv::testing {
namespace {

std::vector<uint8_t> KeyBytes() {
  std::vector<uint8_t> key;
  for (int i = 0; i < 32; ++i) key.push_back(uint8_t(i));  // kTestKeyHex
  return key;
}

// A raw, authenticated connection (the client library of this tree reads the
// fleet codes as unknown, as an older client does; the frames are what any
// client gets).
std::unique_ptr<RawConnection> Connect(uint16_t port, const std::string& key_hex = kTestKeyHex) {
  auto c = RawConnection::Open(port);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return nullptr;
  auto hello = (*c)->Handshake(key_hex);
  EXPECT_TRUE(hello.ok()) << hello.status().ToString();
  return std::move(c).value();
}

proto::ServerInfo InfoOf(RawConnection& c) {
  static std::atomic<uint64_t> id{1000};
  EXPECT_TRUE(c.SendBytes(c.BuildFrame(proto::Opcode::kServerInfo, "", {}, id++)).ok());
  auto r = c.Read();
  proto::ServerInfo info;
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return info;
  EXPECT_EQ(r->header.status, StatusCode::kOk) << r->message();
  Status s = proto::DecodeServerInfo(r->meta, &info);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return info;
}

proto::ServerInfo InfoOf(uint16_t port) {
  auto c = Connect(port);
  return c == nullptr ? proto::ServerInfo{} : InfoOf(*c);
}

RawResponse Send(RawConnection& c, proto::Opcode op, const std::string& meta, const std::vector<uint8_t>& payload = {}) {
  static std::atomic<uint64_t> id{1};
  EXPECT_TRUE(c.SendBytes(c.BuildFrame(op, meta, payload, id++)).ok());
  auto r = c.Read();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : RawResponse{};
}

bool IsUuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (s[i] == '-')) return false;
    if (!dash && !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

JsonValue StatusDoc(uint16_t admin_port) {
  HttpResult r = HttpRequestTo(admin_port, "GET", "/v1/status");
  EXPECT_EQ(r.status, 200) << r.body;
  auto doc = ParseJson(r.body);
  EXPECT_TRUE(doc.ok()) << r.body;
  return doc.ok() ? *doc : JsonValue{};
}

double Num(const JsonValue& d, std::initializer_list<std::string_view> path) {
  const JsonValue* v = d.Path(path);
  return v == nullptr ? -1 : v->number;
}

std::string Str(const JsonValue& d, std::initializer_list<std::string_view> path) {
  const JsonValue* v = d.Path(path);
  return v == nullptr ? "" : v->string;
}

// A signed POST to an admin route, as `memkv admin` sends it.
http::HttpClientResponse SignedPost(uint16_t admin_port, const std::string& path,
                                    const std::vector<uint8_t>& key = KeyBytes()) {
  http::HttpGetOptions o;
  o.host = "127.0.0.1";
  o.port = admin_port;
  o.path = path;
  o.method = "POST";
  o.headers.push_back(
      {"Authorization", server::SignAdminRequest(key, "POST", path, "", server::UnixMillis(), *server::NewAdminNonce())});
  auto r = http::HttpGet(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : http::HttpClientResponse{};
}

// ---- identity ----

TEST(FleetIdentityTest, MemoryModeFleetIdAndWeight) {
  ServerProcess server;
  ServerSpec spec;
  spec.memory_max_size = "64 MiB";
  spec.extra_yaml = "fleet:\n  id: cache-a.1_x\n  weight: 300\n";
  ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();
  const proto::ServerInfo info = InfoOf(server.port());
  EXPECT_EQ(info.id, "cache-a.1_x");
  EXPECT_EQ(info.capacity_bytes, 64ULL << 20);
  EXPECT_EQ(info.weight, 300u);
  EXPECT_FALSE(info.draining);
  EXPECT_FALSE(info.busy);
  const JsonValue doc = StatusDoc(server.AdminPort());
  EXPECT_EQ(Str(doc, {"server_id"}), "cache-a.1_x");
  EXPECT_EQ(Str(doc, {"state"}), "serving");
  EXPECT_EQ(Num(doc, {"weight"}), 300);
  EXPECT_EQ(Num(doc, {"capacity_bytes"}), double(64ULL << 20));
  EXPECT_NE(server.Stderr().find("server id cache-a.1_x (fleet.id) weight 300"), std::string::npos)
      << server.Stderr();
  HttpResult metrics = HttpRequestTo(server.AdminPort(), "GET", "/v1/metrics");
  EXPECT_EQ(PrometheusSamples(metrics.body)["memkv_server_info{server_id=\"cache-a.1_x\"}"], 1) << metrics.body;
}

TEST(FleetIdentityTest, MemoryModeIdIsKeptInTheDataDirectory) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  ServerSpec spec;
  spec.memory_max_size = "32 MiB";
  spec.data_dir = data;
  std::string first;
  {
    ServerProcess server;
    ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();
    const proto::ServerInfo info = InfoOf(server.port());
    first = info.id;
    EXPECT_TRUE(IsUuid(first)) << first;
    EXPECT_EQ(info.weight, 0u) << "no fleet.weight: clients weigh by capacity";
    EXPECT_EQ(info.capacity_bytes, 32ULL << 20);
    std::ifstream in(data + "/server-id");
    std::string stored;
    in >> stored;
    EXPECT_EQ(stored, first);
    EXPECT_EQ(server.Stop(), 0);
  }
  ServerProcess again;
  ASSERT_TRUE(again.Start(spec).ok()) << again.Stderr();
  EXPECT_EQ(InfoOf(again.port()).id, first) << "the same data directory, the same id";
  EXPECT_NE(again.Stderr().find("server id " + first + " (" + data + "/server-id)"), std::string::npos)
      << again.Stderr();
}

TEST(FleetIdentityTest, FileModeIdIsTheStoreUuidAndMovesWithTheDrives) {
  TempDir dir;
  const std::string a = dir.path() + "/a";
  ASSERT_TRUE(std::filesystem::create_directories(a));
  std::string id;
  uint64_t capacity = 0;
  {
    ServerProcess server;
    ASSERT_TRUE(server.Start(FileModeSpec(a, 2, "64 MiB", "32 MiB")).ok()) << server.Stderr();
    const proto::ServerInfo info = InfoOf(server.port());
    id = info.id;
    capacity = info.capacity_bytes;
    EXPECT_TRUE(IsUuid(id)) << id;
    const JsonValue doc = StatusDoc(server.AdminPort());
    EXPECT_EQ(Str(doc, {"server_id"}), id);
    // What the server offers: the pool and the drives' usable bytes.
    EXPECT_EQ(double(capacity), Num(doc, {"memory", "pool_bytes"}) + Num(doc, {"storage", "usable_bytes"}));
    EXPECT_GT(capacity, 32ULL << 20);
    EXPECT_EQ(info.weight, 0u);
    auto client = ClientFor({&server});
    ASSERT_TRUE(client->Put("moved/1", Pattern(5000, 1)).ok());
    EXPECT_EQ(server.Stop(), 0);
    // Restarted on the same drives: the same id.
    ASSERT_TRUE(server.Start(FileModeSpec(a, 2, "64 MiB", "32 MiB")).ok()) << server.Stderr();
    EXPECT_EQ(InfoOf(server.port()).id, id);
    EXPECT_EQ(server.Stop(), 0);
  }
  // The volume moved to another path, the server to another port (and
  // another data directory): the id came with the drives.
  const std::string b = dir.path() + "/b";
  std::filesystem::copy(a, b, std::filesystem::copy_options::recursive);
  std::filesystem::remove_all(a);
  ServerProcess moved;
  ServerSpec spec = FileModeSpec(b, 2, "64 MiB", "32 MiB");
  ASSERT_TRUE(moved.Start(spec).ok()) << moved.Stderr();
  const proto::ServerInfo info = InfoOf(moved.port());
  EXPECT_EQ(info.id, id);
  EXPECT_EQ(info.capacity_bytes, capacity);
  auto client = ClientFor({&moved});
  auto got = client->Get("moved/1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, Pattern(5000, 1));
  EXPECT_NE(moved.Stderr().find("server id " + id + " (the drives' store UUID)"), std::string::npos) << moved.Stderr();
}

// A server built without a data directory (in process) makes its id at
// start: a fresh UUID each time.
TEST(FleetIdentityTest, WithoutADataDirectoryTheIdIsMadeAtStart) {
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    server::DaemonOptions options;
    options.config.network.port = 0;
    options.config.memory.max_size_bytes = 16 << 20;
    options.config.memory.block_size_bytes = 1 << 20;
    options.config.memory.prefault = false;
    options.config.rdma.device = "none";
    options.config.storage.mode = config::StorageMode::kMemory;
    options.auth_key = KeyBytes();
    options.workers = 1;
    options.hugepages = storage::HugePagePolicy::kNever;
    verbs::FakeFabric fabric;
    server::DaemonSeams seams;
    seams.verbs = &fabric;
    auto daemon = server::Daemon::Create(std::move(options), std::move(seams));
    ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
    (*daemon)->Start();
    const proto::ServerInfo info = InfoOf((*daemon)->port());
    EXPECT_TRUE(IsUuid(info.id)) << info.id;
    EXPECT_EQ(info.id, (*daemon)->fleet().id());
    EXPECT_EQ(info.capacity_bytes, 16u << 20);
    EXPECT_NE((*daemon)->fleet().identity().source.find("changes at every restart"), std::string::npos);
    ids.push_back(info.id);
    EXPECT_TRUE((*daemon)->Shutdown().ok());
  }
  EXPECT_NE(ids[0], ids[1]);
}

TEST(FleetIdentityTest, FleetIdInFileModeIsRefusedAtConfigCheck) {
  TempDir dir;
  ServerProcess server;
  ServerSpec spec = FileModeSpec(dir.path(), 1);
  spec.extra_yaml = "fleet:\n  id: cache-a\n";
  Status s = server.Start(spec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fleet.id: storage.mode 'file' keeps the server id with the data (the drives' store UUID"),
            std::string::npos)
      << s.message();
}

// ---- draining ----

TEST(FleetDrainTest, SignedRoutesDrainAndUndrain) {
  ServerProcess server;
  ServerSpec spec;
  spec.extra_yaml = "fleet:\n  id: drain-me\n";
  ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();
  const uint16_t admin = server.AdminPort();
  auto client = ClientFor({&server});
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(client->Put("d/" + std::to_string(i), Pattern(3000, i)).ok());

  // Unsigned: refused, nothing changes.
  EXPECT_EQ(HttpRequestTo(admin, "POST", "/v1/admin/drain").status, 401);
  EXPECT_EQ(HttpRequestTo(admin, "GET", "/v1/ready").status, 200);
  // Signed with another key: refused.
  EXPECT_EQ(SignedPost(admin, "/v1/admin/drain", std::vector<uint8_t>(32, 0xee)).status, 401);
  EXPECT_FALSE(InfoOf(server.port()).draining);

  http::HttpClientResponse r = SignedPost(admin, "/v1/admin/drain");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"state\":\"draining\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"server_id\":\"drain-me\""), std::string::npos) << r.body;

  HttpResult ready = HttpRequestTo(admin, "GET", "/v1/ready");
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(ready.body, "draining\n");
  HttpResult health = HttpRequestTo(admin, "GET", "/v1/health");
  EXPECT_EQ(health.status, 200) << "draining is not a failure";
  EXPECT_NE(health.body.find("\"healthy\""), std::string::npos) << health.body;
  const JsonValue doc = StatusDoc(admin);
  EXPECT_EQ(Str(doc, {"state"}), "draining");
  EXPECT_TRUE(InfoOf(server.port()).draining);

  // Every put path answers Draining, naming the server; reads are served.
  auto c = Connect(server.port());
  ASSERT_NE(c, nullptr);
  const std::string expected = "server drain-me at " + server.address() +
                               " is draining and takes no new keys; place the key on the next server";
  RawResponse put = Send(*c, proto::Opcode::kPut, "d/new", Pattern(1000, 9));
  EXPECT_EQ(put.header.status, StatusCode::kDraining);
  EXPECT_EQ(put.message(), expected);
  const std::vector<uint8_t> v = Pattern(100, 3);
  std::vector<proto::PutItem> items = {{"d/b1", v.size(), Checksum(v.data(), v.size())},
                                       {"d/b2", v.size(), Checksum(v.data(), v.size())}};
  std::vector<uint8_t> payload = v;
  payload.insert(payload.end(), v.begin(), v.end());
  RawResponse batch = Send(*c, proto::Opcode::kBatchPut, proto::EncodeBatchPutRequest(items), payload);
  EXPECT_EQ(batch.header.status, StatusCode::kOk);
  std::vector<StatusCode> codes;
  ASSERT_TRUE(proto::DecodeStatusList(batch.meta, 2, &codes).ok());
  EXPECT_EQ(codes, (std::vector<StatusCode>{StatusCode::kDraining, StatusCode::kDraining}));
  // Gets, exists and deletes are served as before.
  for (int i = 0; i < 8; ++i) {
    auto got = client->Get("d/" + std::to_string(i));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, Pattern(3000, i));
  }
  EXPECT_TRUE(*client->Exists("d/0"));
  EXPECT_TRUE(client->Delete("d/7").ok());
  EXPECT_FALSE(*client->Exists("d/new"));
  EXPECT_FALSE(*client->Exists("d/b1"));
  auto samples = PrometheusSamples(HttpRequestTo(admin, "GET", "/v1/metrics").body);
  EXPECT_EQ(samples["memkv_draining"], 1);
  EXPECT_EQ(samples["memkv_requests_shed_total{reason=\"draining\"}"], 3);

  r = SignedPost(admin, "/v1/admin/undrain");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"state\":\"serving\""), std::string::npos) << r.body;
  EXPECT_EQ(HttpRequestTo(admin, "GET", "/v1/ready").status, 200);
  EXPECT_FALSE(InfoOf(server.port()).draining);
  ASSERT_TRUE(client->Put("d/new", Pattern(1000, 9)).ok());
  EXPECT_EQ(*client->Get("d/new"), Pattern(1000, 9));
  EXPECT_EQ(PrometheusSamples(HttpRequestTo(admin, "GET", "/v1/metrics").body)["memkv_draining"], 0);
}

TEST(FleetDrainTest, CliDrainsAndUndrainsAndStatusShowsIt) {
  TempDir dir;
  ServerProcess server;
  ServerSpec spec;
  spec.extra_yaml = "fleet:\n  id: cli-drain\n";
  ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();
  const uint16_t admin = server.AdminPort();
  // Port 0: the admin endpoint is named by its URL (not data port + 1).
  std::string url = "http://127.0.0.1:" + std::to_string(admin);
  const std::string key_file = dir.path() + "/admin.key";
  std::ofstream(key_file) << kTestKeyHex << "\n";
  ::chmod(key_file.c_str(), 0600);

  CommandResult r = RunMemkv({"admin", "drain", "--key-file", key_file, url}, {});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "{\"state\":\"draining\",\"server_id\":\"cli-drain\"}\n");
  EXPECT_EQ(HttpRequestTo(admin, "GET", "/v1/ready").status, 503);
  CommandResult status = RunMemkv({"admin", "status", url}, {});
  EXPECT_NE(status.out.find("server cli-drain: draining"), std::string::npos) << status.out << status.err;

  // A wrong key: refused (exit 5), still draining.
  const std::string wrong = dir.path() + "/wrong.key";
  std::ofstream(wrong) << std::string(64, 'e') << "\n";
  ::chmod(wrong.c_str(), 0600);
  r = RunMemkv({"admin", "undrain", "--key-file", wrong, url}, {});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.err.find("HTTP 401"), std::string::npos) << r.err;
  EXPECT_TRUE(InfoOf(server.port()).draining);

  // The key from MEMKV_AUTH_KEY, as the client verbs take it.
  r = RunMemkv({"admin", "undrain", url}, {{"MEMKV_AUTH_KEY", kTestKeyHex}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "{\"state\":\"serving\",\"server_id\":\"cli-drain\"}\n");
  EXPECT_EQ(HttpRequestTo(admin, "GET", "/v1/ready").status, 200);
  status = RunMemkv({"admin", "status", url}, {});
  EXPECT_NE(status.out.find("server cli-drain: serving"), std::string::npos) << status.out;
  EXPECT_EQ(RunMemkv({"admin", "drain", "--json", url}, {}).exit_code, 2);

  // Draining is not kept: a restart comes back serving.
  ASSERT_EQ(RunMemkv({"admin", "drain", "--key-file", key_file, url}, {}).exit_code, 0);
  EXPECT_EQ(server.Stop(), 0);
  ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();
  url = "http://127.0.0.1:" + std::to_string(server.AdminPort());
  EXPECT_FALSE(InfoOf(server.port()).draining);
  EXPECT_EQ(HttpRequestTo(server.AdminPort(), "GET", "/v1/ready").status, 200);
}

// ---- busy ----

// Holds every drive write while closed (the I/O engine seam): puts then wait
// for the drives as long as the test wants, with no timing involved.
class WriteGate final : public drive::IoEngine {
 public:
  explicit WriteGate(std::unique_ptr<drive::IoEngine> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  void Run(std::span<drive::IoOp> ops) override {
    bool writes = false;
    for (const drive::IoOp& op : ops) writes = writes || op.kind == drive::IoKind::kWrite;
    if (writes) {
      std::unique_lock<std::mutex> lock(mu_);
      ++held_;
      cv_.wait(lock, [this] { return open_; });
      --held_;
    }
    inner_->Run(ops);
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  int held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_;
  }

 private:
  std::unique_ptr<drive::IoEngine> inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int held_ = 0;
};

TEST(FleetBusyTest, PutsWaitingForTheDrivesAtTheBoundShedPutsNotGets) {
  drive::StoreFixture drives(1, 64 << 10, 16 << 20);
  ASSERT_TRUE(drives.Format().ok());
  WriteGate* gate = nullptr;
  drive::ExtentStoreOptions o = drives.Options();  // storage.sync always: every put waits for the drives
  o.io = drive::IoEngineKind::kSync;
  o.wrap_engine = [&gate](std::unique_ptr<drive::IoEngine> inner) -> std::unique_ptr<drive::IoEngine> {
    auto g = std::make_unique<WriteGate>(std::move(inner));
    gate = g.get();
    return g;
  };
  auto store = drive::ExtentStore::Open(o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::unique_ptr<drive::ExtentStore> opened = std::move(store).value();

  server::DaemonOptions options;
  config::ServerConfig& c = options.config;
  c.network.port = 0;
  c.memory.max_size_bytes = 8 << 20;
  c.memory.block_size_bytes = 64 << 10;
  c.memory.prefault = false;
  c.rdma.device = "none";
  c.storage.mode = config::StorageMode::kFile;
  c.storage.io_threads = 2;
  c.storage.busy_queue_size_bytes = 16 << 10;
  options.auth_key = KeyBytes();
  options.workers = 2;
  options.hugepages = storage::HugePagePolicy::kNever;
  verbs::FakeFabric fabric;
  server::DaemonSeams seams;
  seams.verbs = &fabric;
  seams.open_drives = [&opened](const config::StorageConfig&) -> Result<std::unique_ptr<drive::ExtentStore>> {
    return std::move(opened);
  };
  auto daemon = server::Daemon::Create(std::move(options), std::move(seams));
  ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
  (*daemon)->Start();
  const uint16_t port = (*daemon)->port();
  ClientOptions co;
  co.servers = {(*daemon)->address()};
  co.auth_key_hex = kTestKeyHex;
  co.transport = "tcp";
  auto client = std::move(Client::Create(co)).value();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(client->Put("busy/" + std::to_string(i), Pattern(20000, i)).ok());
  EXPECT_FALSE(InfoOf(port).busy);

  // One put held at the drives: 20000 bytes wait, over the 16 KiB bound.
  gate->Close();
  auto writer = Connect(port);
  ASSERT_NE(writer, nullptr);
  const std::vector<uint8_t> held_value = Pattern(20000, 77);
  ASSERT_TRUE(writer->SendBytes(writer->BuildFrame(proto::Opcode::kPut, "busy/held", held_value, 5)).ok());
  ASSERT_TRUE(PollUntil([&] { return gate->held() > 0 && (*daemon)->fleet().busy(); }, 10000));

  auto other = Connect(port);
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(InfoOf(*other).busy);
  RawResponse put = Send(*other, proto::Opcode::kPut, "busy/shed", Pattern(1000, 5));
  EXPECT_EQ(put.header.status, StatusCode::kBusy);
  EXPECT_NE(put.message().find("storage.busy_queue_size"), std::string::npos) << put.message();
  EXPECT_NE(put.message().find("16 KiB"), std::string::npos) << put.message();
  // Gets are never shed.
  for (int i = 0; i < 4; ++i) {
    auto got = client->Get("busy/" + std::to_string(i));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, Pattern(20000, i));
  }
  EXPECT_EQ((*daemon)->fleet().shed_busy(), 1u);

  // The drives catch up: the held put completes, puts are taken again, and
  // every value acknowledged is there.
  gate->Open();
  auto done = writer->Read(10000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->header.status, StatusCode::kOk) << done->message();
  ASSERT_TRUE(PollUntil([&] { return !(*daemon)->fleet().busy(); }, 10000));
  EXPECT_FALSE(InfoOf(port).busy);
  ASSERT_TRUE(client->Put("busy/after", Pattern(1000, 6)).ok());
  EXPECT_EQ(*client->Get("busy/held"), held_value);
  EXPECT_EQ(*client->Get("busy/after"), Pattern(1000, 6));
  EXPECT_FALSE(*client->Exists("busy/shed"));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(*client->Get("busy/" + std::to_string(i)), Pattern(20000, i));
  client.reset();
  EXPECT_TRUE((*daemon)->Shutdown().ok());
}

// ---- ready after the index ----

TEST(FleetReadyTest, ARestartedServerIsReadyOnlyWithItsIndexLoaded) {
  TempDir dir;
  ServerSpec spec = FileModeSpec(dir.path(), 2, "256 MiB", "16 MiB");
  constexpr int kValues = 3000;
  {
    ServerProcess server;
    ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();
    auto client = ClientFor({&server});
    for (int i = 0; i < kValues; ++i) {
      ASSERT_TRUE(client->Put("ready/" + std::to_string(i), Pattern(4000, i)).ok()) << i;
    }
    EXPECT_EQ(server.Stop(), 0);
  }
  // A fixed port, so the admin endpoint can be asked while the server starts.
  // Below the ephemeral range: the polls' own connections (and any other
  // test's) never take port + 1 before the server binds it.
  const uint16_t port = FreeServerPort();
  ASSERT_NE(port, 0);
  spec.port = port;
  ServerProcess server;
  std::atomic<bool> started{false};
  Status start_status;
  std::thread starter([&] {
    start_status = server.Start(spec);
    started = true;
  });
  // Poll /v1/ready from before the process listens; the first 200 must find
  // every stored key served.
  bool ready = PollUntil(
      [&] { return HttpRequestTo(static_cast<uint16_t>(port + 1), "GET", "/v1/ready", 1000).status == 200; }, 30000);
  ClientOptions co;
  co.servers = {"127.0.0.1:" + std::to_string(port)};
  co.auth_key_hex = kTestKeyHex;
  co.transport = "tcp";
  std::unique_ptr<Client> client;
  if (ready) {
    auto created = Client::Create(co);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    client = std::move(created).value();
    int missing = 0;
    for (int i = 0; i < kValues; ++i) {
      auto got = client->Get("ready/" + std::to_string(i));
      if (!got.ok() || *got != Pattern(4000, i)) ++missing;
    }
    EXPECT_EQ(missing, 0) << "ready while stored keys were not served";
  }
  starter.join();
  ASSERT_TRUE(start_status.ok()) << start_status.ToString();
  EXPECT_TRUE(ready);
}

}  // namespace
}  // namespace memkv::testing
