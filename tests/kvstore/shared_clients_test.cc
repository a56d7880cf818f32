// Handles opened alike share a client (kvstore/shared_clients.h): a second
// handle finds the first one's connections open, different settings get
// their own client, the list keeps its bound, and a kept client that no
// longer reaches its server gives way to a new one, against a real server
// killed and restarted on its port; a forked child makes its own.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kvstore/chunk_store.h"
#include "kvstore/shared_clients.h"
#include "memkv/client.h"
#include "tests/harness.h"

namespace memkv::kvstore {
namespace {

using ::memkv::testing::HttpRequestTo;
using ::memkv::testing::OptionsFor;
using ::memkv::testing::PrometheusSamples;
using ::memkv::testing::ServerProcess;
using ::memkv::testing::ServerSpec;

class SharedClientsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.Start(ServerSpec{}).ok()) << server_.Stderr(); }

  EnvLookup Env(std::map<std::string, std::string> more = {}) const {
    more.emplace("MEMKV_AUTH_KEY", ::memkv::testing::kTestKeyHex);
    more.emplace("MEMKV_TRANSPORT", "tcp");
    more.emplace("MEMKV_TIMEOUT_MS", "5000");
    return [vars = std::move(more)](std::string_view name) -> std::optional<std::string> {
      auto it = vars.find(std::string(name));
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
  }
  std::string Uri(const std::string& name_space) const { return "memkv://" + server_.address() + "/" + name_space; }

  // Opens a handle, saves four chunks and a manifest named `name`, reads
  // the manifest back, closes the handle.
  void Save(SharedClients& clients, const EnvLookup& env, const std::string& name) {
    Result<std::unique_ptr<ChunkStore>> store = ChunkStore::Open(Uri("shared"), env, clients);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    for (int i = 0; i < 4; ++i) {
      const std::vector<uint8_t> hash = {uint8_t(name.size()), uint8_t(name.back()), uint8_t(i)};
      const std::vector<uint8_t> data(16 << 10, uint8_t(i + 1));
      ASSERT_TRUE((*store)->PutChunk(hash, data).ok());
    }
    const std::vector<uint8_t> manifest(name.begin(), name.end());
    ASSERT_TRUE((*store)->PutManifest(name, manifest).ok());
    Result<MallocBuffer> back = (*store)->GetManifest(name);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(back->data()), back->size()), name);
  }

  double Accepted() const {
    ::memkv::testing::HttpResult r = HttpRequestTo(server_.AdminPort(), "GET", "/v1/metrics");
    EXPECT_EQ(r.status, 200);
    return PrometheusSamples(r.body)["memkv_connections_accepted_total"];
  }

  // A client made by Create for the server, counted in makes_.
  SharedClients::Make Maker() {
    return [this]() {
      ++makes_;
      return Client::Create(OptionsFor({&server_}));
    };
  }

  ServerProcess server_;
  int makes_ = 0;
};

TEST_F(SharedClientsTest, AHandleOpenedAlikeFindsTheConnectionsOpen) {
  SharedClients clients;
  Save(clients, Env(), "first");
  const double accepted = Accepted();
  EXPECT_GE(accepted, 1);
  Save(clients, Env(), "second");
  Save(clients, Env(), "third");
  EXPECT_EQ(Accepted(), accepted) << "a later handle opened connections of its own";
  EXPECT_EQ(clients.kept(), 1u);
}

TEST_F(SharedClientsTest, SharingOffGivesEveryHandleItsOwnClient) {
  SharedClients clients;
  const EnvLookup env = Env({{"MEMKV_KV_STORE_SHARED_CLIENTS", "0"}});
  Save(clients, env, "first");
  const double accepted = Accepted();
  Save(clients, env, "second");
  EXPECT_GT(Accepted(), accepted);
  EXPECT_EQ(clients.kept(), 0u);
}

TEST_F(SharedClientsTest, DifferentSettingsGetTheirOwnClient) {
  SharedClients clients;
  Save(clients, Env(), "first");
  const double accepted = Accepted();
  Save(clients, Env({{"MEMKV_TIMEOUT_MS", "6000"}}), "second");
  EXPECT_GT(Accepted(), accepted);
  EXPECT_EQ(clients.kept(), 2u);
}

// At most `capacity` kept: the least recently used idle one gives way; when
// every kept client is held, a new one is made and not kept.
TEST_F(SharedClientsTest, TheListKeepsItsBound) {
  SharedClients clients;
  for (const char* key : {"a", "b", "c"}) ASSERT_TRUE(clients.Get(key, 2, Maker()).ok());
  EXPECT_EQ(makes_, 3);
  EXPECT_EQ(clients.kept(), 2u);
  ASSERT_TRUE(clients.Get("b", 2, Maker()).ok());
  ASSERT_TRUE(clients.Get("c", 2, Maker()).ok());
  EXPECT_EQ(makes_, 3) << "b and c are kept";
  Result<std::shared_ptr<Client>> held_b = clients.Get("b", 2, Maker());
  Result<std::shared_ptr<Client>> held_c = clients.Get("c", 2, Maker());
  ASSERT_TRUE(held_b.ok() && held_c.ok());
  EXPECT_EQ(makes_, 3);
  ASSERT_TRUE(clients.Get("a", 2, Maker()).ok());
  ASSERT_TRUE(clients.Get("a", 2, Maker()).ok());
  EXPECT_EQ(makes_, 5) << "with b and c held, a is made each time and not kept";
  EXPECT_EQ(clients.kept(), 2u);
  held_c->reset();
  ASSERT_TRUE(clients.Get("a", 2, Maker()).ok());
  ASSERT_TRUE(clients.Get("a", 2, Maker()).ok());
  EXPECT_EQ(makes_, 6) << "a takes idle c's place";
  ASSERT_TRUE(clients.Get("b", 2, Maker()).ok());
  EXPECT_EQ(makes_, 6);
  // Capacity 0: nothing kept, nothing taken.
  ASSERT_TRUE(clients.Get("b", 0, Maker()).ok());
  EXPECT_EQ(makes_, 7);
}

// A kept client that saw its server go away is not handed out again: the
// next open gets a new client, which connects at once to the server
// restarted on the same port.
TEST_F(SharedClientsTest, AKeptClientThatLostItsServerGivesWayToANewOne) {
  // A fixed port below the ephemeral range, so the restart finds its data
  // and admin ports free.
  ServerSpec fixed;
  fixed.port = ::memkv::testing::FreeServerPort();
  ASSERT_NE(fixed.port, 0);
  server_.Stop();
  ASSERT_TRUE(server_.Start(fixed).ok()) << server_.Stderr();
  SharedClients clients;
  Result<std::shared_ptr<Client>> first = clients.Get("k", 4, Maker());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::vector<uint8_t> value = {1, 2, 3};
  ASSERT_TRUE((*first)->Put("before", value).ok());
  EXPECT_TRUE(ReachesItsServers(**first));

  server_.Kill();
  EXPECT_FALSE((*first)->Put("during", value).ok());
  EXPECT_FALSE(ReachesItsServers(**first));

  ASSERT_TRUE(server_.Start(fixed).ok()) << server_.Stderr();
  Result<std::shared_ptr<Client>> second = clients.Get("k", 4, Maker());
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_NE(second->get(), first->get());
  EXPECT_EQ(makes_, 2);
  EXPECT_TRUE((*second)->Put("after", value).ok()) << "the new client waited out the old one's back-off";
  EXPECT_EQ(clients.kept(), 1u);
  Result<std::shared_ptr<Client>> third = clients.Get("k", 4, Maker());
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->get(), second->get());
}

// A child forked after the handles closed makes its own client (the kept
// one's sockets and threads are the parent's) and leaves the parent's alone:
// both go on with their own streams.
TEST_F(SharedClientsTest, AForkedChildMakesItsOwnClient) {
  auto clients = std::make_unique<SharedClients>();
  Result<std::shared_ptr<Client>> parents = clients->Get("k", 4, Maker());
  ASSERT_TRUE(parents.ok()) << parents.status().ToString();
  const std::vector<uint8_t> value = {4, 5, 6};
  ASSERT_TRUE((*parents)->Put("parent-before", value).ok());
  std::fflush(nullptr);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit codes say which check failed; _exit, so no destructor runs.
    if (clients->kept() != 0) ::_exit(2);
    Result<std::shared_ptr<Client>> own = clients->Get("k", 4, Maker());
    if (!own.ok() || own->get() == parents->get() || makes_ != 2) ::_exit(3);
    if (!(*own)->Put("child", value).ok()) ::_exit(4);
    if (clients->kept() != 1) ::_exit(5);
    clients.reset();  // its kept client is the child's own: closed here
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE((*parents)->Put("parent-after", value).ok());
  Result<std::shared_ptr<Client>> again = clients->Get("k", 4, Maker());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), parents->get());
  Result<std::vector<uint8_t>> stored = (*again)->Get("child");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(*stored, value);
}

}  // namespace
}  // namespace memkv::kvstore
