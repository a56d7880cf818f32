// How ParseServerConfig reports problems: RDMA and storage rules, unknown
// keys, wrong types, YAML syntax, all-at-once collection, locations, and
// the programmatic ValidateServerConfig / file-loading entry points.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/client_config.h"
#include "config/config_test_util.h"
#include "base/units.h"
#include "config/server_config.h"

namespace memkv::config {
namespace {

using testing::CountLinesWith;
using testing::HasLineWith;
using testing::ProblemLines;
using testing::TempFile;

constexpr char kMemoryMode[] = "storage:\n  mode: memory\n";

Result<ServerConfig> Parse(const std::string& yaml) { return ParseServerConfig(yaml, "test.yaml"); }

std::vector<std::string> RdmaProblems(const std::string& field, const std::string& value) {
  return ProblemLines(Parse(std::string(kMemoryMode) + "rdma:\n  " + field + ": " + value + "\n"));
}

bool RdmaOk(const std::string& field, const std::string& value) {
  return Parse(std::string(kMemoryMode) + "rdma:\n  " + field + ": " + value + "\n").ok();
}

TEST(ServerConfigRdmaTest, Ranges) {
  EXPECT_TRUE(RdmaOk("gid_index", "255"));
  EXPECT_TRUE(HasLineWith(RdmaProblems("gid_index", "256"), {"rdma.gid_index", "256", "0..255"}));
  EXPECT_TRUE(RdmaOk("service_level", "15"));
  EXPECT_TRUE(HasLineWith(RdmaProblems("service_level", "16"), {"rdma.service_level", "0..15"}));
  EXPECT_TRUE(RdmaOk("num_dcis", "1"));
  EXPECT_TRUE(RdmaOk("num_dcis", "1024"));
  EXPECT_TRUE(HasLineWith(RdmaProblems("num_dcis", "0"), {"rdma.num_dcis", "0 is", "1..1024"}));
  EXPECT_TRUE(HasLineWith(RdmaProblems("num_dcis", "1025"), {"rdma.num_dcis", "1025", "1..1024"}));
}

TEST(ServerConfigRdmaTest, MtuIsOneOfTheIbSizes) {
  for (const char* mtu : {"256", "512", "1024", "2048", "4096"}) EXPECT_TRUE(RdmaOk("mtu", mtu));
  for (const char* mtu : {"0", "128", "1500", "4000", "8192", "9000"}) {
    EXPECT_TRUE(
        HasLineWith(RdmaProblems("mtu", mtu), {"rdma.mtu", mtu, "256, 512, 1024, 2048, 4096"}))
        << mtu;
  }
}

TEST(ServerConfigRdmaTest, TrafficClassIsDscpShiftedLeftTwo) {
  EXPECT_TRUE(RdmaOk("traffic_class", "0"));
  EXPECT_TRUE(RdmaOk("traffic_class", "104"));
  EXPECT_TRUE(RdmaOk("traffic_class", "252"));
  // The DSCP written where the ToS byte belongs: suggest the shifted form.
  EXPECT_TRUE(
      HasLineWith(RdmaProblems("traffic_class", "26"),
                  {"rdma.traffic_class: 26 is not a multiple of 4", "104 (= DSCP 26 << 2)"}));
  EXPECT_TRUE(HasLineWith(RdmaProblems("traffic_class", "105"),
                          {"rdma.traffic_class: 105", "nearest is 104 (= DSCP 26 << 2)"}));
  EXPECT_TRUE(HasLineWith(RdmaProblems("traffic_class", "256"),
                          {"rdma.traffic_class: 256 is out of range", "DSCP << 2"}));
}

TEST(ServerConfigStorageTest, ModeAndDrivesMustAgree) {
  EXPECT_TRUE(Parse("storage:\n  mode: direct\n  drives:\n    - media: /dev/nvme0n1\n").ok());
  std::vector<std::string> lines = ProblemLines(Parse("storage:\n  mode: file\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(
      lines, {"storage.drives: mode 'file' needs at least one drive", "set storage.mode: memory"}));
  lines = ProblemLines(Parse("storage:\n  mode: memory\n  drives:\n    - media: /a\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"storage.drives", "mode 'memory'", "1 drive(s)"}));
  lines = ProblemLines(Parse("storage:\n  mode: disk\n"));
  ASSERT_EQ(lines.size(), 1u) << "a bad mode must not also trigger the drive rule";
  EXPECT_TRUE(HasLineWith(lines, {"storage.mode", "'disk'", "direct, file, memory"}));
}

TEST(ServerConfigStorageTest, EncryptionNeedsAKeyFileAndDrives) {
  Result<ServerConfig> off = Parse("storage:\n  mode: direct\n  drives:\n    - media: /dev/nvme0n1\n");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(off->storage.encryption, StorageEncryption::kOff);
  Result<ServerConfig> on = Parse(
      "storage:\n  mode: direct\n  drives:\n    - media: /dev/nvme0n1\n  encryption: aes-256-gcm\n"
      "  encryption_key_file: /etc/memkv/drive.key\n");
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_EQ(on->storage.encryption, StorageEncryption::kAes256Gcm);
  EXPECT_EQ(on->storage.encryption_key_file, "/etc/memkv/drive.key");
  std::vector<std::string> lines =
      ProblemLines(Parse("storage:\n  mode: direct\n  drives:\n    - media: /a\n  encryption: aes-256-gcm\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"storage.encryption_key_file: missing", "32 raw bytes or 64 hex"}));
  lines = ProblemLines(
      Parse("storage:\n  mode: memory\n  encryption: aes-256-gcm\n  encryption_key_file: /k\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"storage.encryption", "no drives to encrypt"}));
  lines = ProblemLines(Parse("storage:\n  mode: direct\n  drives:\n    - media: /a\n  encryption: aes\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"storage.encryption", "'aes'", "off, aes-256-gcm"}));
}

TEST(ServerConfigMemoryTest, ReadCheckIntervalDefaultsToOneSecondAndIsChecked) {
  Result<ServerConfig> defaults = Parse("memory:\n  max_size: 1 GiB\n");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->memory.read_check_interval_ms, 1000u);
  Result<ServerConfig> every = Parse("memory:\n  read_check_interval_ms: 0\n");
  ASSERT_TRUE(every.ok()) << every.status().ToString();
  EXPECT_EQ(every->memory.read_check_interval_ms, 0u);
  std::vector<std::string> lines = ProblemLines(Parse("memory:\n  read_check_interval_ms: 3600001\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"memory.read_check_interval_ms: 3600001 is out of range", "0..3600000",
                                  "0 = after every send"}));
}

TEST(ServerConfigMemoryTest, PinningSettingsDefaultAndParse) {
  Result<ServerConfig> defaults = Parse("memory:\n  max_size: 1 GiB\n");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->memory.pinned_max_fraction, 0.5);
  EXPECT_EQ(defaults->memory.pin_ttl_ms, 30u * 60 * 1000);
  EXPECT_EQ(defaults->memory.pin_ttl_max_ms, 24u * 3600 * 1000);
  Result<ServerConfig> set =
      Parse("memory:\n  pinned_max_fraction: 0.25\n  pin_ttl: 90s\n  pin_ttl_max: 2h\n");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->memory.pinned_max_fraction, 0.25);
  EXPECT_EQ(set->memory.pin_ttl_ms, 90'000u);
  EXPECT_EQ(set->memory.pin_ttl_max_ms, 7'200'000u);
}

TEST(ServerConfigMemoryTest, PinningSettingsOutOfRangeNameTheFieldAndTheRule) {
  EXPECT_TRUE(HasLineWith(ProblemLines(Parse("memory:\n  pinned_max_fraction: 1.5\n")),
                          {"memory.pinned_max_fraction: 1.5 is out of range", "above 0, at most 1"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(Parse("memory:\n  pinned_max_fraction: 0\n")),
                          {"memory.pinned_max_fraction: 0 is out of range"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(Parse("memory:\n  pinned_max_fraction: half\n")),
                          {"memory.pinned_max_fraction: 'half' is not a number"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(Parse("memory:\n  pin_ttl: 1800\n")),
                          {"memory.pin_ttl: '1800' is not a duration", "'30m'"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(Parse("memory:\n  pin_ttl: 2d\n  pin_ttl_max: 1d\n")),
                          {"memory.pin_ttl: 48h is out of range", "memory.pin_ttl_max (24h)"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(Parse("memory:\n  pin_ttl_max: 31d\n")),
                          {"memory.pin_ttl_max: 744h is out of range", "1s to 30d"}));
}

TEST(ServerConfigMemoryTest, MaxValueSizeDefaultsTo16GiBAndIsChecked) {
  Result<ServerConfig> defaults = Parse("memory:\n  max_size: 1 GiB\n");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->memory.max_value_size_bytes, uint64_t{16} << 30);
  Result<ServerConfig> set = Parse("memory:\n  max_value_size: 64 GiB\n");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->memory.max_value_size_bytes, uint64_t{64} << 30);
  for (const char* bad : {"65 GiB", "1023 KiB"}) {
    std::vector<std::string> lines = ProblemLines(Parse(std::string("memory:\n  max_value_size: ") + bad + "\n"));
    ASSERT_EQ(lines.size(), 1u) << bad;
    EXPECT_TRUE(HasLineWith(lines, {"memory.max_value_size: " + std::string(bad) + " is out of range",
                                    "allowed: 1 MiB to 64 GiB"}))
        << lines[0];
  }
}

TEST(ServerConfigStorageTest, TierFieldsParseAndAreChecked) {
  Result<ServerConfig> ok = Parse(
      "storage:\n  mode: file\n  promote_on_read: false\n  io_threads: 8\n  drives:\n"
      "    - {media: /srv/a.memkv, size: 2 GiB}\n");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_FALSE(ok->storage.promote_on_read);
  EXPECT_EQ(ok->storage.io_threads, 8u);
  EXPECT_EQ(ok->storage.drives[0].size_bytes, 2 * kGiB);
  std::vector<std::string> lines = ProblemLines(Parse(
      "storage:\n  mode: direct\n  promote_on_read: maybe\n  io_threads: 0\n  drives:\n"
      "    - {media: /dev/nvme0n1, size: 2 GiB}\n    - {media: /dev/nvme1n1}\n"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(HasLineWith(lines, {"storage.promote_on_read", "'maybe'", "true, false"}));
  EXPECT_TRUE(HasLineWith(lines, {"storage.io_threads: 0 is out of range", "1..64"}));
  EXPECT_TRUE(HasLineWith(lines, {"storage.drives[0].size", "storage.mode file"}));
  lines = ProblemLines(Parse("storage:\n  mode: file\n  drives:\n    - {media: /a, size: 1 MiB}\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"storage.drives[0].size", "1 MiB", "at least 64 MiB"}));
}

TEST(ServerConfigStorageTest, SyncPolicyParsesAndIsChecked) {
  Result<ServerConfig> ok =
      Parse("storage:\n  mode: file\n  sync: always\n  sync_interval_ms: 250\n  flush_on_loop_us: 2000\n"
            "  drives:\n    - media: /a\n");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->storage.sync, StorageSync::kAlways);
  EXPECT_EQ(ok->storage.sync_interval_ms, 250u);
  EXPECT_EQ(ok->storage.flush_on_loop_us, 2000u);
  ok = Parse("storage:\n  mode: file\n  drives:\n    - media: /a\n");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->storage.sync, StorageSync::kInterval) << "the default";
  std::vector<std::string> lines =
      ProblemLines(Parse("storage:\n  mode: file\n  sync: sometimes\n  sync_interval_ms: 0\n"
                         "  flush_on_loop_us: 1000001\n  drives:\n    - media: /a\n"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(HasLineWith(lines, {"storage.flush_on_loop_us: 1000001 is out of range", "0..1000000"}));
  EXPECT_TRUE(HasLineWith(lines, {"storage.sync", "'sometimes'", "allowed: always, interval"}));
  EXPECT_TRUE(HasLineWith(lines, {"storage.sync_interval_ms: 0 is out of range", "1..60000"}));
}

TEST(ServerConfigLogTest, LevelIsOneOfTheFour) {
  Result<ServerConfig> ok = Parse("storage:\n  mode: memory\nlog:\n  level: debug\n");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->log.level, "debug");
  std::vector<std::string> lines = ProblemLines(Parse("storage:\n  mode: memory\nlog:\n  level: loud\n  colour: red\n"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(HasLineWith(lines, {"log.level: 'loud'", "debug, info, warn, error"}));
  EXPECT_TRUE(HasLineWith(lines, {"unknown field 'log.colour'"}));
}

TEST(ServerConfigStorageTest, EachDriveNeedsADistinctMedia) {
  std::vector<std::string> lines = ProblemLines(Parse(R"(storage:
  mode: direct
  block_size: 5000
  drives:
    - media: /dev/a
    - {}
    - media: ""
    - media: /dev/a
    - /dev/b
    - media: /dev/c
      path: /dev/d
)"));
  EXPECT_EQ(lines.size(), 6u);
  EXPECT_TRUE(HasLineWith(lines, {"storage.block_size", "5000 B", "power of two"}));
  EXPECT_TRUE(HasLineWith(lines, {"storage.drives[1].media: missing"}));
  EXPECT_TRUE(HasLineWith(lines, {"storage.drives[2].media: empty"}));
  EXPECT_TRUE(HasLineWith(lines, {"storage.drives[3].media", "'/dev/a'", "storage.drives[0]"}));
  EXPECT_TRUE(HasLineWith(lines, {"storage.drives[4]", "'/dev/b'", "- media: /dev/b"}));
  EXPECT_TRUE(HasLineWith(lines, {"unknown field 'storage.drives[5].path'", "allowed: media"}));
}

TEST(ServerConfigErrorsTest, UnknownFieldsAtEveryLevelSuggestTheClosest) {
  std::vector<std::string> lines = ProblemLines(
      Parse(std::string(kMemoryMode) + "network:\n  adress: 1.2.3.4:5\nrdam:\n  mtu: 1024\n"
                                       "memory:\n  blocksize: 4 KiB\n  colour: blue\n"));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_TRUE(HasLineWith(lines, {"unknown field 'network.adress' (did you mean 'address'?); "
                                  "allowed: address, auth_key, tls_cert, tls_key"}));
  EXPECT_TRUE(HasLineWith(lines, {"unknown field 'rdam' (did you mean 'rdma'?)",
                                  "allowed: network, memory, rdma, storage"}));
  EXPECT_TRUE(HasLineWith(lines, {"'memory.blocksize' (did you mean 'block_size'?)"}));
  EXPECT_TRUE(HasLineWith(lines, {"unknown field 'memory.colour'; allowed: block_size, max_size, max_value_size, prefault, read_check_interval_ms, pinned_max_fraction, pin_ttl, pin_ttl_max"}));
}

TEST(ServerConfigErrorsTest, DuplicateFieldIsRefused) {
  std::vector<std::string> lines =
      ProblemLines(Parse(std::string(kMemoryMode) + "rdma:\n  mtu: 1024\n  mtu: 2048\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"duplicate field 'rdma.mtu'"}));
}

TEST(ServerConfigErrorsTest, WrongTypesAreReportedPerField) {
  std::vector<std::string> lines = ProblemLines(Parse(std::string(kMemoryMode) + R"(network:
  address: {host: a, port: 1}
  tls_cert: [a, b]
rdma:
  mtu: abc
  gid_index: -1
  num_dcis: [1]
  device: {x: 1}
memory: 12
)"));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_TRUE(HasLineWith(lines, {"network.address: expected a string, got a map"}));
  EXPECT_TRUE(HasLineWith(lines, {"network.tls_cert: expected a string, got a list"}));
  EXPECT_TRUE(HasLineWith(lines, {"rdma.mtu: 'abc' is not a non-negative integer", "4096"}));
  EXPECT_TRUE(HasLineWith(lines, {"rdma.gid_index: '-1'", "0..255"}));
  EXPECT_TRUE(HasLineWith(lines, {"rdma.num_dcis: expected an integer, got a list", "1..1024"}));
  EXPECT_TRUE(HasLineWith(lines, {"rdma.device: expected a string, got a map"}));
  EXPECT_TRUE(HasLineWith(lines, {"memory: expected a map of block_size, max_size, max_value_size, prefault, read_check_interval_ms, pinned_max_fraction, pin_ttl, pin_ttl_max; got a string"}));
}

TEST(ServerConfigErrorsTest, DocumentMustBeOneMap) {
  std::vector<std::string> lines = ProblemLines(Parse("- a\n- b\n"));
  ASSERT_EQ(lines.size(), 1u) << "no rule lines about defaults the user never wrote";
  EXPECT_TRUE(
      HasLineWith(lines, {"the document: expected a map of network, memory, rdma, storage"}));
  lines = ProblemLines(Parse("storage: {mode: memory}\n---\nrdma: {}\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"test.yaml:2:1:", "2 YAML documents"}));
}

// yaml-cpp 0.7's LoadAll never returns on a lone ","; found by the FuzzConfig fuzz target (fuzz/fuzz_targets.cc).
TEST(ServerConfigErrorsTest, LoneCommaDoesNotHangTheParser) {
  for (const char* text : {",", ",,", "a: ,", "- ,\n"}) {
    Result<ServerConfig> r = ParseServerConfig(text, "test.yaml");
    EXPECT_FALSE(r.ok()) << text;
  }
  EXPECT_FALSE(ParseClientConfigYaml(",", "client.yaml").ok());
}

TEST(ServerConfigErrorsTest, SyntaxErrorNamesSourceLineAndColumn) {
  std::vector<std::string> lines =
      ProblemLines(Parse("storage:\n  mode: memory\nrdma:\n  mtu: [1024\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"test.yaml:", "YAML syntax error"}));
  lines = ProblemLines(Parse("network:\n  address: a: b\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"test.yaml:2:", "YAML syntax error"}));
}

TEST(ServerConfigErrorsTest, AllProblemsAtOnceOneLineEach) {
  Result<ServerConfig> r = Parse(R"(network:
  address: 0.0.0.0:65535
rdma:
  mtu: 1500
storage:
  mode: direct
  drives:
    - media: /dev/nvme0n1
memory:
  block_size: 3 MiB
)");
  std::vector<std::string> lines = ProblemLines(r);
  ASSERT_EQ(lines.size(), 3u);
  // Each line points at its value: file:line:column.
  EXPECT_TRUE(HasLineWith(lines, {"test.yaml:2:12: network.address: port 65535"}));
  EXPECT_TRUE(HasLineWith(lines, {"test.yaml:4:8: rdma.mtu: 1500"}));
  EXPECT_TRUE(HasLineWith(lines, {"test.yaml:10:15: memory.block_size: 3 MiB"}));
}

TEST(ServerConfigErrorsTest, LinesFollowTheTextOrder) {
  // Rule lines (block size) are found after parse lines (mtu) but read in
  // file order.
  std::vector<std::string> lines = ProblemLines(
      Parse("memory:\n  block_size: 3 MiB\nrdma:\n  mtu: x\nstorage:\n  mode: memory\n"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("test.yaml:2:"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("test.yaml:4:"), std::string::npos) << lines[1];
}

TEST(ServerConfigErrorsTest, RuleLinesPointAtTheFieldEvenWhenAbsent) {
  std::vector<std::string> lines = ProblemLines(Parse("rdma: {}\nstorage:\n  mode: file\n"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {"test.yaml:3:9: storage.drives"}));
}

TEST(ServerConfigValidateTest, AppliesRulesToConfigsBuiltInCode) {
  ServerConfig c = EmbeddedDefaultConfig("/var/lib/memkv");
  c.network.port = 65535;
  c.network.host = "no spaces allowed";
  c.network.auth_key = std::vector<uint8_t>(16, 0);
  c.rdma.traffic_class = 3;
  Status s = ValidateServerConfig(c);
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  std::vector<std::string> lines = ProblemLines(Result<int>(s));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(CountLinesWith(lines, {"network.address"}), 2u);
  EXPECT_TRUE(HasLineWith(lines, {"network.auth_key: a key of 16 bytes", "32 bytes"}));
  EXPECT_TRUE(HasLineWith(lines, {"rdma.traffic_class: 3"}));
  // No source to name: lines start with the field.
  EXPECT_EQ(lines[0].rfind("network.address", 0), 0u) << lines[0];
}

TEST(ServerConfigFileTest, LoadsAFileAndNamesItInProblems) {
  TempFile good("storage:\n  mode: memory\nrdma:\n  mtu: 2048\n");
  Result<ServerConfig> r = LoadServerConfigFile(good.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rdma.mtu, 2048u);

  TempFile bad("storage:\n  mode: memory\nrdma:\n  mtu: 2000\n");
  std::vector<std::string> lines = ProblemLines(LoadServerConfigFile(bad.path()));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(HasLineWith(lines, {bad.path() + ":4:8: rdma.mtu: 2000"}));
}

TEST(ServerConfigFileTest, MissingFileIsAnIoErrorNamingPathAndErrno) {
  const std::string path = ::testing::TempDir() + "memkv_no_such_config.yaml";
  Result<ServerConfig> r = LoadServerConfigFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find(path), std::string::npos);
  EXPECT_NE(r.status().message().find("No such file or directory"), std::string::npos);

  Result<ServerConfig> dir = LoadServerConfigFile(::testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("Is a directory"), std::string::npos)
      << dir.status().ToString();
}


TEST(ServerConfigMetricsTest, NamespaceSettingsDefaultAndAreChecked) {
  Result<ServerConfig> defaults = Parse("memory:\n  max_size: 1 GiB\n");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->metrics.namespace_separator, "/");
  EXPECT_EQ(defaults->metrics.namespace_top, 16u);
  Result<ServerConfig> set = Parse("metrics:\n  namespace_separator: \"::\"\n  namespace_top: 4\n");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->metrics.namespace_separator, "::");
  EXPECT_EQ(set->metrics.namespace_top, 4u);
  std::vector<std::string> lines =
      ProblemLines(Parse("metrics:\n  namespace_top: 257\n  namespace_separator: \"123456789\"\n"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(HasLineWith(lines, {"metrics.namespace_top: 257 is out of range", "0..256"}));
  EXPECT_TRUE(HasLineWith(lines, {"metrics.namespace_separator: '123456789' is 9 bytes long", "0 to 8 bytes"}));
}

// fleet.*: the server's id (memory mode only) and placement weight;
// storage.busy_queue_size.
TEST(ServerConfigFleetTest, IdAndWeightInMemoryMode) {
  Result<ServerConfig> c = Parse(std::string(kMemoryMode) + "fleet:\n  id: cache-A.7_b\n  weight: 1099511627776\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->fleet.id, "cache-A.7_b");
  EXPECT_EQ(c->fleet.weight, std::optional<uint64_t>(1ULL << 40));
  Result<ServerConfig> none = Parse(kMemoryMode);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->fleet.id, "");
  EXPECT_FALSE(none->fleet.weight.has_value()) << "unset: the capacity";
  EXPECT_FALSE(none->storage.busy_queue_size_bytes.has_value()) << "unset: half the pool";
}

TEST(ServerConfigFleetTest, BadIdsAndWeightsAreRefusedNamingTheRule) {
  const std::string too_long(65, 'a');
  for (const std::string& id : {std::string("has space"), std::string("a/b"), std::string("caf\u00e9"), too_long}) {
    EXPECT_TRUE(HasLineWith(ProblemLines(Parse(std::string(kMemoryMode) + "fleet:\n  id: \"" + id + "\"\n")),
                            {"fleet.id", "1..64 characters of A-Z a-z 0-9 . _ -"}))
        << id;
  }
  EXPECT_TRUE(Parse(std::string(kMemoryMode) + "fleet:\n  id: " + std::string(64, 'a') + "\n").ok());
  EXPECT_TRUE(HasLineWith(ProblemLines(Parse(std::string(kMemoryMode) + "fleet:\n  weight: 0\n")),
                          {"fleet.weight", "0 is out of range", "1..1099511627776"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(Parse(std::string(kMemoryMode) + "fleet:\n  weight: 1099511627777\n")),
                          {"fleet.weight", "out of range", "1..1099511627776"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(Parse(std::string(kMemoryMode) + "fleet:\n  weight: heavy\n")),
                          {"fleet.weight", "'heavy'"}));
  EXPECT_TRUE(HasLineWith(ProblemLines(Parse(std::string(kMemoryMode) + "fleet:\n  name: x\n")),
                          {"unknown field 'fleet.name'"}));
}

TEST(ServerConfigFleetTest, FleetIdWithDrivesIsRefusedTheIdLivesWithTheData) {
  for (const char* mode : {"file", "direct"}) {
    const std::string yaml = std::string("storage:\n  mode: ") + mode + "\n  drives:\n    - media: /tmp/d0\n" +
                             "fleet:\n  id: cache-a\n";
    EXPECT_TRUE(HasLineWith(ProblemLines(Parse(yaml)),
                            {"fleet.id", std::string("storage.mode '") + mode + "'",
                             "the drives' store UUID", "storage.mode memory only"}))
        << mode;
  }
  // The weight is for every mode.
  EXPECT_TRUE(Parse("storage:\n  mode: file\n  drives:\n    - media: /tmp/d0\nfleet:\n  weight: 5\n").ok());
}

TEST(ServerConfigFleetTest, BusyQueueSizeIsASize) {
  Result<ServerConfig> c = Parse(std::string(kMemoryMode) + "  busy_queue_size: 64 MiB\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->storage.busy_queue_size_bytes, std::optional<uint64_t>(64ULL << 20));
  Result<ServerConfig> never = Parse(std::string(kMemoryMode) + "  busy_queue_size: 0\n");
  ASSERT_TRUE(never.ok());
  EXPECT_EQ(never->storage.busy_queue_size_bytes, std::optional<uint64_t>(0));
  EXPECT_TRUE(HasLineWith(ProblemLines(Parse(std::string(kMemoryMode) + "  busy_queue_size: lots\n")),
                          {"storage.busy_queue_size", "'lots'"}));
}

}  // namespace
}  // namespace memkv::config
