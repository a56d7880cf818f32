// memkv stats: the hit-rate split per (tenant, cache identity) across a
// fleet. Reads each server's /v1/status "identities" rows (docs/admin.md)
// through AskFleetStatus, the code of `memkv admin status`, sums the counts
// of each (tenant, identity) over the servers, and prints one table, or the
// merged rows as a JSON array (docs/cli.md, "memkv stats").
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/json.h"
#include "base/parse_number.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/fleet_status.h"

namespace memkv::cli {
namespace {

constexpr const char* kStatsUsage = R"(Usage: memkv stats [--json] [--timeout-ms N] [--insecure | --cacert FILE] [--server ADDR | ADDR...]

Reads each server's admin endpoint (GET /v1/status, its "identities" rows),
sums the counts of each (tenant, cache identity) over the servers, and
prints one row per pair: how often its blocks were asked for and found, how
many restores came in time, what it stored and lost.

ADDR is a server's data address HOST:PORT (admin endpoint on PORT+1) or its
admin URL, as for 'memkv admin status'. Without ADDR: the client's servers
(MEMKV_CONFIG, MEMKV_SERVERS; with neither set, 127.0.0.1:9900).

Columns: TENANT ("-": the administrator's connections), IDENTITY (the
16-hex tag, "none": connections that sent no identity, "other": identities
past the server's identities.max), MODEL, DTYPE, BLOCK (tokens per block),
TP (rank/size), LOOKUPS (blocks asked for), FOUND, FETCHED (blocks served),
IN-TIME and LATE (restores the clients reported in time or late), HIT%
(found/lookups), IN-TIME% (in time/lookups), STORES, SHED (stores the
clients dropped), EVICTIONS.

Options:
  --json            a JSON array on standard output, one object per (tenant,
                    identity): tenant, identity, the identity's fields when
                    known (model, revision, kv_dtype, layout, block_tokens,
                    tp_rank, tp_size, engine, engine_version), servers (how
                    many servers had the row), lookups, found, fetched,
                    fetched_in_time, fetched_late, hit_ratio, in_time_ratio,
                    fetched_bytes, stores, stored_bytes, stores_shed, evictions
  --server ADDR     a server to read (may be given several times)
  --timeout-ms N    deadline per server for connect, TLS handshake and answer
                    (default 3000)
  --cacert FILE     HTTPS, verifying the servers' certificates against FILE
  --insecure        HTTPS without verifying the servers' certificates

Exit codes: 0 every server answered, 2 usage error, 3 configuration error
(client configuration, --cacert file), 4 a server could not be read (it is
named on standard error; the others' rows are printed).
)";

constexpr int kMaxTimeoutMs = 3600000;

// The counters of a row, summed over servers, in the order --json writes them.
constexpr const char* kCounters[] = {"lookups", "found", "fetched", "fetched_in_time", "fetched_late",
                                     "fetched_bytes", "stores", "stored_bytes", "stores_shed", "evictions"};
constexpr size_t kCounterCount = sizeof(kCounters) / sizeof(kCounters[0]);
constexpr const char* kInfoStrings[] = {"model", "revision", "kv_dtype", "layout", "engine", "engine_version"};
constexpr const char* kInfoNumbers[] = {"block_tokens", "tp_rank", "tp_size"};

int Usage(const std::string& what) {
  std::fprintf(stderr, "memkv stats: %s; see 'memkv stats --help'\n", what.c_str());
  return kExitUsage;
}

struct StatsFlags {
  bool json = false;
  FleetStatusOptions fleet;
};

std::optional<int> ParseStatsFlags(const std::vector<std::string>& raw_args, StatsFlags* flags) {
  Result<std::vector<std::string>> expanded = ExpandOptions(raw_args, kStatsOptions);
  if (!expanded.ok()) return Usage(expanded.status().message());
  const std::vector<std::string>& args = *expanded;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == kEndOfOptions) {
      flags->fleet.addresses.insert(flags->fleet.addresses.end(), args.begin() + static_cast<long>(i) + 1,
                                    args.end());
      break;
    }
    if (IsHelp(a)) {
      std::fputs(kStatsUsage, stdout);
      return kExitOk;
    }
    if (a == "--json") {
      flags->json = true;
    } else if (a == "--insecure") {
      flags->fleet.insecure = true;
    } else if (a == "--server") {
      flags->fleet.addresses.push_back(args[++i]);
    } else if (a == "--cacert") {
      flags->fleet.ca_file = args[++i];
      if (flags->fleet.ca_file.empty()) return Usage("--cacert needs a file");
    } else if (a == "--timeout-ms") {
      const std::string& v = args[++i];
      std::optional<uint64_t> n = ParseDecimal(v);
      if (!n || *n < 1 || *n > static_cast<uint64_t>(kMaxTimeoutMs)) {
        return Usage("--timeout-ms '" + v + "': expected milliseconds, 1.." + std::to_string(kMaxTimeoutMs));
      }
      flags->fleet.timeout_ms = static_cast<int>(*n);
    } else if (a.size() > 1 && a[0] == '-') {
      return Usage("unknown option '" + a + "'");
    } else {
      flags->fleet.addresses.push_back(a);
    }
  }
  if (flags->fleet.insecure && !flags->fleet.ca_file.empty()) return Usage("give --cacert or --insecure, not both");
  return std::nullopt;
}

// One (tenant, identity) summed over the servers that have it.
struct MergedRow {
  std::string tenant;
  std::string identity;
  const JsonValue* info = nullptr;  // the first row that names the identity's fields
  uint64_t servers = 0;
  uint64_t counters[kCounterCount] = {};

  uint64_t Counter(std::string_view name) const {
    for (size_t i = 0; i < kCounterCount; ++i) {
      if (name == kCounters[i]) return counters[i];
    }
    return 0;
  }
  double Ratio(std::string_view numerator) const {
    const uint64_t lookups = Counter("lookups");
    return lookups == 0 ? 0.0 : double(Counter(numerator)) / double(lookups);
  }
};

// Keyed by (tenant, identity): tenants, then tags, then "none" and "other"
// (letters past the hex digits).
std::vector<MergedRow> Merge(const std::vector<ServerStatus>& answers) {
  std::map<std::pair<std::string, std::string>, MergedRow> rows;
  for (const ServerStatus& a : answers) {
    if (!a.reachable) continue;
    const JsonValue* list = a.status.Find("identities");
    if (list == nullptr || list->type != JsonValue::Type::kArray) continue;
    for (const JsonValue& r : list->array) {
      const JsonValue* tenant = r.Find("tenant");
      const JsonValue* identity = r.Find("identity");
      if (tenant == nullptr || identity == nullptr) continue;
      MergedRow& m = rows[{tenant->string, identity->string}];
      m.tenant = tenant->string;
      m.identity = identity->string;
      ++m.servers;
      if (m.info == nullptr && r.Find("model") != nullptr) m.info = &r;
      for (size_t i = 0; i < kCounterCount; ++i) {
        const JsonValue* v = r.Find(kCounters[i]);
        if (v != nullptr) m.counters[i] += uint64_t(v->NumberOr(0));
      }
    }
  }
  std::vector<MergedRow> out;
  for (auto& [key, row] : rows) out.push_back(row);
  return out;
}

std::string InfoString(const MergedRow& r, std::string_view key) {
  const JsonValue* v = r.info == nullptr ? nullptr : r.info->Find(key);
  return v == nullptr || v->string.empty() ? "-" : v->string;
}

std::string InfoNumber(const MergedRow& r, std::string_view key) {
  const JsonValue* v = r.info == nullptr ? nullptr : r.info->Find(key);
  return v == nullptr ? "-" : std::to_string(uint64_t(v->NumberOr(0)));
}

std::string Percent(const MergedRow& r, std::string_view numerator) {
  if (r.Counter("lookups") == 0) return "-";
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%.1f%%", r.Ratio(numerator) * 100);
  return buf;
}

std::string RenderText(const std::vector<MergedRow>& merged) {
  std::vector<std::vector<std::string>> rows = {{"TENANT", "IDENTITY", "MODEL", "DTYPE", "BLOCK", "TP", "LOOKUPS",
                                                 "FOUND", "FETCHED", "IN-TIME", "LATE", "HIT%", "IN-TIME%",
                                                 "STORES", "SHED", "EVICTIONS"}};
  for (const MergedRow& r : merged) {
    const std::string tp = r.info == nullptr ? "-" : InfoNumber(r, "tp_rank") + "/" + InfoNumber(r, "tp_size");
    auto n = [&r](std::string_view key) { return std::to_string(r.Counter(key)); };
    rows.push_back({r.tenant.empty() ? "-" : r.tenant, r.identity, InfoString(r, "model"), InfoString(r, "kv_dtype"),
                    InfoNumber(r, "block_tokens"), tp, n("lookups"), n("found"), n("fetched"), n("fetched_in_time"),
                    n("fetched_late"), Percent(r, "found"), Percent(r, "fetched_in_time"), n("stores"),
                    n("stores_shed"), n("evictions")});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string RenderJson(const std::vector<MergedRow>& merged) {
  JsonWriter w;
  w.BeginArray();
  for (const MergedRow& r : merged) {
    w.BeginObject().Key("tenant").String(r.tenant).Key("identity").String(r.identity);
    if (r.info != nullptr) {
      for (const char* key : kInfoStrings) {
        if (const JsonValue* v = r.info->Find(key)) w.Key(key).String(v->string);
      }
      for (const char* key : kInfoNumbers) {
        if (const JsonValue* v = r.info->Find(key)) w.Key(key).Number(uint64_t(v->NumberOr(0)));
      }
    }
    w.Key("servers").Number(r.servers);
    for (size_t i = 0; i < kCounterCount; ++i) w.Key(kCounters[i]).Number(r.counters[i]);
    w.Key("hit_ratio").Number(r.Ratio("found")).Key("in_time_ratio").Number(r.Ratio("fetched_in_time"));
    w.EndObject();
  }
  w.EndArray();
  return w.text() + "\n";
}

}  // namespace

int RunStats(const std::vector<std::string>& args, const Environment& env) {
  StatsFlags flags;
  if (auto code = ParseStatsFlags(args, &flags)) return *code;
  Result<std::vector<ServerStatus>> answers = AskFleetStatus(flags.fleet, env);
  if (!answers.ok() && answers.status().code() == StatusCode::kInvalidArgument) {
    return Usage(answers.status().message());
  }
  if (!answers.ok()) {
    std::fprintf(stderr, "memkv stats: %s\n", answers.status().message().c_str());
    return kExitConfig;
  }
  const std::vector<MergedRow> merged = Merge(*answers);
  const std::string out = flags.json ? RenderJson(merged) : RenderText(merged);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  int code = kExitOk;
  for (const ServerStatus& a : *answers) {
    if (a.reachable) continue;
    std::fprintf(stderr, "memkv stats: server %s could not be read, its counts are missing above: %s\n",
                 a.address.c_str(), a.error.c_str());
    code = kExitUnavailable;
  }
  return code;
}

}  // namespace memkv::cli
