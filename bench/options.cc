#include "bench/options.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string_view>

#include "base/units.h"
#include "bench/flags.h"

namespace memkv::bench {
namespace {

constexpr uint64_t kMaxValueBytes = 256ULL << 20;  // the protocol's value limit
constexpr uint32_t kMaxConns = 1024;
constexpr uint32_t kMaxBatch = 1024;  // the protocol's items per batch

bool ParsePeers(const std::string& text, BenchOptions* o, std::string* error) {
  o->peer_redis = false;
  for (const std::string& item : SplitComma(text)) {
    if (item != "redis") {
      *error = "--peer: '" + item + "' is not a peer the bench can run; the one it knows is redis";
      return false;
    }
    o->peer_redis = true;
  }
  if (!o->peer_redis) *error = "--peer: empty list (the one peer the bench knows is redis)";
  return o->peer_redis;
}

bool ParseSizes(const std::string& text, BenchOptions* o, std::string* error) {
  o->sizes_bytes.clear();
  for (const std::string& item : SplitComma(text)) {
    Result<uint64_t> size = ParseValueSize(item);
    if (!size.ok() || *size == 0 || *size > kMaxValueBytes) {
      *error = "--sizes: '" + item + "' is not a size between 1 B and 256 MiB (64KiB, 2MiB+1, ...)";
      return false;
    }
    o->sizes_bytes.push_back(*size);
  }
  if (o->sizes_bytes.empty()) *error = "--sizes: empty list";
  return !o->sizes_bytes.empty();
}

bool ParsePool(const std::string& text, BenchOptions* o, std::string* error) {
  Result<uint64_t> size = ParseSize(text);
  if (!size.ok() || *size < (64ULL << 20)) {
    *error = "--pool: '" + text + "' is not a size of at least 64 MiB";
    return false;
  }
  o->pool_bytes = *size;
  return true;
}

bool IsKnownFlag(std::string_view flag) {
  for (std::string_view known : {"--sizes", "--conns", "--seconds", "--repeat", "--ops", "--pool", "--json",
                                 "--memkv", "--servers", "--redis", "--peer", "--batch", "--plot",
                                 "--storage", "--sync", "--drive-size", "--redis-appendfsync", "--replay",
                                 "--replay-speed", "--flush-on-loop-us"}) {
    if (flag == known) return true;
  }
  return false;
}

bool ApplyFlag(const std::string& flag, const std::string& value, BenchOptions* o, std::string* error) {
  if (flag == "--sizes") return ParseSizes(value, o, error);
  if (flag == "--conns") return ParseCountList(flag, value, kMaxConns, "count", &o->conns, error);
  if (flag == "--seconds") return ParseSeconds(flag, value, 3600, &o->seconds, error);
  if (flag == "--repeat") return ParseCount(flag, value, 100, "count", &o->repeat, error);
  if (flag == "--ops") return ParseOpList(value, &o->put, &o->get, error);
  if (flag == "--pool") return ParsePool(value, o, error);
  if (flag == "--peer") return ParsePeers(value, o, error);
  if (flag == "--batch") return ParseCount(flag, value, kMaxBatch, "batch size", &o->batch, error);
  const auto one_of = [&](std::initializer_list<std::string_view> allowed, std::string* out) {
    std::string list;
    for (std::string_view a : allowed) {
      if (value == a) {
        *out = value;
        return true;
      }
      list += std::string(list.empty() ? "" : ", ") + std::string(a);
    }
    *error = flag + ": '" + value + "'; allowed: " + list;
    return false;
  };
  if (flag == "--storage") return one_of({"memory", "file"}, &o->storage);
  if (flag == "--sync") return one_of({"interval", "always"}, &o->sync);
  if (flag == "--flush-on-loop-us") {
    return ParseCount(flag, value, 1'000'000, "number of microseconds", &o->flush_on_loop_us, error);
  }
  if (flag == "--redis-appendfsync") return one_of({"everysec", "always"}, &o->redis_appendfsync);
  if (flag == "--drive-size") {
    Result<uint64_t> size = ParseSize(value);
    if (!size.ok() || *size < (256ULL << 20)) {
      *error = "--drive-size: '" + value + "' is not a size of at least 256 MiB";
      return false;
    }
    o->drive_bytes = *size;
    return true;
  }
  if (flag == "--replay-speed") {
    char* end = nullptr;
    const double x = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !std::isfinite(x) || x < 0 || x > 1e6) {
      *error = "--replay-speed: '" + value + "' is not a speed in [0, 1e6] (0: as fast as possible)";
      return false;
    }
    o->replay_speed = x;
    return true;
  }
  if (flag == "--replay") {
    o->replay_path = value;
    if (value.empty()) *error = "--replay: empty path";
    return !value.empty();
  }
  if (flag == "--json") {
    o->json_path = value;
  } else if (flag == "--memkv") {
    o->memkv_path = value;
  } else if (flag == "--redis") {
    o->redis_path = value;
  } else if (flag == "--plot") {
    o->plot_path = value;
    if (value.empty()) *error = "--plot: empty path";
    return !value.empty();
  } else if (flag == "--servers") {
    o->servers = SplitComma(value);
    if (o->servers.empty()) *error = "--servers: empty list";
    return !o->servers.empty();
  } else {
    *error = "unknown option '" + flag + "'";
    return false;
  }
  return true;
}

// The flags each mode takes beyond the common ones; any other is refused,
// so that a flag never silently does nothing.
bool AppliesTo(BenchMode mode, const std::string& flag) {
  static const std::set<std::string> kCommon = {"--sizes", "--conns", "--json", "--pool", "--memkv",
                                                "--no-prefault", "--storage", "--sync", "--drive-size",
                                                "--flush-on-loop-us"};
  static const std::set<std::string> kSweep = {"--seconds", "--repeat", "--ops",   "--cold",  "--servers",
                                               "--no-auth-cost", "--peer", "--batch", "--plot", "--redis",
                                               "--install-peers", "--redis-appendfsync"};
  static const std::set<std::string> kFill = {"--redis", "--install-peers", "--no-redis"};
  static const std::set<std::string> kFresh = {"--seconds", "--repeat"};
  static const std::set<std::string> kReplay = {"--replay-speed", "--servers"};
  if (kCommon.count(flag) != 0) return true;
  switch (mode) {
    case BenchMode::kSweep: return kSweep.count(flag) != 0;
    case BenchMode::kFill: return kFill.count(flag) != 0;
    case BenchMode::kFresh: return kFresh.count(flag) != 0;
    case BenchMode::kReplay: return kReplay.count(flag) != 0;
  }
  return false;
}

const char* ModeFlag(BenchMode mode) {
  switch (mode) {
    case BenchMode::kSweep: return "the sweep";
    case BenchMode::kFill: return "--fill";
    case BenchMode::kFresh: return "--fresh";
    case BenchMode::kReplay: return "--replay";
  }
  return "?";
}

// Defaults of the flags the user did not give, which depend on the mode.
void ApplyModeDefaults(const std::set<std::string>& given, BenchOptions* o) {
  auto unset = [&given](const char* flag) { return given.count(flag) == 0; };
  switch (o->mode) {
    case BenchMode::kSweep:
      if (unset("--sizes")) o->sizes_bytes = {4 * kKiB, 64 * kKiB, 256 * kKiB, kMiB, 2 * kMiB, 4 * kMiB, 16 * kMiB};
      if (unset("--conns")) o->conns = {1, 4, 16, 64};
      break;
    case BenchMode::kFill:
      if (unset("--sizes")) o->sizes_bytes = {4 * kKiB, 64 * kKiB, 2 * kMiB + 1};
      if (unset("--conns")) o->conns = {4};
      if (unset("--pool")) o->pool_bytes = kGiB;
      if (unset("--json")) o->json_path = "bench-fill.json";
      break;
    case BenchMode::kFresh:
      if (unset("--sizes")) o->sizes_bytes = {4 * kKiB, 2 * kMiB};
      if (unset("--conns")) o->conns = {1, 16};
      if (unset("--pool")) o->pool_bytes = 2 * kGiB;
      if (unset("--json")) o->json_path = "bench-fresh.json";
      if (unset("--seconds")) o->seconds = 10;
      if (unset("--repeat")) o->repeat = 3;
      break;
    case BenchMode::kReplay:
      if (unset("--conns")) o->conns = {4};
      if (unset("--pool")) o->pool_bytes = kGiB;
      if (unset("--json")) o->json_path = "bench-replay.json";
      break;
  }
}

}  // namespace

MemkvServerConfig SpawnConfigOf(const BenchOptions& o) {
  MemkvServerConfig c;
  c.pool_bytes = o.pool_bytes;
  c.prefault = o.prefault;
  c.file_mode = o.storage == "file";
  c.sync = o.sync;
  c.flush_on_loop_us = o.flush_on_loop_us;
  c.drive_bytes = o.drive_bytes;
  return c;
}

std::optional<BenchOptions> ParseOptions(const std::vector<std::string>& args, bool* help,
                                         std::string* error) {
  BenchOptions o;
  std::set<std::string> given;
  bool fill = false, fresh = false;
  auto toggle = [&](const std::string& flag) {
    if (flag == "--cold") o.warm_pool = false;
    else if (flag == "--no-auth-cost") o.auth_cost = false;
    else if (flag == "--no-prefault") o.prefault = false;
    else if (flag == "--no-redis") o.redis = false;
    else if (flag == "--install-peers") o.install_peers = true;
    else if (flag == "--fill") fill = true;
    else if (flag == "--fresh") fresh = true;
    else return false;
    given.insert(flag);
    return true;
  };
  auto apply = [&](const std::string& flag, const std::string& value, std::string* err) {
    given.insert(flag);
    return ApplyFlag(flag, value, &o, err);
  };
  if (!WalkFlags(args, toggle, IsKnownFlag, apply, help, error)) return std::nullopt;
  const bool replay = given.count("--replay") != 0;
  if (int(fill) + int(fresh) + int(replay) > 1) {
    *error = "--fill, --fresh and --replay are separate runs; give one";
    return std::nullopt;
  }
  o.mode = fill ? BenchMode::kFill : fresh ? BenchMode::kFresh : replay ? BenchMode::kReplay : BenchMode::kSweep;
  for (const std::string& flag : given) {
    if (flag == "--fill" || flag == "--fresh" || flag == "--replay" || AppliesTo(o.mode, flag)) continue;
    *error = flag + " does not apply to " + ModeFlag(o.mode);
    return std::nullopt;
  }
  if (o.mode == BenchMode::kSweep) {
    if (given.count("--redis") != 0 && !o.peer_redis) {
      *error = "--redis names the redis-server of --peer redis; give --peer redis too";
      return std::nullopt;
    }
    if (o.install_peers && !o.peer_redis && o.plot_path.empty()) {
      *error = "--install-peers installs redis-server for --peer redis and gnuplot for --plot; give one of them";
      return std::nullopt;
    }
  }
  if (!o.servers.empty() && !o.prefault) {
    *error = "--no-prefault applies to a spawned server, not to --servers";
    return std::nullopt;
  }
  if (o.storage != "file" && (given.count("--sync") != 0 || given.count("--drive-size") != 0)) {
    *error = "--sync and --drive-size apply to --storage file";
    return std::nullopt;
  }
  if (given.count("--flush-on-loop-us") != 0 && (o.storage != "file" || o.sync != "always")) {
    *error = "--flush-on-loop-us applies to --storage file --sync always (storage.flush_on_loop_us)";
    return std::nullopt;
  }
  if (!o.redis_appendfsync.empty() && !o.peer_redis) {
    *error = "--redis-appendfsync configures the Redis of --peer redis; give --peer redis too";
    return std::nullopt;
  }
  ApplyModeDefaults(given, &o);
  if (o.mode == BenchMode::kFill && o.conns.size() != 1) {
    *error = "--fill takes one --conns count (the connections that fill the pool)";
    return std::nullopt;
  }
  if (o.mode == BenchMode::kReplay && o.conns.size() != 1) {
    *error = "--replay takes one --conns count (the threads that issue the calls)";
    return std::nullopt;
  }
  return o;
}

}  // namespace memkv::bench
