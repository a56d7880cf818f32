// libkv_store_memkv.so against real memkv servers, driven by a C consumer.
//
// kv_store_driver (kv_store_driver.c) is a C program that dlopens the plugin
// by path, as llama.cpp does, and runs one scenario per invocation; this
// file starts two servers, runs the driver with the URI of both and the
// MEMKV_* environment, and checks what it printed (its verdict and the
// plugin's stderr lines) and, for the two savers, the servers' metrics.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "tests/harness.h"

namespace memkv::testing {
namespace {

class KvStoreTest : public ::testing::Test {
 public:
  // Runs the driver on `uri` with `args`; stdout and stderr together.
  static CommandResult Drive(const std::string& uri, const std::string& args, const std::string& env = "") {
    const std::string command = std::string("env MEMKV_AUTH_KEY=") + kTestKeyHex +
                                " MEMKV_TRANSPORT=tcp MEMKV_TIMEOUT_MS=10000 MEMKV_LOG_LEVEL=warn " + env +
                                " timeout 200 " + MEMKV_KV_STORE_DRIVER + " " + MEMKV_KV_STORE_PLUGIN + " '" + uri +
                                "' " + args + " 2>&1";
    return RunShell(command);
  }

 protected:
  void SetUp() override {
    // Small pool blocks: the crash scenario stores over a thousand 1 KiB chunks.
    ServerSpec spec;
    spec.memory_block_size = "64 KiB";
    for (auto& s : servers_) {
      s = std::make_unique<ServerProcess>();
      ASSERT_TRUE(s->Start(spec).ok()) << s->Stderr();
    }
  }

  // memkv://<both servers>/<namespace>
  std::string Uri(const std::string& name_space) const {
    return "memkv://" + servers_[0]->address() + "," + servers_[1]->address() + "/" + name_space;
  }

  // The sum over both servers of the samples of `family` with op="<op>".
  double Metric(const std::string& family, const std::string& op) const {
    double total = 0;
    for (const auto& s : servers_) {
      HttpResult r = HttpRequestTo(s->AdminPort(), "GET", "/v1/metrics");
      EXPECT_EQ(r.status, 200);
      for (const auto& [sample, value] : PrometheusSamples(r.body)) {
        if (sample.rfind(family + "{", 0) == 0 && sample.find("op=\"" + op + "\"") != std::string::npos) {
          total += value;
        }
      }
    }
    return total;
  }
  // Value bytes the servers stored through batch puts (the chunks).
  double ChunkBytesStored() const { return Metric("memkv_value_bytes_total", "batch_put"); }
  // Batch exists requests the servers answered.
  double ExistsRequests() const { return Metric("memkv_requests_total", "batch_exists"); }

  std::unique_ptr<ServerProcess> servers_[2];
};

TEST_F(KvStoreTest, SaveAndRestoreAcrossTwoServers) {
  CommandResult r = Drive(Uri("roundtrip/llama"), "roundtrip");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ok roundtrip"), std::string::npos) << r.out;
}

TEST_F(KvStoreTest, MissesAndBadArgumentsHaveTheirOwnCodes) {
  CommandResult r = Drive(Uri("missing"), "missing");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ok missing"), std::string::npos) << r.out;
  // A miss is not logged; a bad argument is, naming the call and the argument.
  EXPECT_EQ(r.out.find("NotFound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libkv_store_memkv: put_chunk "), std::string::npos) << r.out;
}

TEST_F(KvStoreTest, ServerDownAndWrongKeyHaveTheirOwnCodes) {
  // A port nothing listens on: bound, then closed.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string closed = "memkv://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/ns";
  ::close(fd);
  CommandResult r = Drive(Uri("unreachable"), "unreachable '" + closed + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ok unreachable"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("get_manifest 'm': Unavailable"), std::string::npos) << r.out;
}

TEST_F(KvStoreTest, BadUriIsRefusedNamingWhatIsWrong) {
  CommandResult r = Drive(Uri("bad"), "bad-uri");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (const char* why : {"the scheme must be memkv://", "there is no namespace after the servers",
                          "server '127.0.0.1' has no port", "a query ('?') is not allowed",
                          "the port must be a decimal number in 1..65535",
                          "an empty server entry", "expected memkv://host:port[,host:port...]/namespace",
                          "open: the URI is NULL", "MEMKV_AUTH_KEY is not set", "MEMKV_TIMEOUT_MS: 'soon'", "pigeon",
                          "unknown query field 'modle'; allowed fields: model, revision, kv_dtype, layout, "
                          "block_tokens, tp_rank, tp_size, engine, engine_version, extra.NAME",
                          "cache identity: model is empty"}) {
    EXPECT_NE(r.out.find(why), std::string::npos) << why << " not in:\n" << r.out;
  }
  // MEMKV_LOG_LEVEL=off: the same refusals, silently.
  CommandResult quiet = Drive(Uri("bad"), "bad-uri", "MEMKV_LOG_LEVEL=off");
  EXPECT_EQ(quiet.exit_code, 0) << quiet.out;
  EXPECT_EQ(quiet.out, "ok bad-uri\n");
}

// Handles whose URIs differ only in kv_dtype or block_tokens never read
// each other's chunks or manifests, and MEMKV_IDENTITY_* under a URI field
// give the same identities (kv_store_driver.c, Identities).
TEST_F(KvStoreTest, UrisThatDifferOnlyInIdentityKeepTheirOwnBytes) {
  CommandResult r = Drive(Uri("identities"), "identities");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ok identities"), std::string::npos) << r.out;
}

TEST_F(KvStoreTest, ThreadsShareOneHandle) {
  CommandResult r = Drive(Uri("threads"), "threads");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ok threads"), std::string::npos) << r.out;
}

TEST_F(KvStoreTest, SaverKilledBeforeItsManifestLeavesTheOldOneIntact) {
  CommandResult r = Drive(Uri("crash"), "crash");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ok crash"), std::string::npos) << r.out;
}

// A save the servers cannot hold fails at its manifest, which is not
// replaced: readers keep the old one.
TEST(KvStoreFullTest, ManifestIsNotReplacedWhenItsChunksCannotBeStored) {
  ServerSpec spec;
  spec.memory_max_size = "1 MiB";
  spec.memory_block_size = "64 KiB";
  ServerProcess server;
  ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();
  CommandResult r = KvStoreTest::Drive("memkv://" + server.address() + "/unstorable", "unstorable");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ok unstorable"), std::string::npos) << r.out;
  // The chunk of 2 MiB is refused by put_chunk itself (the driver checks the
  // manifest's refusal; the handle logs one line a second).
  EXPECT_NE(r.out.find("put_chunk 55c8f7b79294e9b6 (2097152 bytes): TooLarge"), std::string::npos) << r.out;
}

// Two savers whose saves share half their chunks: the second sends only the
// chunks the servers do not hold (one batch exists, then the rest), and a
// third save of the same chunks sends none.
TEST_F(KvStoreTest, SecondSaverSendsOnlyTheChunksNotStored) {
  constexpr int kChunk = 64 * 1024;
  const std::string uri = Uri("savers");
  const double start = ChunkBytesStored();
  CommandResult first = Drive(uri, "save first 11 0 32 " + std::to_string(kChunk));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const double after_first = ChunkBytesStored();
  EXPECT_EQ(after_first - start, 32.0 * kChunk);

  const double exists_before = ExistsRequests();
  CommandResult second = Drive(uri, "save second 11 16 32 " + std::to_string(kChunk));
  ASSERT_EQ(second.exit_code, 0) << second.out;
  const double after_second = ChunkBytesStored();
  EXPECT_EQ(after_second - after_first, 16.0 * kChunk);  // chunks 32..47 only
  // One batch exists for the whole save: one frame to each server, at once.
  const double exists = ExistsRequests() - exists_before;
  EXPECT_GE(exists, 1);
  EXPECT_LE(exists, 2);

  CommandResult again = Drive(uri, "save first 11 0 32 " + std::to_string(kChunk));
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(ChunkBytesStored(), after_second);

  for (const char* args : {"restore first 1 32", "restore second 0 32"}) {
    CommandResult r = Drive(uri, args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.out;
  }
}

}  // namespace
}  // namespace memkv::testing
