// memkv-bench's parsers and text: its command line (modes, their defaults,
// flags that do not apply), value sizes such as "2MiB+1", the admin
// endpoint's address in a server's log, its /v1/status "memory" object, RESP
// replies and INFO fields of the Redis reference and a RESP connection
// against a scripted peer, /proc/<pid>/stat CPU times, the batch a cell
// uses, and the --plot data and gnuplot script. None of these tests starts a
// process or needs redis-server or gnuplot.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "base/units.h"
#include "bench/admin_status.h"
#include "bench/cpu_time.h"
#include "bench/flags.h"
#include "bench/memkv_server.h"
#include "bench/options.h"
#include "bench/plot.h"
#include "bench/redis_reference.h"
#include "bench/replay.h"
#include "bench/sweep.h"
#include "io/socket.h"

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
  EXPECT_NE(error.find("--fill, --fresh and --replay are separate runs"), std::string::npos) << error;
  EXPECT_FALSE(Parse({"--fill", "--seconds", "2"}, &error));
  EXPECT_EQ(error, "--seconds does not apply to --fill");
  EXPECT_FALSE(Parse({"--fresh", "--servers", "h:1"}, &error));
  EXPECT_EQ(error, "--servers does not apply to --fresh");
  EXPECT_FALSE(Parse({"--fresh", "--cold"}, &error));
  EXPECT_EQ(error, "--cold does not apply to --fresh");
  EXPECT_FALSE(Parse({"--fresh", "--install-peers"}, &error));
  EXPECT_EQ(error, "--install-peers does not apply to --fresh");
  EXPECT_FALSE(Parse({"--fill", "--peer", "redis"}, &error));
  EXPECT_EQ(error, "--peer does not apply to --fill");
  EXPECT_FALSE(Parse({"--fill", "--batch", "4"}, &error));
  EXPECT_EQ(error, "--batch does not apply to --fill");
  EXPECT_FALSE(Parse({"--fresh", "--plot", "p.svg"}, &error));
  EXPECT_EQ(error, "--plot does not apply to --fresh");
  EXPECT_FALSE(Parse({"--no-redis"}, &error));
  EXPECT_EQ(error, "--no-redis does not apply to the sweep");
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

TEST(Flags, SecondsInRange) {
  double s = 0;
  std::string error;
  EXPECT_TRUE(ParseSeconds("--seconds", "0.25", 600, &s, &error));
  EXPECT_EQ(s, 0.25);
  EXPECT_TRUE(ParseSeconds("--seconds", "600", 600, &s, &error));
  EXPECT_EQ(s, 600.0);
  for (const char* bad : {"", "0", "-1", "601", "2s", "nan", "inf"}) {
    EXPECT_FALSE(ParseSeconds("--seconds", bad, 600, &s, &error)) << bad;
    EXPECT_EQ(error, std::string("--seconds: '") + bad + "' is not a number of seconds in (0, 600]");
  }
  EXPECT_EQ(s, 600.0);  // untouched by a refusal
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

TEST(Options, SweepTakesPeerBatchAndPlot) {
  std::string error;
  std::optional<BenchOptions> o = Parse({}, &error);
  ASSERT_TRUE(o) << error;
  EXPECT_FALSE(o->peer_redis);
  EXPECT_EQ(o->batch, 1u);
  EXPECT_EQ(o->plot_path, "");
  o = Parse({"--peer", "redis", "--batch=16", "--plot", "/tmp/p.svg", "--install-peers", "--redis",
             "/opt/redis-server"},
            &error);
  ASSERT_TRUE(o) << error;
  EXPECT_TRUE(o->peer_redis);
  EXPECT_EQ(o->batch, 16u);
  EXPECT_EQ(o->plot_path, "/tmp/p.svg");
  EXPECT_TRUE(o->install_peers);
  EXPECT_EQ(o->redis_path, "/opt/redis-server");
  o = Parse({"--plot", "p.svg", "--install-peers"}, &error);  // installs gnuplot only
  ASSERT_TRUE(o) << error;
  EXPECT_FALSE(o->peer_redis);
}

TEST(Options, RefusesBadPeerBatchAndPlot) {
  std::string error;
  EXPECT_FALSE(Parse({"--batch", "0"}, &error));
  EXPECT_EQ(error, "--batch: '0' is not a batch size between 1 and 1024");
  EXPECT_FALSE(Parse({"--batch", "1025"}, &error));
  EXPECT_EQ(error, "--batch: '1025' is not a batch size between 1 and 1024");
  EXPECT_FALSE(Parse({"--batch", "x"}, &error));
  EXPECT_FALSE(Parse({"--batch"}, &error));
  EXPECT_NE(error.find("--batch"), std::string::npos) << error;
  EXPECT_FALSE(Parse({"--peer", "mysql"}, &error));
  EXPECT_EQ(error, "--peer: 'mysql' is not a peer the bench can run; the one it knows is redis");
  EXPECT_FALSE(Parse({"--peer", ""}, &error));
  EXPECT_NE(error.find("redis"), std::string::npos) << error;
  EXPECT_FALSE(Parse({"--plot", ""}, &error));
  EXPECT_EQ(error, "--plot: empty path");
  EXPECT_FALSE(Parse({"--redis", "/opt/redis-server"}, &error));
  EXPECT_EQ(error, "--redis names the redis-server of --peer redis; give --peer redis too");
  EXPECT_FALSE(Parse({"--install-peers"}, &error));
  EXPECT_EQ(error, "--install-peers installs redis-server for --peer redis and gnuplot for --plot; give one of them");
}

TEST(Options, StorageSyncAndRedisPersistence) {
  std::string error;
  std::optional<BenchOptions> o = Parse(
      {"--storage", "file", "--sync", "always", "--drive-size", "2GiB", "--peer", "redis", "--redis-appendfsync",
       "always"},
      &error);
  ASSERT_TRUE(o.has_value()) << error;
  const MemkvServerConfig c = SpawnConfigOf(*o);
  EXPECT_TRUE(c.file_mode);
  EXPECT_EQ(c.sync, "always");
  EXPECT_EQ(c.drive_bytes, 2 * kGiB);
  EXPECT_EQ(o->redis_appendfsync, "always");
  EXPECT_EQ(c.flush_on_loop_us, 0u) << "not given: the server's default";
  o = Parse({"--storage", "file", "--sync", "always", "--flush-on-loop-us", "2000"}, &error);
  ASSERT_TRUE(o.has_value()) << error;
  EXPECT_EQ(SpawnConfigOf(*o).flush_on_loop_us, 2000u);
  EXPECT_FALSE(Parse({"--storage", "file", "--flush-on-loop-us", "2000"}, &error));
  EXPECT_EQ(error, "--flush-on-loop-us applies to --storage file --sync always (storage.flush_on_loop_us)");
  EXPECT_FALSE(Parse({"--storage", "file", "--sync", "always", "--flush-on-loop-us", "0"}, &error));
  EXPECT_EQ(error, "--flush-on-loop-us: '0' is not a number of microseconds between 1 and 1000000");
  EXPECT_FALSE(Parse({"--storage", "nvme"}, &error));
  EXPECT_EQ(error, "--storage: 'nvme'; allowed: memory, file");
  EXPECT_FALSE(Parse({"--sync", "always"}, &error));
  EXPECT_EQ(error, "--sync and --drive-size apply to --storage file");
  EXPECT_FALSE(Parse({"--peer", "redis", "--redis-appendfsync", "no"}, &error));
  EXPECT_EQ(error, "--redis-appendfsync: 'no'; allowed: everysec, always");
  EXPECT_FALSE(Parse({"--redis-appendfsync", "everysec"}, &error));
  EXPECT_EQ(error, "--redis-appendfsync configures the Redis of --peer redis; give --peer redis too");
}

TEST(CellBatch, StaysWithinTheWorkingSetAnd16MiB) {
  EXPECT_EQ(CellBatch(1, 4 * kKiB, 1024), 1u);
  EXPECT_EQ(CellBatch(16, 4 * kKiB, 1024), 16u);
  EXPECT_EQ(CellBatch(1024, 4 * kKiB, 1024), 1024u);
  EXPECT_EQ(CellBatch(16, kMiB, 1024), 16u);
  EXPECT_EQ(CellBatch(16, 2 * kMiB, 1024), 8u);
  EXPECT_EQ(CellBatch(16, 2 * kMiB + 1, 1024), 7u);
  EXPECT_EQ(CellBatch(16, 16 * kMiB, 128), 1u);
  EXPECT_EQ(CellBatch(16, 64 * kMiB, 16), 1u);  // one value always
  EXPECT_EQ(CellBatch(16, 64 * kKiB, 4), 4u);   // distinct keys per call
}

TEST(ProcStat, UtimePlusStimeInSeconds) {
  // Fields 14 (utime) and 15 (stime) are 250 and 50 ticks; the command name
  // holds a space and a ')'.
  const std::string stat =
      "4242 (redis serv) er) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 50 0 0 20 0 5 0 123456 "
      "123456789 2345 18446744073709551615 1 1 0 0 0 0 0 4096 17642 0 0 0 17 1 0 0 0 0 0\n";
  Result<double> s = ParseProcStatCpuSeconds(stat, 100);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_DOUBLE_EQ(*s, 3.0);
  EXPECT_DOUBLE_EQ(*ParseProcStatCpuSeconds(stat, 1000), 0.3);
}

TEST(ProcStat, NamesWhatIsWrong) {
  EXPECT_FALSE(ParseProcStatCpuSeconds("4242 redis S 1", 100).ok());
  Result<double> short_line = ParseProcStatCpuSeconds("4242 (redis) S 1 2 3 4 5 6 7 8 9 10", 100);
  ASSERT_FALSE(short_line.ok());
  EXPECT_NE(short_line.status().message().find("14 and 15"), std::string::npos) << short_line.status().ToString();
  Result<double> bad = ParseProcStatCpuSeconds("1 (x) S 1 1 1 0 -1 0 0 0 0 0 25x 5 0", 100);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("field 14 is '25x'"), std::string::npos) << bad.status().ToString();
  EXPECT_FALSE(ParseProcStatCpuSeconds("1 (x) S 1 1 1 0 -1 0 0 0 0 0 25 5 0", 0).ok());
}

TEST(ProcStat, ReadsThisProcess) {
  Result<double> s = ProcessCpuSeconds(::getpid());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_GE(*s, 0.0);
  EXPECT_GE(SelfCpuSeconds(), 0.0);
}

TEST(Resp, ParsesGetReplyHeaders) {
  BulkHeader h;
  EXPECT_EQ(*ParseBulkHeader("$5\r\nhello\r\n", &h), 4u);  // the header only; the value follows
  EXPECT_EQ(h.kind, BulkHeader::Kind::kValue);
  EXPECT_EQ(h.length, 5u);
  EXPECT_EQ(*ParseBulkHeader("$2097152\r\n", &h), 10u);
  EXPECT_EQ(h.length, 2097152u);
  EXPECT_EQ(*ParseBulkHeader("$0\r\n\r\n", &h), 4u);
  EXPECT_EQ(h.length, 0u);
  EXPECT_EQ(*ParseBulkHeader("$-1\r\n", &h), 5u);
  EXPECT_EQ(h.kind, BulkHeader::Kind::kNull);
  EXPECT_EQ(*ParseBulkHeader("-WRONGTYPE Operation against a key\r\n", &h), 36u);
  EXPECT_EQ(h.kind, BulkHeader::Kind::kError);
  EXPECT_EQ(h.error, "WRONGTYPE Operation against a key");
  EXPECT_EQ(*ParseBulkHeader("$209", &h), 0u);  // more to come
  EXPECT_EQ(*ParseBulkHeader("$209\r", &h), 0u);
  EXPECT_EQ(*ParseBulkHeader("", &h), 0u);
}

TEST(Resp, RefusesGetReplyHeadersItCannotRead) {
  BulkHeader h;
  EXPECT_FALSE(ParseBulkHeader("+OK\r\n", &h).ok());
  EXPECT_FALSE(ParseBulkHeader(":1\r\n", &h).ok());
  EXPECT_FALSE(ParseBulkHeader("*1\r\n", &h).ok());
  EXPECT_FALSE(ParseBulkHeader("$\r\n", &h).ok());
  EXPECT_FALSE(ParseBulkHeader("$12a\r\n", &h).ok());
  EXPECT_FALSE(ParseBulkHeader("$-2\r\n", &h).ok());
  EXPECT_FALSE(ParseBulkHeader("$999999999999\r\n", &h).ok());
  EXPECT_FALSE(ParseBulkHeader("\r\n", &h).ok());
}

// A scripted RESP peer on a loopback port: for each round it reads exactly
// the request bytes it expects, records them, then writes the canned reply
// in the given pieces.
struct ScriptedRound {
  size_t request_bytes;
  std::vector<std::string> reply_pieces;
};

class ScriptedPeer {
 public:
  explicit ScriptedPeer(std::vector<ScriptedRound> rounds) {
    Result<UniqueFd> listener = io::ListenTcp("127.0.0.1", 0, 1);
    EXPECT_TRUE(listener.ok()) << listener.status().ToString();
    port_ = *io::LocalPort(listener->get());
    thread_ = std::thread([this, fd = std::move(listener).value(), rounds = std::move(rounds)]() mutable {
      pollfd p{fd.get(), POLLIN, 0};
      ::poll(&p, 1, 10000);
      UniqueFd conn(::accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
      const Nanos deadline = MonotonicNanos() + Nanos(10) * 1'000'000'000;
      for (const ScriptedRound& r : rounds) {
        std::string request(r.request_bytes, '\0');
        if (!io::RecvAll(conn.get(), request.data(), request.size(), deadline).ok()) return;
        received_ += request;
        for (const std::string& piece : r.reply_pieces) {
          iovec v{const_cast<char*>(piece.data()), piece.size()};
          if (!io::SendAll(conn.get(), std::span<iovec>(&v, 1), deadline).ok()) return;
        }
      }
    });
  }
  ~ScriptedPeer() { Join(); }
  uint16_t port() const { return port_; }
  // Waits for the script to end (its last round, or its peer gone).
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // What the script read; call Join() first.
  const std::string& received() const { return received_; }

 private:
  uint16_t port_ = 0;
  std::string received_;
  std::thread thread_;
};

std::string GetCommand(const std::string& key) {
  return "*2\r\n$3\r\nGET\r\n$" + std::to_string(key.size()) + "\r\n" + key + "\r\n";
}

TEST(RespConnection, GetBatchIntoReadsEveryReplyAndStaysInStep) {
  const std::string big(20000, 'v');  // past the size read straight into the buffer
  const std::vector<std::string> keys = {"a", "b", "c", "d", "e"};
  std::string requests;
  for (const std::string& k : keys) requests += GetCommand(k);
  ScriptedPeer peer({
      {requests.size(),
       {"$5\r\nhel", "lo\r\n$-1\r\n-ERR boom\r\n$20000\r\n" + big.substr(0, 7000), big.substr(7000) + "\r",
        "\n$3\r\nabc\r\n"}},
      {GetCommand("f").size(), {"$1\r\nx\r\n"}},
  });
  Result<RespConnection> c = RespConnection::Connect(peer.port());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<std::vector<uint8_t>> storage = {std::vector<uint8_t>(5), std::vector<uint8_t>(5),
                                               std::vector<uint8_t>(5), std::vector<uint8_t>(20000),
                                               std::vector<uint8_t>(2)};
  std::vector<std::span<uint8_t>> buffers(storage.begin(), storage.end());
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<size_t> sizes;
  Status s = c->GetBatchInto(views, buffers, &sizes);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();  // the first failure: key b's miss
  EXPECT_NE(s.message().find("'b'"), std::string::npos) << s.ToString();
  ASSERT_EQ(sizes.size(), 5u);
  EXPECT_EQ(sizes[0], 5u);
  EXPECT_EQ(std::string(storage[0].begin(), storage[0].end()), "hello");
  EXPECT_EQ(sizes[3], 20000u);
  EXPECT_EQ(std::string(storage[3].begin(), storage[3].end()), big);
  EXPECT_EQ(sizes[4], 0u);  // "abc" does not fit 2 bytes: skipped, not read into the buffer
  // The stream is still in step: the next GET gets its own reply.
  std::vector<uint8_t> one(1);
  Result<size_t> got = c->GetInto("f", one);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, 1u);
  EXPECT_EQ(one[0], 'x');
}

TEST(RespConnection, SetBatchSendsTheValuesAndReportsTheFirstFailure) {
  const std::vector<std::string> keys = {"k1", "key2"};
  const std::vector<std::vector<uint8_t>> values = {{'a', 'b', 'c'}, std::vector<uint8_t>(300, 'z')};
  std::string want;
  for (size_t i = 0; i < keys.size(); ++i) {
    want += "*3\r\n$3\r\nSET\r\n$" + std::to_string(keys[i].size()) + "\r\n" + keys[i] + "\r\n$" +
            std::to_string(values[i].size()) + "\r\n" + std::string(values[i].begin(), values[i].end()) + "\r\n";
  }
  ScriptedPeer peer({{want.size(), {"+OK\r\n-OOM command not allowed\r\n"}}});
  {
    Result<RespConnection> c = RespConnection::Connect(peer.port());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<std::span<const uint8_t>> spans(values.begin(), values.end());
    Status s = c->SetBatch(views, spans);
    EXPECT_EQ(s.code(), StatusCode::kProtocolError) << s.ToString();
    EXPECT_NE(s.message().find("'key2'"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("OOM"), std::string::npos) << s.ToString();
  }
  peer.Join();
  EXPECT_EQ(peer.received(), want);
}

Row PlotRow(const std::string& op, uint64_t size, uint32_t conns, double memkv_mibs, bool raw, bool redis) {
  auto cell = [](double mibs) {
    CellResult c;
    c.bytes = static_cast<uint64_t>(mibs * double(kMiB));
    c.seconds = 1.0;
    return c;
  };
  Row r;
  r.op = op;
  r.size_bytes = size;
  r.conns = conns;
  r.memkv = cell(memkv_mibs);
  if (raw) r.raw = cell(memkv_mibs * 2);
  if (redis) r.redis = cell(memkv_mibs / 2);
  return r;
}

TEST(Plot, DataHasABlockPerOpAndConnectionCount) {
  const std::vector<Row> rows = {
      PlotRow("put", 4 * kKiB, 1, 100, true, true),     PlotRow("put", 4 * kKiB, 4, 200, true, true),
      PlotRow("put", 2 * kMiB + 1, 1, 1000, true, false), PlotRow("put", 2 * kMiB + 1, 4, 2000, false, true),
      PlotRow("get", 4 * kKiB, 1, 110, true, true),     PlotRow("get", 4 * kKiB, 4, 210, true, true),
  };
  const std::vector<PlotPanel> panels = PlotPanels(rows);
  ASSERT_EQ(panels.size(), 4u);
  EXPECT_EQ(panels[1].op, "put");
  EXPECT_EQ(panels[1].conns, 4u);
  EXPECT_EQ(panels[2].op, "get");
  EXPECT_EQ(panels[2].conns, 1u);
  const std::string data = PlotData(rows);
  EXPECT_NE(data.find("# put, 1 connection\n# size_bytes memkv raw redis label\n"
                      "4096 100.0 200.0 50.0 4KiB\n2097153 1000.0 2000.0 - 2MiB+1\n\n\n# put, 4 connections\n"),
            std::string::npos)
      << data;
  EXPECT_NE(data.find("2097153 2000.0 - 1000.0 2MiB+1\n"), std::string::npos) << data;
  EXPECT_NE(data.find("# get, 4 connections\n# size_bytes memkv raw redis label\n4096 210.0 420.0 105.0 4KiB\n"),
            std::string::npos)
      << data;
}

TEST(Plot, ScriptDrawsEveryPanelOnALog2Axis) {
  const std::vector<Row> rows = {
      PlotRow("put", 4 * kKiB, 1, 100, true, true), PlotRow("put", 4 * kKiB, 4, 200, true, true),
      PlotRow("get", 4 * kKiB, 1, 110, true, true), PlotRow("get", 4 * kKiB, 4, 210, true, true)};
  const PlotFiles files = PlotFilesFor("/tmp/out/it's.svg");
  EXPECT_EQ(files.data_path, "/tmp/out/it's.dat");
  EXPECT_EQ(files.script_path, "/tmp/out/it's.gp");
  EXPECT_EQ(PlotFilesFor("plot").data_path, "plot.dat");
  const std::string script = PlotScript(rows, files, "memkv-bench abc1234", true);
  for (const char* want :
       {"set terminal svg size 840,720 ", "set output '/tmp/out/it''s.svg'\n", "set logscale x 2\n",
        "set datafile missing '-'\n", "set multiplot layout 2,2 title 'memkv-bench abc1234'\n",
        "set title 'get, 4 connections'\n",
        "'/tmp/out/it''s.dat' index 3 using 1:2:xtic(5) with linespoints pt 7 ps 0.6 title 'memkv'",
        "index 3 using 1:3 with linespoints pt 7 ps 0.6 title 'raw'",
        "index 3 using 1:4 with linespoints pt 7 ps 0.6 title 'redis'",
        "unset multiplot\n"}) {
    EXPECT_NE(script.find(want), std::string::npos) << want << "\n" << script;
  }
  EXPECT_EQ(script.find("index 4"), std::string::npos) << script;
  const std::string without_redis = PlotScript(rows, files, "t", false);
  EXPECT_EQ(without_redis.find("redis"), std::string::npos) << without_redis;
}

// --replay: its flags, and the access log's lines grouped back into calls.
TEST(Options, ReplayTakesItsFileSpeedAndOneConnectionCount) {
  bool help = false;
  std::string error;
  std::optional<BenchOptions> o = ParseOptions({"--replay", "/tmp/a.jsonl", "--replay-speed", "2.5"}, &help, &error);
  ASSERT_TRUE(o.has_value()) << error;
  EXPECT_EQ(o->mode, BenchMode::kReplay);
  EXPECT_EQ(o->replay_path, "/tmp/a.jsonl");
  EXPECT_EQ(o->replay_speed, 2.5);
  EXPECT_EQ(o->conns, std::vector<uint32_t>{4});
  EXPECT_EQ(o->json_path, "bench-replay.json");
  EXPECT_FALSE(ParseOptions({"--replay", "a", "--conns", "1,2"}, &help, &error).has_value());
  EXPECT_NE(error.find("--replay takes one --conns count"), std::string::npos) << error;
  EXPECT_FALSE(ParseOptions({"--replay", "a", "--replay-speed", "-1"}, &help, &error).has_value());
  EXPECT_NE(error.find("--replay-speed: '-1'"), std::string::npos) << error;
  EXPECT_FALSE(ParseOptions({"--replay", "a", "--fill"}, &help, &error).has_value());
  EXPECT_FALSE(ParseOptions({"--replay", "a", "--batch", "4"}, &help, &error).has_value());
  EXPECT_EQ(error, "--batch does not apply to --replay");
}

TEST(AccessLogReplay, GroupsLinesIntoCallsInTheOrderTheyBegan) {
  const std::string text =
      R"({"time":100.5,"tenant":"","identity":"","op":"batch_get","key_hash":"00000000000000aa","size":10,"outcome":"hit","latency_us":3,"call":2,"keys":2})"
      "\n"
      R"({"time":100.5,"tenant":"","identity":"","op":"batch_get","key_hash":"00000000000000bb","size":0,"outcome":"miss","latency_us":3,"call":2,"keys":2})"
      "\n\n"
      R"({"time":100.25,"tenant":"t","identity":"x","op":"put","key_hash":"00000000000000aa","size":4096,"outcome":"stored","latency_us":9,"call":1,"keys":1})"
      "\n";
  Result<AccessLogFile> log = ParseAccessLog(text);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(log->calls.size(), 2u);
  EXPECT_EQ(log->calls[0].op, "put");  // it began first, though it was written last
  EXPECT_EQ(log->calls[1].op, "batch_get");
  EXPECT_EQ(log->calls[1].key_hashes, (std::vector<std::string>{"00000000000000aa", "00000000000000bb"}));
  EXPECT_EQ(log->calls[1].outcomes, (std::vector<std::string>{"hit", "miss"}));
  EXPECT_EQ(log->value_bytes.at("00000000000000aa"), 4096u);

  Result<AccessLogFile> bad = ParseAccessLog("{\"time\":1,\"op\":\"get\"}\n");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("line 1: no string \"key_hash\""), std::string::npos) << bad.status().message();
  Result<AccessLogFile> op = ParseAccessLog(
      "\n{\"time\":1,\"op\":\"list\",\"key_hash\":\"ab\",\"size\":0,\"outcome\":\"hit\",\"call\":1}\n");
  EXPECT_NE(op.status().message().find("line 2: op 'list' is not one the replay issues"), std::string::npos)
      << op.status().message();
  EXPECT_NE(ParseAccessLog("not json\n").status().message().find("line 1: not a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace memkv::bench
