// What memkv-bench --fill prints and writes (bench/fill.h).
#include <cinttypes>
#include <cstdio>

#include "base/json.h"
#include "base/units.h"
#include "bench/fill.h"
#include "bench/flags.h"

namespace memkv::bench {
namespace {

std::string Fixed(double v, int digits) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, v);
  return text;
}

// A redis figure, or "-" when the reference did not run.
std::string RedisFigure(const FillRow& r, double (RedisFill::*figure)() const, int digits) {
  if (!r.redis || r.redis->errors != 0 || r.redis->value_bytes == 0) return "-";
  return Fixed(((*r.redis).*figure)(), digits);
}

std::string RssRatio(const FillRow& r) {
  if (!r.redis || r.redis->errors != 0 || r.redis->RssPerValueByte() <= 0) return "-";
  return Fixed(r.RssPerValueByte() / r.redis->RssPerValueByte(), 2);
}

std::string FillRatio(const FillRow& r) {
  if (!r.redis || r.redis->errors != 0 || r.redis->MiBPerSecond() <= 0) return "-";
  return Fixed(r.MiBPerSecond() / r.redis->MiBPerSecond(), 2);
}

std::string RedisOps(const FillRow& r) {
  if (!r.redis || r.redis->errors != 0 || r.redis->seconds <= 0) return "-";
  return Fixed(double(r.redis->values) / r.redis->seconds, 0);
}

const char* Verdict(const FillRow& r) {
  if (r.pool.value_bytes == 0) return "-";
  return r.PoolPerValueByte() <= FillTarget(r.size_bytes) ? "met" : "MISSED";
}

void WriteRedisJson(JsonWriter& w, const RedisFill& r) {
  w.BeginObject()
      .Key("values").Number(r.values)
      .Key("value_bytes").Number(r.value_bytes)
      .Key("db_keys").Number(r.db_keys)
      .Key("used_memory_before").Number(r.used_before)
      .Key("used_memory_after").Number(r.used_after)
      .Key("used_per_value_byte").Number(r.UsedPerValueByte())
      .Key("rss_before").Number(r.rss_before)
      .Key("rss_after").Number(r.rss_after)
      .Key("rss_per_value_byte").Number(r.RssPerValueByte())
      .Key("seconds").Number(r.seconds)
      .Key("mib_per_s").Number(r.MiBPerSecond())
      .Key("errors").Number(r.errors)
      .EndObject();
}

void WriteRowJson(JsonWriter& w, const FillRow& r) {
  w.BeginObject()
      .Key("size_bytes").Number(r.size_bytes)
      .Key("conns").Number(uint64_t(r.conns))
      .Key("batch_keys").Number(uint64_t(r.batch))
      .Key("puts").Number(r.puts)
      .Key("put_errors").Number(r.put_errors)
      .Key("rounds").Number(uint64_t(r.rounds))
      .Key("seconds").Number(r.seconds)
      .Key("ops_per_s").Number(r.OpsPerSecond())
      .Key("mib_per_s").Number(r.MiBPerSecond());
  w.Key("memory").BeginObject()
      .Key("pool_bytes").Number(r.pool.pool_bytes)
      .Key("used_bytes").Number(r.pool.used_bytes)
      .Key("value_bytes").Number(r.pool.value_bytes)
      .Key("free_bytes").Number(r.pool.free_bytes)
      .Key("largest_free_bytes").Number(r.pool.largest_free_bytes)
      .Key("fragmentation").Number(r.pool.fragmentation)
      .Key("bytes_per_value_byte").Number(r.pool.bytes_per_value_byte)
      .Key("keys").Number(r.pool.keys)
      .Key("evictions").Number(r.pool.evictions)
      .EndObject();
  w.Key("pool_per_value_byte").Number(r.PoolPerValueByte())
      .Key("target").Number(FillTarget(r.size_bytes))
      .Key("target_met").Bool(r.pool.value_bytes > 0 && r.PoolPerValueByte() <= FillTarget(r.size_bytes))
      .Key("rss_before").Number(r.rss_before)
      .Key("rss_after").Number(r.rss_after)
      .Key("rss_per_value_byte").Number(r.RssPerValueByte())
      .Key("rss_beyond_pool_per_value_byte").Number(r.BeyondPoolPerValueByte())
      .Key("verified").Number(r.verified)
      .Key("verify_errors").Number(r.verify_errors)
      .Key("other_errors").Number(r.other_errors);
  w.Key("redis");
  if (r.redis) {
    WriteRedisJson(w, *r.redis);
  } else {
    w.Null();
  }
  w.EndObject();
}

}  // namespace

void PrintFillHeader(std::FILE* out, const FillRunInfo& info, uint32_t conns) {
  PrintMachine(out, "memkv-bench --fill", info.machine);
  std::fprintf(out,
               "memkv: spawned %s, memory mode, pool %s (%s), filled by %u connections until the first "
               "eviction\n",
               info.memkv_binary.c_str(), FormatSize(info.pool_bytes).c_str(),
               info.prefault ? "prefaulted" : "not prefaulted", conns);
  if (info.redis_binary.empty()) {
    std::fprintf(out, "reference: none (%s)\n", info.redis_missing.c_str());
  } else {
    std::fprintf(out,
                 "reference: %s %s (%s), spawned, --save '' --appendonly no, no maxmemory; the keys memkv "
                 "held at the end, same values, pipelined SETs on one connection\n",
                 info.redis_binary.c_str(), info.redis_version.c_str(), info.redis_allocator.c_str());
  }
}

void PrintFillProgress(std::FILE* out, size_t done, size_t total, const FillRow& row) {
  std::fprintf(out, "[%zu/%zu] fill %s: %" PRIu64 " values, pool %.3f B per value byte, redis used %s\n", done,
               total, FormatValueSize(row.size_bytes).c_str(), row.pool.keys, row.PoolPerValueByte(),
               RedisFigure(row, &RedisFill::UsedPerValueByte, 3).c_str());
}

void PrintFillTables(std::FILE* out, const FillRunInfo& info, const std::vector<FillRow>& rows) {
  std::fprintf(out,
               "\nmemory at full, bytes per value byte (memkv pool = used_bytes / value_bytes, target <= 1.10 "
               "below 1 MiB, <= 1.05 from 1 MiB;\nrss-pool = (RSS - pool size) / value bytes: index, buffers, binary; "
               "rss = resident memory after the fill / value bytes;\nredis used = used_memory growth / value "
               "bytes)\n");
  std::fprintf(out, "%10s %8s %10s %10s %6s %6s %6s %10s %10s %10s %10s %9s\n", "size", "values", "value MiB",
               "memkv pool", "target", "", "frag", "rss-pool", "memkv rss", "redis used", "redis rss",
               "rss ratio");
  for (const FillRow& r : rows) {
    std::fprintf(out, "%10s %8" PRIu64 " %10.1f %10.4f %6.2f %6s %6.3f %10.4f %10.4f %10s %10s %9s\n",
                 FormatValueSize(r.size_bytes).c_str(), r.pool.keys, double(r.pool.value_bytes) / double(kMiB),
                 r.PoolPerValueByte(), FillTarget(r.size_bytes), Verdict(r), r.pool.fragmentation,
                 r.BeyondPoolPerValueByte(), r.RssPerValueByte(),
                 RedisFigure(r, &RedisFill::UsedPerValueByte, 4).c_str(),
                 RedisFigure(r, &RedisFill::RssPerValueByte, 4).c_str(), RssRatio(r).c_str());
  }
  std::fprintf(out, "(rss ratio = memkv rss / redis rss)\n");
  std::fprintf(out, "\nfill throughput (memkv: %u connections, batched puts below 1 MiB; redis: one connection, "
               "pipelined SETs)\n", rows.empty() ? 0 : rows.front().conns);
  std::fprintf(out, "%10s %12s %12s %7s %12s %12s %12s %7s\n", "size", "memkv ops/s", "memkv MiB/s", "rounds",
               "redis ops/s", "redis MiB/s", "memkv/redis", "errors");
  for (const FillRow& r : rows) {
    std::fprintf(out, "%10s %12.0f %12.1f %7u %12s %12s %12s %7" PRIu64 "\n", FormatValueSize(r.size_bytes).c_str(),
                 r.OpsPerSecond(), r.MiBPerSecond(), r.rounds, RedisOps(r).c_str(),
                 RedisFigure(r, &RedisFill::MiBPerSecond, 1).c_str(), FillRatio(r).c_str(), r.Errors());
  }
  if (info.redis_binary.empty()) std::fprintf(out, "(no reference: %s)\n", info.redis_missing.c_str());
}

std::string FillJson(const FillRunInfo& info, const std::vector<FillRow>& rows, uint64_t total_errors) {
  JsonWriter w;
  w.BeginObject().Key("mode").String("fill");
  WriteMachineJson(w, info.machine);
  w.Key("memkv_binary").String(info.memkv_binary)
      .Key("pool_bytes").Number(info.pool_bytes)
      .Key("prefault").Bool(info.prefault)
      .Key("reference").String(info.redis_binary.empty() ? "none: " + info.redis_missing
                                                         : info.redis_binary + " " + info.redis_version)
      .Key("redis_allocator").String(info.redis_allocator)
      .Key("total_errors").Number(total_errors);
  w.Key("sizes").BeginArray();
  for (const FillRow& r : rows) WriteRowJson(w, r);
  w.EndArray().EndObject();
  return w.text() + "\n";
}

}  // namespace memkv::bench
