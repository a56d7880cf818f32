#include "config/server_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "base/units.h"
#include "config/config_test_util.h"

namespace memkv::config {
namespace {

using testing::CountLinesWith;
using testing::HasLineWith;
using testing::ProblemLines;
using testing::TempFile;

// Storage defaults to mode direct, which needs drives; most tests are about
// something else, so they start from a config that is valid on its own.
constexpr char kMemoryMode[] = "storage:\n  mode: memory\n";

Result<ServerConfig> Parse(const std::string& yaml) { return ParseServerConfig(yaml, "test.yaml"); }

// Parses `kMemoryMode` plus one section and returns its problem lines.
std::vector<std::string> ProblemsWith(const std::string& yaml) {
  return ProblemLines(Parse(std::string(kMemoryMode) + yaml));
}

TEST(ServerConfigDefaultsTest, StructDefaultsMatchSpec) {
  ServerConfig c;
  EXPECT_EQ(c.network.host, "127.0.0.1");  // loopback unless an address is given
  EXPECT_EQ(c.network.port, 9900);
  EXPECT_FALSE(c.network.auth_key.has_value());
  EXPECT_EQ(c.memory.block_size_bytes, 2 * kMiB);
  EXPECT_EQ(c.memory.max_size_bytes, 0u);
  EXPECT_EQ(c.rdma.device, "mlx5_0");
  EXPECT_EQ(c.rdma.mtu, 4096u);
  EXPECT_EQ(c.storage.mode, StorageMode::kDirect);
  EXPECT_EQ(c.storage.block_size_bytes, 4 * kMiB);
}

TEST(ServerConfigDefaultsTest, EmbeddedDefaultIsLoopbackFileModeAndValid) {
  ServerConfig c = EmbeddedDefaultConfig("/home/u/.memkv");
  EXPECT_EQ(c.network.host, "127.0.0.1");
  EXPECT_EQ(c.network.port, 9900);
  EXPECT_EQ(c.storage.mode, StorageMode::kFile);
  ASSERT_EQ(c.storage.drives.size(), 1u);
  EXPECT_EQ(c.storage.drives[0].media, "/home/u/.memkv/drive0.memkv");
  EXPECT_TRUE(c.storage.promote_on_read);
  EXPECT_EQ(c.storage.io_threads, 16u);
  EXPECT_EQ(c.storage.sync, StorageSync::kInterval);
  EXPECT_EQ(c.storage.sync_interval_ms, 1000u);
  EXPECT_EQ(c.storage.flush_on_loop_us, 0u) << "off: no loop waits on a drive's flush";
  EXPECT_EQ(c.memory.max_size_bytes, 0u);
  EXPECT_TRUE(ValidateServerConfig(c).ok()) << ValidateServerConfig(c).ToString();
}

TEST(ServerConfigDefaultsTest, DefaultMemoryPoolIsAnEighthClamped) {
  EXPECT_EQ(DefaultMemoryPoolBytes(64 * kGiB), 8 * kGiB);
  EXPECT_EQ(DefaultMemoryPoolBytes(0), 256 * kMiB);
  EXPECT_EQ(DefaultMemoryPoolBytes(1 * kGiB), 256 * kMiB);
  EXPECT_EQ(DefaultMemoryPoolBytes(1 * kTiB), 16 * kGiB);
  // MemTotal is rarely round; the pool is whole 2 MiB hugepages.
  uint64_t pool = DefaultMemoryPoolBytes(16279364 * kKiB);
  EXPECT_EQ(pool % (2 * kMiB), 0u);
  EXPECT_LE(pool, 16279364 * kKiB / 8);
  EXPECT_GT(pool, 16279364 * kKiB / 8 - 2 * kMiB);
}

TEST(ServerConfigDefaultsTest, StorageModeNames) {
  EXPECT_EQ(StorageModeName(StorageMode::kDirect), "direct");
  EXPECT_EQ(StorageModeName(StorageMode::kFile), "file");
  EXPECT_EQ(StorageModeName(StorageMode::kMemory), "memory");
}

// Regression: an empty config failed with "mode 'direct' needs at least one
// drive" although every field is optional; it now means the embedded
// default's storage (one drive file in the data directory).
TEST(ServerConfigParseTest, EmptyConfigGetsTheEmbeddedDefaultsStorageInsteadOfFailing) {
  for (const char* text : {"", "# just a comment\n", "---\n", "\n\n", "network:\n  address: 127.0.0.1:9910\n",
                           "storage:\n  promote_on_read: false\n"}) {
    Result<ServerConfig> r = Parse(text);
    ASSERT_TRUE(r.ok()) << "text: '" << text << "': " << r.status().ToString();
    EXPECT_EQ(r->storage.mode, StorageMode::kFile) << text;
    EXPECT_TRUE(r->storage.drive_in_data_dir) << text;
    EXPECT_TRUE(r->storage.drives.empty()) << text;
    ServerConfig c = *r;
    ResolveDataDir("/srv/d", &c);
    ASSERT_EQ(c.storage.drives.size(), 1u);
    EXPECT_EQ(c.storage.drives[0].media, "/srv/d/drive0.memkv");
  }
  // A mode named without drives is still refused: the operator meant drives.
  std::vector<std::string> lines = ProblemLines(Parse("storage:\n  mode: direct\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("storage.drives: mode 'direct' needs at least one drive"), std::string::npos) << lines[0];
  // Drives without a mode keep the documented default, direct.
  Result<ServerConfig> r = Parse("storage:\n  drives:\n    - media: /dev/nvme0n1\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->storage.mode, StorageMode::kDirect);
  EXPECT_FALSE(r->storage.drive_in_data_dir);
}

TEST(ServerConfigParseTest, MissingFieldsKeepDefaults) {
  Result<ServerConfig> r = Parse(kMemoryMode);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ServerConfig expected;
  EXPECT_EQ(r->network.host, expected.network.host);
  EXPECT_EQ(r->network.port, expected.network.port);
  EXPECT_EQ(r->memory.block_size_bytes, expected.memory.block_size_bytes);
  EXPECT_EQ(r->rdma.num_dcis, expected.rdma.num_dcis);
  EXPECT_EQ(r->storage.block_size_bytes, expected.storage.block_size_bytes);
}

TEST(ServerConfigParseTest, NullValuesAndSectionsCountAsAbsent) {
  Result<ServerConfig> r = Parse("network:\nmemory:\n  block_size:\nstorage:\n  mode: memory\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->memory.block_size_bytes, 2 * kMiB);
}

TEST(ServerConfigParseTest, ReadsEveryField) {
  Result<ServerConfig> r = Parse(R"(
network:
  address: 10.0.0.5:7000
  auth_key: 000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F
  tls_cert: /etc/memkv/cert.pem
  tls_key: /etc/memkv/key.pem
memory:
  block_size: 64 KiB
  max_size: 8GiB
rdma:
  device: mlx5_1
  gid_index: 3
  traffic_class: 104
  service_level: 3
  mtu: 1024
  num_dcis: 64
storage:
  mode: file
  block_size: 1048576
  drives:
    - media: /data/a.img
    - media: /data/b.img
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->network.host, "10.0.0.5");
  EXPECT_EQ(r->network.port, 7000);
  ASSERT_TRUE(r->network.auth_key.has_value());
  ASSERT_EQ(r->network.auth_key->size(), 32u);
  EXPECT_EQ((*r->network.auth_key)[1], 0x01);
  EXPECT_EQ((*r->network.auth_key)[31], 0x1f);
  EXPECT_EQ(r->network.tls_cert, "/etc/memkv/cert.pem");
  EXPECT_EQ(r->network.tls_key, "/etc/memkv/key.pem");
  EXPECT_EQ(r->memory.block_size_bytes, 64 * kKiB);
  EXPECT_EQ(r->memory.max_size_bytes, 8 * kGiB);
  EXPECT_EQ(r->rdma.device, "mlx5_1");
  EXPECT_EQ(r->rdma.gid_index, 3u);
  EXPECT_EQ(r->rdma.traffic_class, 104u);
  EXPECT_EQ(r->rdma.service_level, 3u);
  EXPECT_EQ(r->rdma.mtu, 1024u);
  EXPECT_EQ(r->rdma.num_dcis, 64u);
  EXPECT_EQ(r->storage.mode, StorageMode::kFile);
  EXPECT_EQ(r->storage.block_size_bytes, 1 * kMiB);
  ASSERT_EQ(r->storage.drives.size(), 2u);
  EXPECT_EQ(r->storage.drives[1].media, "/data/b.img");
}

TEST(ServerConfigParseTest, HumanSizes) {
  Result<ServerConfig> r =
      Parse(std::string(kMemoryMode) + "memory:\n  block_size: 4096\n  max_size: 1.5 GiB\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->memory.block_size_bytes, 4096u);
  EXPECT_EQ(r->memory.max_size_bytes, 3 * kGiB / 2);

  std::vector<std::string> lines = ProblemsWith("memory:\n  max_size: lots\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"memory.max_size", "'lots'", "MiB"}));
}

TEST(ServerConfigAddressTest, AcceptsIpv4HostnameAndBracketedIpv6) {
  struct Case {
    const char* address;
    const char* host;
    uint16_t port;
  };
  for (const Case& c :
       {Case{"0.0.0.0:9900", "0.0.0.0", 9900}, Case{"localhost:1", "localhost", 1},
        Case{"memkv-0.svc.local:80", "memkv-0.svc.local", 80}, Case{"[::1]:9900", "::1", 9900},
        Case{"[fe80::1:2]:0", "fe80::1:2", 0}, Case{"127.0.0.1:65534", "127.0.0.1", 65534}}) {
    Result<ServerConfig> r =
        Parse(std::string(kMemoryMode) + "network:\n  address: \"" + c.address + "\"\n");
    ASSERT_TRUE(r.ok()) << c.address << ": " << r.status().ToString();
    EXPECT_EQ(r->network.host, c.host);
    EXPECT_EQ(r->network.port, c.port);
  }
}

TEST(ServerConfigAddressTest, RefusesBadAddresses) {
  struct Case {
    const char* address;
    const char* expected;
  };
  for (const Case& c : {Case{"0.0.0.0:65535", "port+1"}, Case{"0.0.0.0:70000", "port 70000"},
                        Case{"0.0.0.0", "missing ':port'"}, Case{":9900", "empty host"},
                        Case{"::1:9900", "brackets"}, Case{"bad host!:1", "hostname"},
                        Case{"300.1.1.1:1", "not an IPv4"}, Case{"[::zz]:1", "not an IPv6"},
                        Case{"h:port", "not a number"}, Case{"h:", "empty port"}}) {
    std::vector<std::string> lines =
        ProblemsWith(std::string("network:\n  address: \"") + c.address + "\"\n");
    ASSERT_EQ(lines.size(), 1u) << c.address;
    EXPECT_TRUE(HasLineWith(lines, {"network.address", c.expected, "allowed:"})) << lines[0];
  }
}

TEST(ServerConfigNetworkTest, AuthKeyMustBe64HexAndIsNeverEchoed) {
  const std::string short_key(63, 'a');
  std::vector<std::string> lines = ProblemsWith("network:\n  auth_key: " + short_key + "\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"network.auth_key", "63 characters", "64 hex"}));
  EXPECT_EQ(lines[0].find(short_key), std::string::npos) << "secret echoed: " << lines[0];

  const std::string not_hex = std::string(10, 'a') + "g" + std::string(53, 'b');
  lines = ProblemsWith("network:\n  auth_key: " + not_hex + "\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"network.auth_key", "character 11", "64 hex"}));
  EXPECT_EQ(lines[0].find(not_hex), std::string::npos);
}

TEST(ServerConfigNetworkTest, TlsCertAndKeyGoTogether) {
  std::vector<std::string> lines = ProblemsWith("network:\n  tls_cert: /c.pem\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"network.tls_key: missing", "network.tls_cert", "/c.pem"}));

  lines = ProblemsWith("network:\n  tls_key: /k.pem\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"network.tls_cert: missing", "network.tls_key", "/k.pem"}));

  EXPECT_TRUE(Parse(std::string(kMemoryMode) + "network:\n  tls_cert: /c\n  tls_key: /k\n").ok());
}

TEST(ServerConfigNetworkTest, LoadsFirstIsOnUnlessTurnedOff) {
  Result<ServerConfig> c = Parse(kMemoryMode);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->network.loads_first);
  c = Parse(std::string(kMemoryMode) + "network:\n  loads_first: false\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->network.loads_first);
  std::vector<std::string> lines = ProblemsWith("network:\n  loads_first: sometimes\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"network.loads_first", "sometimes"})) << lines[0];
}

TEST(ServerConfigNetworkTest, BusyPollIs100UsByDefaultAndAtMost1000) {
  Result<ServerConfig> c = Parse(kMemoryMode);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->network.busy_poll_us, 100u);
  for (uint32_t us : {0u, 1000u}) {
    c = Parse(std::string(kMemoryMode) + "network:\n  busy_poll_us: " + std::to_string(us) + "\n");
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->network.busy_poll_us, us);
  }
  std::vector<std::string> lines = ProblemsWith("network:\n  busy_poll_us: 1001\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"network.busy_poll_us", "1001", "0..1000"})) << lines[0];
}

TEST(ServerConfigMemoryTest, BlockSizeIsPowerOfTwoFrom4KiBTo1GiB) {
  for (const char* ok : {"4 KiB", "2 MiB", "1 GiB"}) {
    EXPECT_TRUE(Parse(std::string(kMemoryMode) + "memory:\n  block_size: " + ok + "\n").ok()) << ok;
  }
  struct Case {
    const char* size;
    const char* expected;
  };
  for (const Case& c :
       {Case{"3 MiB", "3 MiB is not a power of two"}, Case{"2 KiB", "2 KiB is out of range"},
        Case{"2 GiB", "2 GiB is out of range"}, Case{"0", "0 B is not a power of two"}}) {
    std::vector<std::string> lines =
        ProblemsWith(std::string("memory:\n  block_size: ") + c.size + "\n");
    ASSERT_EQ(lines.size(), 1u) << c.size;
    EXPECT_TRUE(HasLineWith(lines, {"memory.block_size", c.expected, "4 KiB to 1 GiB"}))
        << lines[0];
  }
}

TEST(ServerConfigMemoryTest, MaxSizeIsZeroOrAtLeastOneBlock) {
  EXPECT_TRUE(Parse(std::string(kMemoryMode) + "memory:\n  max_size: 0\n").ok());
  EXPECT_TRUE(Parse(std::string(kMemoryMode) + "memory:\n  max_size: 2 MiB\n").ok());
  std::vector<std::string> lines = ProblemsWith("memory:\n  max_size: 1 MiB\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"memory.max_size", "1 MiB", "memory.block_size (2 MiB)"}));
}

}  // namespace
}  // namespace memkv::config
