#include "bench/fill.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "base/units.h"
#include "bench/flags.h"
#include "bench/memkv_target.h"
#include "bench/payload.h"
#include "bench/peers.h"
#include "bench/process.h"
#include "bench/redis_reference.h"

namespace memkv::bench {
namespace {

constexpr uint64_t kPoolUnitBytes = 64;         // the pool's allocation unit (storage/memory_store.h)
constexpr uint64_t kDistinctValues = 1024;      // value i is pattern window i % this
constexpr uint64_t kBatchBytes = 1ULL << 20;    // a BatchPut carries about this much
constexpr uint32_t kMaxBatchKeys = 64;
constexpr uint64_t kRedisPipelineBytes = 4ULL << 20;  // SETs in flight on the redis connection
constexpr uint32_t kMaxRedisPipeline = 256;
constexpr uint32_t kRoundsPerPool = 16;         // a round puts at most 1/16 of the pool
constexpr uint32_t kMaxRounds = 4 * kRoundsPerPool;
constexpr uint64_t kVerifiedValues = 16;        // the newest values, read back byte-exact
constexpr int kRedisClientsWaitMs = 5000;

double PerByte(double bytes, uint64_t value_bytes) { return value_bytes > 0 ? bytes / double(value_bytes) : 0; }

uint64_t ResidentOrZero(pid_t pid) {
  Result<uint64_t> rss = ResidentBytes(pid);
  return rss.ok() ? *rss : 0;
}

// "memkv-bench/fill/<size>/<i>": the same names, so the same key lengths, for memkv and redis.
std::vector<std::string> FillKeys(uint64_t size_bytes, uint64_t count) {
  std::vector<std::string> keys;
  keys.reserve(count);
  const std::string prefix = "memkv-bench/fill/" + std::to_string(size_bytes) + "/";
  for (uint64_t i = 0; i < count; ++i) keys.push_back(prefix + std::to_string(i));
  return keys;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

uint64_t Footprint(uint64_t size_bytes) { return (size_bytes + kPoolUnitBytes - 1) / kPoolUnitBytes * kPoolUnitBytes; }

// The redis-server to use, or "" with *why saying why there is none.
std::string FindRedis(const BenchOptions& o, const SpawnEnv& env, std::string* why) {
  if (!o.redis) {
    *why = "--no-redis";
    return "";
  }
  return FindPeer(kRedisProgram, o.redis_path, o.install_peers, env.path, why);
}

// ---- memkv ----

// What one size's fill needs.
struct FillPlan {
  uint64_t size_bytes;
  uint32_t conns;
  uint64_t pool_bytes;
  const std::vector<std::string>* keys;
  const Payloads* payloads;
};

// Puts keys [first, first + n) over plan.conns threads; returns the keys that failed.
uint64_t PutRange(Client& client, const FillPlan& p, uint32_t batch, uint64_t first, uint64_t n) {
  std::atomic<uint64_t> failed_keys{0};
  const uint64_t batches = (n + batch - 1) / batch;
  const std::string what = "memkv fill " + FormatValueSize(p.size_bytes);
  ForEachItem(p.conns, batches, what, [&](uint32_t, uint64_t b) {
    const uint64_t begin = first + b * batch;
    const uint64_t end = std::min(begin + batch, first + n);
    if (end - begin == 1) {
      Status s = client.Put((*p.keys)[begin], p.payloads->Value(begin % kDistinctValues));
      if (!s.ok()) failed_keys.fetch_add(1);
      return s;
    }
    std::vector<std::string_view> keys;
    std::vector<std::span<const uint8_t>> values;
    for (uint64_t i = begin; i < end; ++i) {
      keys.push_back((*p.keys)[i]);
      values.push_back(p.payloads->Value(i % kDistinctValues));
    }
    BatchResult r = client.BatchPut(keys, values);
    Status first_error;
    for (const Status& s : r.statuses) {
      if (s.ok()) continue;
      failed_keys.fetch_add(1);
      if (first_error.ok()) first_error = s;
    }
    return first_error;
  });
  return failed_keys.load();
}

// The newest values (never evicted first), read back and compared.
void VerifyNewest(Client& client, const FillPlan& p, FillRow* row) {
  const uint64_t n = std::min<uint64_t>({kVerifiedValues, row->pool.keys, row->puts});
  std::span<uint8_t> buffer = p.payloads->Buffer(0);
  for (uint64_t i = row->puts - n; i < row->puts; ++i) {
    Result<size_t> got = client.GetInto((*p.keys)[i], buffer);
    if (got.ok() && p.payloads->FullCheck(i % kDistinctValues, buffer.first(*got))) {
      ++row->verified;
      continue;
    }
    ++row->verify_errors;
    std::fprintf(stderr, "error: memkv fill %s: '%s' %s\n", FormatValueSize(p.size_bytes).c_str(),
                 (*p.keys)[i].c_str(), got.ok() ? "read back different bytes" : got.status().ToString().c_str());
  }
}

// Rounds of puts until the server evicts or stops growing. The rounds' puts
// are timed; the status reads between them are not.
Status FillRounds(Client& client, const AdminAddress& admin, const FillPlan& p, FillRow* row) {
  const uint64_t footprint = Footprint(p.size_bytes);
  const uint64_t max_round = std::max<uint64_t>(p.pool_bytes / footprint / kRoundsPerPool, 1);
  MEMKV_ASSIGN_OR_RETURN(row->pool, ReadPoolStatus(admin.host, admin.port));
  while (row->pool.evictions == 0) {
    if (row->rounds == kMaxRounds) return Internal("the pool reported no eviction after " +
                                                  std::to_string(kMaxRounds) + " rounds of puts");
    const uint64_t fits = (row->pool.pool_bytes - std::min(row->pool.used_bytes, row->pool.pool_bytes)) / footprint;
    const uint64_t n = std::min(std::clamp<uint64_t>(fits, 1, max_round), p.keys->size() - row->puts);
    if (n == 0) return Internal("ran out of keys before the pool was full");
    const auto start = std::chrono::steady_clock::now();
    row->put_errors += PutRange(client, p, row->batch, row->puts, n);
    row->seconds += SecondsSince(start);
    row->puts += n;
    ++row->rounds;
    const uint64_t before = row->pool.value_bytes;
    MEMKV_ASSIGN_OR_RETURN(row->pool, ReadPoolStatus(admin.host, admin.port));
    if (row->pool.value_bytes <= before) break;  // full without evicting (or every put failed)
  }
  return Status::Ok();
}

FillRow FillMemkv(const BenchOptions& o, const SpawnEnv& env, const std::string& key_hex, const FillPlan& p) {
  FillRow row;
  row.size_bytes = p.size_bytes;
  row.conns = p.conns;
  row.batch = static_cast<uint32_t>(std::clamp<uint64_t>(kBatchBytes / p.size_bytes, 1, kMaxBatchKeys));
  auto fail = [&row](const Status& s) {
    std::fprintf(stderr, "error: memkv fill %s: %s\n", FormatValueSize(row.size_bytes).c_str(),
                 s.ToString().c_str());
    ++row.other_errors;
  };
  Result<std::unique_ptr<MemkvServer>> server =
      MemkvServer::Start(env.memkv_binary, [&] { MemkvServerConfig c = SpawnConfigOf(o); c.pool_bytes = p.pool_bytes; return c; }(), key_hex, env.temp_base);
  if (!server.ok()) {
    fail(server.status());
    return row;
  }
  if (!(*server)->admin().ok()) {
    fail((*server)->admin().status());
    return row;
  }
  const MemkvTarget target({(*server)->address()}, key_hex, "fill");
  Result<std::unique_ptr<Client>> client = target.Connect(p.conns);
  if (!client.ok()) {
    fail(client.status());
    return row;
  }
  // Open every connection before the first timed put.
  ForEachItem(p.conns, p.conns, "memkv connect", [&](uint32_t, uint64_t) {
    return (*client)->Exists("memkv-bench/connect").status();
  });
  row.rss_before = ResidentOrZero((*server)->pid());
  Status filled = FillRounds(**client, *(*server)->admin(), p, &row);
  if (!filled.ok()) fail(filled);
  row.rss_after = ResidentOrZero((*server)->pid());
  VerifyNewest(**client, p, &row);
  client->reset();
  if (const int rc = (*server)->Stop(); rc != 0) {
    fail(Internal("memkv server exited with status " + std::to_string(rc) + " after SIGTERM"));
  }
  return row;
}

// ---- redis ----

Result<uint64_t> UsedMemory(RespConnection& c) {
  MEMKV_ASSIGN_OR_RETURN(std::string info, c.Command({"INFO", "memory"}));
  const std::optional<std::string> used = InfoField(info, "used_memory");
  if (!used) return ProtocolError("INFO memory has no used_memory");
  return std::strtoull(used->c_str(), nullptr, 10);
}

// Waits until the control connection is the only client: redis frees a
// closed client's buffers when it sees the close, which must happen before
// used_memory is read again.
Status WaitForOneClient(RespConnection& c) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRedisClientsWaitMs);
  while (std::chrono::steady_clock::now() < deadline) {
    MEMKV_ASSIGN_OR_RETURN(std::string info, c.Command({"INFO", "clients"}));
    if (InfoField(info, "connected_clients").value_or("") == "1") return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // poll interval
  }
  return DeadlineExceeded("redis still lists the fill connection after it closed");
}

Status FillRedisOnce(RedisServer& server, const FillPlan& p, uint64_t first, RedisFill* out) {
  MEMKV_ASSIGN_OR_RETURN(RespConnection control, RespConnection::Connect(server.port()));
  MEMKV_ASSIGN_OR_RETURN(out->used_before, UsedMemory(control));
  out->rss_before = ResidentOrZero(server.pid());
  {
    MEMKV_ASSIGN_OR_RETURN(RespConnection data, RespConnection::Connect(server.port()));
    const auto pipeline = static_cast<uint32_t>(
        std::clamp<uint64_t>(kRedisPipelineBytes / p.size_bytes, 1, kMaxRedisPipeline));
    const std::span<const std::string> keys(p.keys->data() + first, out->values);
    const ValueFn value = [&](uint64_t i) { return p.payloads->Value((first + i) % kDistinctValues); };
    const auto start = std::chrono::steady_clock::now();
    MEMKV_ASSIGN_OR_RETURN(out->errors, data.PipelinedSet(keys, value, pipeline));
    out->seconds = SecondsSince(start);
  }
  MEMKV_RETURN_IF_ERROR(WaitForOneClient(control));
  MEMKV_ASSIGN_OR_RETURN(out->used_after, UsedMemory(control));
  out->rss_after = ResidentOrZero(server.pid());
  MEMKV_ASSIGN_OR_RETURN(std::string dbsize, control.Command({"DBSIZE"}));
  out->db_keys = std::strtoull(dbsize.c_str(), nullptr, 10);
  if (out->db_keys != out->values) {
    std::fprintf(stderr, "error: redis holds %llu keys after %llu SETs\n",
                 static_cast<unsigned long long>(out->db_keys), static_cast<unsigned long long>(out->values));
    ++out->errors;
  }
  return Status::Ok();
}

// The keys memkv holds at the end (the newest: eviction takes the least
// recently used first), the same values, into a fresh redis-server.
RedisFill FillRedis(const std::string& binary, const SpawnEnv& env, const FillPlan& p, const FillRow& memkv) {
  RedisFill out;
  out.values = std::min(memkv.pool.keys, memkv.puts);
  out.value_bytes = out.values * p.size_bytes;
  Result<std::unique_ptr<RedisServer>> server = RedisServer::Start(binary, env.temp_base);
  Status s = server.ok() ? FillRedisOnce(**server, p, memkv.puts - out.values, &out) : server.status();
  if (s.ok() && (*server)->Stop() != 0) s = Internal("redis-server did not exit cleanly after SIGTERM");
  if (!s.ok()) {
    std::fprintf(stderr, "error: redis fill %s: %s\n", FormatValueSize(p.size_bytes).c_str(), s.ToString().c_str());
    ++out.errors;
  }
  return out;
}

// Redis's version and allocator, from a throwaway server, for the header.
void DescribeRedis(const std::string& binary, const SpawnEnv& env, FillRunInfo* info) {
  Result<std::unique_ptr<RedisServer>> server = RedisServer::Start(binary, env.temp_base);
  if (!server.ok()) {
    info->redis_missing = server.status().ToString();
    info->redis_binary.clear();
    return;
  }
  info->redis_version = (*server)->version();
  Result<RespConnection> c = RespConnection::Connect((*server)->port());
  Result<std::string> memory = c.ok() ? c->Command({"INFO", "memory"}) : Result<std::string>(c.status());
  if (memory.ok()) info->redis_allocator = InfoField(*memory, "mem_allocator").value_or("unknown");
}

}  // namespace

double FillTarget(uint64_t size_bytes) { return size_bytes < kMiB ? 1.10 : 1.05; }

double RedisFill::UsedPerValueByte() const {
  return PerByte(double(used_after) - double(used_before), value_bytes);
}
double RedisFill::RssPerValueByte() const { return PerByte(double(rss_after), value_bytes); }
double RedisFill::MiBPerSecond() const { return seconds > 0 ? double(value_bytes) / seconds / double(kMiB) : 0; }

double FillRow::PoolPerValueByte() const { return PerByte(double(pool.used_bytes), pool.value_bytes); }
double FillRow::RssPerValueByte() const { return PerByte(double(rss_after), pool.value_bytes); }
double FillRow::BeyondPoolPerValueByte() const {
  return PerByte(double(rss_after) - double(pool.pool_bytes), pool.value_bytes);
}
double FillRow::OpsPerSecond() const { return seconds > 0 ? double(puts - put_errors) / seconds : 0; }
double FillRow::MiBPerSecond() const {
  return seconds > 0 ? double(puts - put_errors) * double(size_bytes) / seconds / double(kMiB) : 0;
}
uint64_t FillRow::Errors() const {
  return put_errors + verify_errors + other_errors + (redis ? redis->errors : 0);
}

int RunFill(const BenchOptions& o, const SpawnEnv& env, const RunFacts& machine) {
  ::signal(SIGPIPE, SIG_IGN);
  FillRunInfo info;
  info.machine = machine;
  info.pool_bytes = o.pool_bytes;
  info.prefault = o.prefault;
  info.memkv_binary = env.memkv_binary;
  info.redis_binary = FindRedis(o, env, &info.redis_missing);
  if (!info.redis_binary.empty()) DescribeRedis(info.redis_binary, env, &info);
  Result<std::string> key_hex = RandomAuthKeyHex();
  if (!key_hex.ok()) {
    std::fprintf(stderr, "memkv-bench: %s\n", key_hex.status().ToString().c_str());
    return 1;
  }
  const uint32_t conns = o.conns.front();
  PrintFillHeader(stdout, info, conns);
  std::fflush(stdout);

  std::vector<FillRow> rows;
  uint64_t errors = 0;
  for (uint64_t size : o.sizes_bytes) {
    // Enough keys for the rounds' worst overshoot past a full pool.
    const uint64_t fits = o.pool_bytes / Footprint(size);
    const std::vector<std::string> keys = FillKeys(size, fits + fits / 8 + kMaxRounds);
    const Payloads payloads(size, kDistinctValues, 1);
    const FillPlan plan{size, conns, o.pool_bytes, &keys, &payloads};
    FillRow row = FillMemkv(o, env, *key_hex, plan);
    if (row.pool.evictions == 0 && row.other_errors == 0) {
      std::fprintf(stderr, "note: fill %s: the pool filled without evicting (value bytes stopped growing)\n",
                   FormatValueSize(size).c_str());
    }
    if (!info.redis_binary.empty() && row.pool.keys > 0) row.redis = FillRedis(info.redis_binary, env, plan, row);
    errors += row.Errors();
    rows.push_back(std::move(row));
    if (::isatty(STDERR_FILENO)) PrintFillProgress(stderr, rows.size(), o.sizes_bytes.size(), rows.back());
  }
  PrintFillTables(stdout, info, rows);
  Status written = WriteTextFile(o.json_path, FillJson(info, rows, errors));
  if (!written.ok()) std::fprintf(stderr, "memkv-bench: %s\n", written.ToString().c_str());
  std::printf("\n%s; results in %s\n", errors == 0 ? "no errors" : "ERRORS: see stderr", o.json_path.c_str());
  return errors == 0 && written.ok() ? 0 : 1;
}

}  // namespace memkv::bench
