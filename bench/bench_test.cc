// memkv-bench's parsers: its command line (modes, their defaults, flags that
// do not apply), value sizes such as "2MiB+1", the admin endpoint's address
// in a server's log, its /v1/status "memory" object, and RESP replies and
// INFO fields of the Redis reference. None of these tests starts a process.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/units.h"
#include "bench/admin_status.h"
#include "bench/flags.h"
#include "bench/memkv_server.h"
#include "bench/options.h"
#include "bench/redis_reference.h"

namespace memkv::bench {
namespace {

std::optional<BenchOptions> Parse(const std::vector<std::string>& args, std::string* error) {
  bool help = false;
  return ParseOptions(args, &help, error);
}

TEST(ValueSize, AddsBytesToASize) {
  EXPECT_EQ(*ParseValueSize("2MiB+1"), 2 * kMiB + 1);
  EXPECT_EQ(*ParseValueSize("1MiB+4KiB"), kMiB + 4 * kKiB);
  EXPECT_EQ(*ParseValueSize("4KiB"), 4 * kKiB);
  EXPECT_EQ(*ParseValueSize("100"), 100u);
}

TEST(ValueSize, RefusesMalformedSums) {
  EXPECT_FALSE(ParseValueSize("2MiB+").ok());
  EXPECT_FALSE(ParseValueSize("+1").ok());
  EXPECT_FALSE(ParseValueSize("2MiB+x").ok());
  EXPECT_FALSE(ParseValueSize("16EiB+16EiB").ok());
  EXPECT_FALSE(ParseValueSize("15TiB+18446744073709551615").ok());
}

TEST(ValueSize, FormatsBackAsParsed) {
  EXPECT_EQ(FormatValueSize(2 * kMiB + 1), "2 MiB+1");
  EXPECT_EQ(FormatValueSize(2 * kMiB), "2 MiB");
  EXPECT_EQ(FormatValueSize(4096 + 904), "4 KiB+904");
  EXPECT_EQ(FormatValueSize(1000), "1000 B");
  for (uint64_t size : std::vector<uint64_t>{2 * kMiB + 1, 4 * kKiB, 5000, 1000}) {
    std::string text = FormatValueSize(size);
    text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
    EXPECT_EQ(*ParseValueSize(text), size) << text;
  }
}

TEST(Options, SweepDefaultsAreUnchanged) {
  std::string error;
  std::optional<BenchOptions> o = Parse({}, &error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ(o->mode, BenchMode::kSweep);
  EXPECT_EQ(o->sizes_bytes, (std::vector<uint64_t>{4 * kKiB, 64 * kKiB, 256 * kKiB, kMiB, 2 * kMiB, 4 * kMiB,
                                                   16 * kMiB}));
  EXPECT_EQ(o->conns, (std::vector<uint32_t>{1, 4, 16, 64}));
  EXPECT_EQ(o->pool_bytes, 4 * kGiB);
  EXPECT_EQ(o->seconds, 1.0);
  EXPECT_EQ(o->repeat, 1u);
  EXPECT_EQ(o->json_path, "bench-results.json");
  EXPECT_TRUE(o->prefault);
}

TEST(Options, FillHasItsOwnDefaults) {
  std::string error;
  std::optional<BenchOptions> o = Parse({"--fill"}, &error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ(o->mode, BenchMode::kFill);
  EXPECT_EQ(o->sizes_bytes, (std::vector<uint64_t>{4 * kKiB, 64 * kKiB, 2 * kMiB + 1}));
  EXPECT_EQ(o->conns, (std::vector<uint32_t>{4}));
  EXPECT_EQ(o->pool_bytes, kGiB);
  EXPECT_EQ(o->json_path, "bench-fill.json");
  EXPECT_TRUE(o->redis);
  EXPECT_FALSE(o->install_peers);
}

TEST(Options, FreshHasItsOwnDefaults) {
  std::string error;
  std::optional<BenchOptions> o = Parse({"--fresh"}, &error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ(o->mode, BenchMode::kFresh);
  EXPECT_EQ(o->sizes_bytes, (std::vector<uint64_t>{4 * kKiB, 2 * kMiB}));
  EXPECT_EQ(o->conns, (std::vector<uint32_t>{1, 16}));
  EXPECT_EQ(o->pool_bytes, 2 * kGiB);
  EXPECT_EQ(o->seconds, 10.0);
  EXPECT_EQ(o->repeat, 3u);
  EXPECT_EQ(o->json_path, "bench-fresh.json");
}

TEST(Options, GivenFlagsOverrideModeDefaults) {
  std::string error;
  std::optional<BenchOptions> o =
      Parse({"--fresh", "--sizes", "64KiB,2MiB+1", "--conns=4", "--pool", "512MiB", "--seconds", "2",
             "--repeat", "1", "--no-prefault", "--json", "/tmp/x.json"},
            &error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ(o->sizes_bytes, (std::vector<uint64_t>{64 * kKiB, 2 * kMiB + 1}));
  EXPECT_EQ(o->conns, (std::vector<uint32_t>{4}));
  EXPECT_EQ(o->pool_bytes, 512 * kMiB);
  EXPECT_EQ(o->seconds, 2.0);
  EXPECT_EQ(o->repeat, 1u);
  EXPECT_FALSE(o->prefault);
  EXPECT_EQ(o->json_path, "/tmp/x.json");
}

TEST(Options, FillTakesRedisFlags) {
  std::string error;
  std::optional<BenchOptions> o = Parse({"--fill", "--install-peers", "--redis", "/opt/redis-server"}, &error);
  ASSERT_TRUE(o) << error;
  EXPECT_TRUE(o->install_peers);
  EXPECT_EQ(o->redis_path, "/opt/redis-server");
  o = Parse({"--fill", "--no-redis"}, &error);
  ASSERT_TRUE(o) << error;
  EXPECT_FALSE(o->redis);
}

TEST(Options, RefusesFlagsThatDoNotApply) {
  std::string error;
  EXPECT_FALSE(Parse({"--fill", "--fresh"}, &error));
  EXPECT_NE(error.find("--fill and --fresh"), std::string::npos) << error;
  EXPECT_FALSE(Parse({"--fill", "--seconds", "2"}, &error));
  EXPECT_EQ(error, "--seconds does not apply to --fill");
  EXPECT_FALSE(Parse({"--fresh", "--servers", "h:1"}, &error));
  EXPECT_EQ(error, "--servers does not apply to --fresh");
  EXPECT_FALSE(Parse({"--fresh", "--cold"}, &error));
  EXPECT_EQ(error, "--cold does not apply to --fresh");
  EXPECT_FALSE(Parse({"--install-peers"}, &error));
  EXPECT_EQ(error, "--install-peers does not apply to the sweep");
  EXPECT_FALSE(Parse({"--servers", "h:1", "--no-prefault"}, &error));
  EXPECT_NE(error.find("not to --servers"), std::string::npos) << error;
  EXPECT_FALSE(Parse({"--fill", "--conns", "1,4"}, &error));
  EXPECT_NE(error.find("one --conns count"), std::string::npos) << error;
}

TEST(Options, SweepTakesNoPrefault) {
  std::string error;
  std::optional<BenchOptions> o = Parse({"--no-prefault", "--cold"}, &error);
  ASSERT_TRUE(o) << error;
  EXPECT_FALSE(o->prefault);
  EXPECT_FALSE(o->warm_pool);
}

TEST(Options, RefusesBadSizes) {
  std::string error;
  EXPECT_FALSE(Parse({"--fill", "--sizes", "2MiB+"}, &error));
  EXPECT_NE(error.find("'2MiB+'"), std::string::npos) << error;
  EXPECT_FALSE(Parse({"--sizes", "256MiB+1"}, &error));
  EXPECT_FALSE(Parse({"--sizes", "0"}, &error));
}

TEST(AdminAddressInLog, FoundOnTheServingLine) {
  const std::string log =
      "2026-11-25T10:00:00Z INFO start: memory store: 1 GiB pool\n"
      "2026-11-25T10:00:00Z INFO start: serving on 127.0.0.1:41234; admin endpoint on "
      "http://127.0.0.1:41235\n";
  Result<AdminAddress> a = FindAdminAddress(log);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 41235);
}

TEST(AdminAddressInLog, MissingOrMalformed) {
  EXPECT_FALSE(FindAdminAddress("INFO start: memory store: 1 GiB pool\n").ok());
  EXPECT_FALSE(FindAdminAddress("admin endpoint on http://127.0.0.1\n").ok());
  EXPECT_FALSE(FindAdminAddress("admin endpoint on http://127.0.0.1:70000\n").ok());
  EXPECT_FALSE(FindAdminAddress("admin endpoint on http://127.0.0.1:12a\n").ok());
}

TEST(PoolStatusJson, ReadsTheMemoryObject) {
  const std::string json = R"({"version": "1", "devices": [{"used_bytes": 7}],
    "memory": {"pool_bytes": 1073741824, "block_size_bytes": 2097152, "used_bytes": 1073741824,
               "value_bytes": 1073737728, "free_bytes": 0, "largest_free_bytes": 0, "fragmentation": 0,
               "bytes_per_value_byte": 1.0000038, "keys": 262143, "hits": 0, "misses": 0, "evictions": 2,
               "checksum_failures": 0, "pages": "transparent hugepages"}})";
  Result<PoolStatus> s = ParsePoolStatus(json);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->pool_bytes, kGiB);
  EXPECT_EQ(s->used_bytes, kGiB);  // the memory object's, not the device's
  EXPECT_EQ(s->value_bytes, 1073737728u);
  EXPECT_EQ(s->keys, 262143u);
  EXPECT_EQ(s->evictions, 2u);
  EXPECT_DOUBLE_EQ(s->bytes_per_value_byte, 1.0000038);
}

TEST(PoolStatusJson, NamesWhatIsMissing) {
  Result<PoolStatus> s = ParsePoolStatus(R"({"memory": {"pool_bytes": 1}})");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("memory.used_bytes"), std::string::npos) << s.status().ToString();
  EXPECT_FALSE(ParsePoolStatus(R"({"devices": []})").ok());
  EXPECT_FALSE(ParsePoolStatus("not json").ok());
  EXPECT_FALSE(ParsePoolStatus(R"({"memory": {"pool_bytes": -1}})").ok());
}

TEST(Resp, ParsesRepliesWholeOrWaitsForMore) {
  RespReply r;
  EXPECT_EQ(*ParseRespReply("+OK\r\n+OK\r\n", &r), 5u);
  EXPECT_EQ(r.type, '+');
  EXPECT_EQ(r.text, "OK");
  EXPECT_EQ(*ParseRespReply("$5\r\nhel", &r), 0u);
  EXPECT_EQ(*ParseRespReply("$5\r\nhello\r\n", &r), 11u);
  EXPECT_EQ(r.text, "hello");
  EXPECT_EQ(*ParseRespReply("$-1\r\n", &r), 5u);
  EXPECT_TRUE(r.null);
  EXPECT_EQ(*ParseRespReply(":42\r\n", &r), 5u);
  EXPECT_EQ(r.text, "42");
  EXPECT_EQ(*ParseRespReply("-ERR wrong\r\n", &r), 12u);
  EXPECT_EQ(r.type, '-');
  EXPECT_EQ(*ParseRespReply("+OK", &r), 0u);
}

TEST(Resp, RefusesWhatItCannotRead) {
  RespReply r;
  EXPECT_FALSE(ParseRespReply("*2\r\n", &r).ok());
  EXPECT_FALSE(ParseRespReply("$x\r\n", &r).ok());
  EXPECT_FALSE(ParseRespReply("$2\r\nabcd", &r).ok());
  EXPECT_FALSE(ParseRespReply("\r\n", &r).ok());
}

TEST(Resp, InfoFields) {
  const std::string info =
      "# Memory\r\nused_memory:1234567\r\nused_memory_human:1.18M\r\nmem_allocator:jemalloc-5.3.0\r\n";
  EXPECT_EQ(InfoField(info, "used_memory"), "1234567");
  EXPECT_EQ(InfoField(info, "mem_allocator"), "jemalloc-5.3.0");
  EXPECT_EQ(InfoField(info, "used"), std::nullopt);
  EXPECT_EQ(InfoField(info, "maxmemory"), std::nullopt);
}

}  // namespace
}  // namespace memkv::bench
