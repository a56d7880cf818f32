// docs/threads.md against the threads a server really starts: a Daemon with
// every feature on (file mode over a drive, its flusher and I/O threads,
// block events with replay, a tenant's own events, the admin endpoint, RDMA
// on the fake verbs) and a client of it in this process. Each thread that
// appears has a name the page lists, and each thread the page says lives
// while the server serves is running.
#include <dirent.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_name.h"
#include "drive/test_util.h"
#include "memkv/client.h"
#include "server/daemon.h"
#include "verbs/fake.h"

namespace memkv::server {
namespace {

using drive::Pattern;
using drive::TempDir;

// This process's threads: thread id -> name (/proc/self/task/TID/comm).
std::map<std::string, std::string> Threads() {
  std::map<std::string, std::string> out;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    if (comm && std::getline(comm, name)) out[e->d_name] = name;
  }
  ::closedir(dir);
  return out;
}

// One row of a thread table in docs/threads.md.
struct DocThread {
  std::string name;     // as written: `memkv-worker-N`
  std::regex pattern;   // N and TID stand for a number
  std::string lives;    // the "lives" column: "serving", "start-up", ...
};

std::string ReadDoc() {
  std::filesystem::path dir = std::filesystem::current_path();
  while (!std::filesystem::exists(dir / "docs/threads.md") && dir.has_parent_path() && dir != dir.parent_path()) {
    dir = dir.parent_path();
  }
  std::ifstream in(dir / "docs/threads.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The rows of every table whose header starts "| thread | lives |": the
// first cell a name in backticks, the second when it lives.
std::vector<DocThread> DocThreads(const std::string& doc) {
  std::vector<DocThread> out;
  std::istringstream lines(doc);
  std::string line;
  bool in_table = false;
  static const std::regex kRow(R"(^\| `([^`]+)` \| ([a-z -]+) \|)");
  while (std::getline(lines, line)) {
    if (line.rfind("| thread | lives |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (line.rfind("|", 0) != 0) {
      in_table = false;
      continue;
    }
    std::smatch m;
    if (!in_table || !std::regex_search(line, m, kRow)) continue;
    std::string pattern = std::regex_replace(m[1].str(), std::regex(R"([.+*?()\[\]{}\\^$|])"), R"(\$&)");
    pattern = std::regex_replace(pattern, std::regex(R"(\b(N|TID)\b)"), R"(\d+)");
    out.push_back({m[1].str(), std::regex(pattern), m[2].str()});
  }
  return out;
}

const DocThread* Find(const std::vector<DocThread>& doc, const std::string& name) {
  for (const DocThread& t : doc) {
    if (std::regex_match(name, t.pattern)) return &t;
  }
  return nullptr;
}

TEST(ThreadsDocTest, EveryThreadOfAServerWithEveryFeatureOnIsListedAndNoneIsMissing) {
  const std::vector<DocThread> doc = DocThreads(ReadDoc());
  ASSERT_FALSE(doc.empty()) << "no '| thread | lives |' table in docs/threads.md";

  const std::map<std::string, std::string> before = Threads();
  TempDir dir;
  verbs::FakeFabric fabric;
  fabric.AddDevice("srv0");
  DaemonOptions options;
  config::ServerConfig& c = options.config;
  c.network.port = 0;
  c.memory.max_size_bytes = 16 << 20;
  c.memory.block_size_bytes = 1 << 20;
  c.memory.prefault = true;
  c.rdma.device = "srv0";
  c.storage.mode = config::StorageMode::kFile;
  c.storage.block_size_bytes = 1 << 20;
  c.storage.drives = {config::DriveConfig{.media = dir.File("data/drive0.memkv"), .size_bytes = 128 << 20}};
  c.storage.io_threads = 2;
  c.storage.sync = config::StorageSync::kInterval;
  c.events.publish = "tcp://127.0.0.1:0";
  c.events.replay = "tcp://127.0.0.1:0";
  config::TenantConfig tenant;
  tenant.name = "team";
  tenant.prefix = "team/";
  tenant.key = std::vector<uint8_t>(32, 0xbb);
  tenant.events_publish = "tcp://127.0.0.1:0";
  c.tenants.push_back(tenant);
  options.auth_key = std::vector<uint8_t>(32, 0xaa);
  options.workers = 2;
  options.hugepages = storage::HugePagePolicy::kNever;
  DaemonSeams seams;
  seams.verbs = &fabric;
  Result<std::unique_ptr<Daemon>> created = Daemon::Create(std::move(options), std::move(seams));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::unique_ptr<Daemon> daemon = std::move(created).value();
  ASSERT_NE(daemon->rdma(), nullptr);
  daemon->Start();

  ClientOptions o;
  o.servers = {daemon->address()};
  o.auth_key_hex = std::string(64, 'a');
  o.transport = "tcp";
  Result<std::unique_ptr<Client>> client = Client::Create(o);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_TRUE((*client)->Put("t/1", Pattern(3 << 20, 1)).ok());  // over the drives' I/O threads

  // A new thread carries its creator's name until it names itself: poll
  // until every new thread has a listed name and every "serving" row is seen.
  std::vector<std::string> unlisted;
  std::set<std::string> missing;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    unlisted.clear();
    missing.clear();
    for (const DocThread& t : doc) {
      if (t.lives == "serving") missing.insert(t.name);
    }
    for (const auto& [tid, name] : Threads()) {
      if (before.count(tid) != 0) continue;
      const DocThread* row = Find(doc, name);
      if (row == nullptr) {
        unlisted.push_back(name + " (thread " + tid + ")");
      } else {
        missing.erase(row->name);
      }
    }
    if (unlisted.empty() && missing.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // poll interval
  } while (std::chrono::steady_clock::now() < deadline);
  for (const std::string& name : unlisted) ADD_FAILURE() << "thread " << name << " is not in docs/threads.md";
  for (const std::string& name : missing) {
    ADD_FAILURE() << "docs/threads.md lists " << name << " as living while the server serves, but it is not running";
  }
  client->reset();
  EXPECT_TRUE(daemon->Shutdown().ok());
}

// A name is cut to the 15 bytes Linux keeps.
TEST(ThreadsDocTest, ANameIsCutToWhatLinuxKeeps) {
  const std::string own = ThreadName();
  SetThreadName("memkv-a-name-over-fifteen-bytes");
  EXPECT_EQ(ThreadName(), "memkv-a-name-ov");
  SetThreadName(own);
  EXPECT_EQ(ThreadName(), own);
}

}  // namespace
}  // namespace memkv::server
