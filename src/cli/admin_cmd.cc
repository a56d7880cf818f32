// memkv admin status: asks running servers' admin endpoints (GET /v1/status,
// docs/admin.md) how they are, all at once, and prints one row per server or
// a JSON array (docs/cli.md, "memkv admin status").
//
// memkv admin reload, drain, undrain: POST /v1/admin/<action>, signed with the administrator
// key (server/admin_auth.h), to each server in turn; prints each report.
//
// Each server is asked on a thread of its own with HttpGet (src/http), whose
// deadline covers connect, TLS and the answer; the command waits for all of
// them up to that deadline (plus a little grace for name resolution, which
// poll cannot bound) and reports a server still unanswered then as timed out.
// AskFleetStatus (cli/fleet_status.h) lends that code to `memkv stats`.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/errno_text.h"
#include "base/json.h"
#include "base/mutex.h"
#include "base/parse_number.h"
#include "base/units.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/fleet_status.h"
#include "client/client_from_config.h"
#include "config/client_config.h"
#include "http/http_client.h"
#include "server/admin_auth.h"
#include "server/key_file.h"

namespace memkv::cli {
namespace {

constexpr const char* kAdminUsage = R"(Usage: memkv admin status [--json] [--timeout-ms N] [--insecure | --cacert FILE] [ADDR...]
       memkv admin reload [--key-file FILE] [--timeout-ms N] [--insecure | --cacert FILE] [--server ADDR | ADDR...]
       memkv admin drain [--key-file FILE] [--timeout-ms N] [--insecure | --cacert FILE] [--server ADDR | ADDR...]
       memkv admin undrain [--key-file FILE] [--timeout-ms N] [--insecure | --cacert FILE] [--server ADDR | ADDR...]

status

Asks each server's admin endpoint (GET /v1/status) for its health, uptime,
capacity, hit ratio, load and transport; all servers at once.

ADDR is a server's data address HOST:PORT, the one clients use; its admin
endpoint is on PORT+1 of the same host. An admin URL, http://HOST:PORT or
https://HOST:PORT (as 'memkv start' logs it), names the endpoint itself.
Without ADDR: the client's servers (MEMKV_CONFIG, MEMKV_SERVERS; with
neither set, 127.0.0.1:9900).

Options:
  --json            a JSON array on standard output, one object per server:
                    {"address", "reachable", "error", "status"}, where status
                    is the server's /v1/status document as it sent it
  --timeout-ms N    deadline per server for connect, TLS handshake and answer
                    (default 3000)
  --cacert FILE     HTTPS, verifying the servers' certificates against the PEM
                    CA certificate(s) in FILE
  --insecure        HTTPS without verifying the servers' certificates
Without --cacert or --insecure, data addresses are asked over plain HTTP.

Without ADDR, a client is also made from the client configuration, and a
"client view" table follows: each server as that client places keys on it.
A server that refuses the client's key (auth failed: the client's key
differs from the server's) is shown "refused" and named on standard error;
the servers of a fleet share one auth key (docs/fleet.md).

Exit codes: 0 every server answered healthy or degraded, 1 a server answered
unhealthy, 2 usage error, 3 configuration error (client configuration,
--cacert file), 4 a server could not be asked (unreachable, timed out, TLS
or HTTP error, not a MemKV status document), 5 a server refuses the
client's key. When several apply: 3, then 4, then 5, then 1.

reload
Asks each server (in turn) to re-read its config file: POST /v1/admin/reload,
signed with the administrator key (docs/admin.md, "Authentication"), and
prints each server's JSON report on standard output.

  --server ADDR     a server to reload (as ADDR; may be given several times)
  --key-file FILE   the administrator key: a file of 64 hex characters (the
                    server's auth.key). Default: the client's key, as the
                    data-plane verbs find it (MEMKV_AUTH_KEY, MEMKV_CONFIG's
                    auth_key, else ~/.memkv/auth.key)
The servers' clocks must be within 300 s of this host's.

Exit codes: 0 every server reloaded, 2 usage error, 3 configuration error
(no key, unreadable key file or --cacert file), 4 a server could not be asked,
5 a server refused the signature (wrong key, clock skew), 6 a server
answered another error (no config file to reload: 409; the reload failed:
500), with the server's message on standard error.

drain, undrain
Asks each server (in turn) to stop taking new keys, or to take them again:
POST /v1/admin/drain or /v1/admin/undrain, signed as reload is (same
options). A draining server answers every put Draining (clients place the key
on the next server), serves gets, deletes and lists, and answers /v1/ready
503; a restart comes back serving (docs/fleet.md, "Draining a server").
Prints each server's {"state", "server_id"}. Exit codes as for reload.
)";

constexpr int kDefaultTimeoutMs = 3000;
constexpr int kMaxTimeoutMs = 3600000;
// getaddrinfo is not bounded by the per-server deadline; this is how much
// longer the command waits before it gives up on a server.
constexpr int kResolveGraceMs = 500;
// Like `exists` and "some key absent": the question was answered, and the
// answer is bad.
constexpr int kExitSomeUnhealthy = 1;
// A syntactically valid key: admin status talks to no data port, but the
// client configuration insists on a key.
constexpr const char* kUnusedAuthKey = "0000000000000000000000000000000000000000000000000000000000000000";

struct AdminFlags {
  std::string action;  // "status", "reload", "drain" or "undrain"
  std::string key_file;
  bool json = false;
  int timeout_ms = kDefaultTimeoutMs;
  bool insecure = false;
  std::string ca_file;
  std::vector<std::string> addresses;
};

// The actions that POST to /v1/admin/<action>, signed with the administrator key.
bool IsSignedAction(const std::string& action) {
  return action == "reload" || action == "drain" || action == "undrain";
}

int Usage(const std::string& what) {
  std::fprintf(stderr, "memkv admin: %s; see 'memkv admin --help'\n", what.c_str());
  return kExitUsage;
}

std::optional<int> ParseAdminFlags(const std::vector<std::string>& raw_args, AdminFlags* flags) {
  Result<std::vector<std::string>> expanded = ExpandOptions(raw_args, kAdminOptions);
  if (!expanded.ok()) return Usage(expanded.status().message());
  const std::vector<std::string>& args = *expanded;
  if (args.empty()) return Usage("name an action: status, reload, drain, undrain");
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kAdminUsage, stdout);
    return kExitOk;
  }
  if (args[0] != "status" && !IsSignedAction(args[0])) {
    return Usage("unknown action '" + args[0] + "' (status, reload, drain, undrain)");
  }
  flags->action = args[0];
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == kEndOfOptions) {
      flags->addresses.insert(flags->addresses.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (IsHelp(a)) {
      std::fputs(kAdminUsage, stdout);
      return kExitOk;
    }
    if (a == "--json" && IsSignedAction(flags->action)) {
      return Usage("--json is an option of 'memkv admin status' (" + flags->action + " always prints JSON)");
    } else if (a == "--json") {
      flags->json = true;
    } else if (a == "--insecure") {
      flags->insecure = true;
    } else if (a == "--key-file") {
      if (!IsSignedAction(flags->action)) {
        return Usage("--key-file is an option of 'memkv admin reload', 'drain' and 'undrain'");
      }
      flags->key_file = args[++i];
      if (flags->key_file.empty()) return Usage("--key-file needs a file");
    } else if (a == "--server") {
      flags->addresses.push_back(args[++i]);
    } else if (a == "--cacert") {
      flags->ca_file = args[++i];
      if (flags->ca_file.empty()) return Usage("--cacert needs a file");
    } else if (a == "--timeout-ms") {
      const std::string& v = args[++i];
      std::optional<uint64_t> n = ParseDecimal(v);
      if (!n || *n < 1 || *n > static_cast<uint64_t>(kMaxTimeoutMs)) {
        return Usage("--timeout-ms '" + v + "': expected milliseconds, 1.." + std::to_string(kMaxTimeoutMs));
      }
      flags->timeout_ms = static_cast<int>(*n);
    } else if (a.size() > 1 && a[0] == '-') {
      return Usage("unknown option '" + a + "'");
    } else {
      flags->addresses.push_back(a);
    }
  }
  if (flags->insecure && !flags->ca_file.empty()) return Usage("give --cacert or --insecure, not both");
  return std::nullopt;
}

// One server to ask: the address as the user gave it, and where its admin
// endpoint is.
struct Target {
  std::string address;
  http::HttpGetOptions get;
};

// HOST:PORT (a data address: admin on PORT+1) or an admin URL.
Result<Target> ResolveTarget(const std::string& text, const AdminFlags& flags) {
  Target t;
  t.address = text;
  t.get.path = "/v1/status";
  t.get.timeout_ms = flags.timeout_ms;
  t.get.ca_file = flags.ca_file;
  t.get.insecure = flags.insecure;
  std::string_view rest = text;
  std::optional<bool> https;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (rest.substr(0, scheme.size()) == scheme) {
      https = scheme == "https://";
      rest.remove_prefix(scheme.size());
      if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
      if (rest.find('/') != std::string_view::npos) {
        return InvalidArgument("'" + text + "': give the admin URL without a path (the command asks /v1/status)");
      }
    }
  }
  Result<config::ServerAddress> parsed = config::ParseServerAddress(rest);
  if (!parsed.ok()) return InvalidArgument("address " + parsed.status().message());
  t.get.host = parsed->host;
  if (https) {
    t.get.port = parsed->port;
    t.get.https = *https;
    return t;
  }
  if (parsed->port == 65535) {
    return InvalidArgument("'" + text + "': a data port of 65535 leaves no port for the admin endpoint (PORT+1); "
                           "give its admin URL instead");
  }
  t.get.port = static_cast<uint16_t>(parsed->port + 1);
  t.get.https = flags.insecure || !flags.ca_file.empty();
  return t;
}

// What one server said, or why it said nothing useful.
struct Answer {
  std::string address;
  std::string url;
  bool reachable = false;
  bool config_error = false;  // the CA file did not load: no server could be asked
  std::string error;
  std::string status_text;    // the /v1/status document as sent (trailing newline dropped)
  JsonValue status;
};

// Why an HTTPS attempt may have met a plain HTTP endpoint.
bool LooksLikePlainHttpPeer(const Status& s) {
  const std::string& m = s.message();
  if (m.find("TLS handshake") == std::string::npos) return false;
  return s.code() == StatusCode::kDeadlineExceeded || m.find("wrong version number") != std::string::npos ||
         m.find("packet length too long") != std::string::npos || m.find("record layer failure") != std::string::npos;
}

Answer Ask(const Target& target) {
  Answer a;
  a.address = target.address;
  a.url = http::HttpUrl(target.get);
  Result<http::HttpClientResponse> r = http::HttpGet(target.get);
  if (!r.ok()) {
    a.error = r.status().message();
    a.config_error = r.status().code() == StatusCode::kInvalidArgument;
    if (target.get.https && LooksLikePlainHttpPeer(r.status())) {
      a.error += " (is the admin endpoint plain HTTP? then leave out --cacert and --insecure)";
    }
    return a;
  }
  if (r->status == 400 && r->body.find("speaks HTTPS") != std::string::npos) {
    a.error = a.url + ": the admin endpoint speaks HTTPS (the server has network.tls_cert): pass --cacert FILE "
                      "to verify it, or --insecure";
    return a;
  }
  if (r->status != 200) {
    std::string first_line = r->body.substr(0, r->body.find('\n'));
    if (first_line.size() > 200) first_line = first_line.substr(0, 200) + "...";
    a.error = a.url + ": HTTP " + std::to_string(r->status) + " " + r->reason +
              (first_line.empty() ? "" : ": " + first_line);
    return a;
  }
  Result<JsonValue> doc = ParseJson(r->body);
  if (!doc.ok() || doc->type != JsonValue::Type::kObject || doc->Path({"health", "status"}) == nullptr) {
    a.error = a.url + ": the answer is not a MemKV status document" +
              (doc.ok() ? std::string(" (no health.status)") : ": " + doc.status().message());
    return a;
  }
  a.reachable = true;
  a.status_text = r->body;
  while (!a.status_text.empty() && (a.status_text.back() == '\n' || a.status_text.back() == '\r')) {
    a.status_text.pop_back();
  }
  a.status = std::move(doc).value();
  return a;
}

// Asks every target on a thread of its own; waits up to the deadline.
std::vector<Answer> AskAll(const std::vector<Target>& targets, int timeout_ms) {
  struct Shared {
    explicit Shared(size_t n) : answers(n) {}
    Mutex mu;
    std::condition_variable cv;
    std::vector<std::optional<Answer>> answers MEMKV_GUARDED_BY(mu);
    size_t done MEMKV_GUARDED_BY(mu) = 0;
  };
  auto shared = std::make_shared<Shared>(targets.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < targets.size(); ++i) {
    threads.emplace_back([shared, target = targets[i], i] {
      Answer a = Ask(target);
      MutexLock lock(shared->mu);
      shared->answers[i] = std::move(a);
      ++shared->done;
      shared->cv.notify_all();
    });
  }
  std::vector<Answer> out;
  std::vector<bool> finished(targets.size(), false);
  {
    MutexLock lock(shared->mu);
    lock.WaitFor(shared->cv, std::chrono::milliseconds(timeout_ms + kResolveGraceMs),
                 [&]() MEMKV_REQUIRES(shared->mu) { return shared->done == targets.size(); });
    for (size_t i = 0; i < targets.size(); ++i) {
      if (shared->answers[i]) {
        finished[i] = true;
        out.push_back(*shared->answers[i]);
        continue;
      }
      Answer late;
      late.address = targets[i].address;
      late.url = http::HttpUrl(targets[i].get);
      late.error = late.url + ": no answer within " + std::to_string(timeout_ms) + " ms (name resolution?)";
      out.push_back(std::move(late));
    }
  }
  // A thread still resolving a name holds only `shared` and its own copy of
  // the target; it may finish after the command has.
  for (size_t i = 0; i < threads.size(); ++i) {
    if (finished[i]) {
      threads[i].join();
    } else {
      threads[i].detach();
    }
  }
  return out;
}

// ---------------------------------------------------------------- output

// "42s", "5m02s", "3h12m", "2d03h".
std::string HumanUptime(double seconds) {
  const uint64_t s = seconds > 0 ? uint64_t(seconds) : 0;
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof(buf), "%llus", (unsigned long long)s);
  else if (s < 3600) std::snprintf(buf, sizeof(buf), "%llum%02llus", (unsigned long long)(s / 60), (unsigned long long)(s % 60));
  else if (s < 86400) std::snprintf(buf, sizeof(buf), "%lluh%02llum", (unsigned long long)(s / 3600), (unsigned long long)(s % 3600 / 60));
  else std::snprintf(buf, sizeof(buf), "%llud%02lluh", (unsigned long long)(s / 86400), (unsigned long long)(s % 86400 / 3600));
  return buf;
}

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", ratio * 100);
  return buf;
}

const JsonValue* Number(const JsonValue& doc, std::initializer_list<std::string_view> path) {
  const JsonValue* v = doc.Path(path);
  return v != nullptr && v->type == JsonValue::Type::kNumber ? v : nullptr;
}

std::string HealthOf(const Answer& a) {
  if (!a.reachable) return "unreachable";
  const JsonValue* h = a.status.Path({"health", "status"});
  return h != nullptr && h->type == JsonValue::Type::kString && !h->string.empty() ? h->string : "unknown";
}

std::vector<std::string> Cells(const Answer& a) {
  if (!a.reachable) return {a.address, "unreachable", "-", "-", "-", "-", "-"};
  const JsonValue& d = a.status;
  auto or_dash = [](const JsonValue* v, auto render) { return v == nullptr ? std::string("-") : render(v->number); };
  std::string used = "-";
  const JsonValue* used_bytes = Number(d, {"used_bytes_total"});
  const JsonValue* usable_bytes = Number(d, {"usable_bytes_total"});
  if (used_bytes != nullptr && usable_bytes != nullptr) {
    used = FormatSize(uint64_t(used_bytes->number)) + " / " + FormatSize(uint64_t(usable_bytes->number));
    if (usable_bytes->number > 0) used += " (" + Percent(used_bytes->number / usable_bytes->number) + ")";
  }
  const JsonValue* rdma = d.Path({"rdma", "active"});
  std::string transport = rdma == nullptr || rdma->type != JsonValue::Type::kBool ? "-" : rdma->boolean ? "rdma" : "tcp";
  return {a.address,
          HealthOf(a),
          or_dash(Number(d, {"uptime_seconds"}), HumanUptime),
          used,
          or_dash(Number(d, {"hit_ratio"}), Percent),
          or_dash(Number(d, {"ops_per_second"}),
                  [](double v) {
                    char buf[32];
                    std::snprintf(buf, sizeof(buf), v < 10 ? "%.1f" : "%.0f", v);
                    return std::string(buf);
                  }),
          transport};
}

// The server's id and state under its row ("" from a server without them).
std::string FleetLine(const JsonValue& d) {
  const JsonValue* id = d.Find("server_id");
  const JsonValue* state = d.Find("state");
  if (id == nullptr || id->type != JsonValue::Type::kString) return "";
  std::string line = "  server " + id->string;
  if (state != nullptr && state->type == JsonValue::Type::kString) line += ": " + state->string;
  return line + "\n";
}

// One line per tier under a server's row: capacity consumed beside the value
// bytes it holds, and how scattered the free room is ("" when the document
// lacks the tier).
std::string TierLine(const JsonValue& d, std::string_view label, std::string_view tier, std::string_view capacity_key) {
  const JsonValue* used = Number(d, {tier, "used_bytes"});
  const JsonValue* capacity = Number(d, {tier, capacity_key});
  const JsonValue* values = Number(d, {tier, "value_bytes"});
  const JsonValue* keys = Number(d, {tier, "keys"});
  const JsonValue* frag = Number(d, {tier, "fragmentation"});
  if (used == nullptr || capacity == nullptr || values == nullptr || keys == nullptr || frag == nullptr) return "";
  const uint64_t n = uint64_t(keys->number);
  return "  " + std::string(label) + ": " + FormatSizeRounded(uint64_t(used->number)) + " of " +
         FormatSizeRounded(uint64_t(capacity->number)) + " used by " + std::to_string(n) + (n == 1 ? " value" : " values") +
         " (" + FormatSizeRounded(uint64_t(values->number)) + "), fragmentation " + Percent(frag->number) + "\n";
}

// The drives' journal: how much of what it may hold the live index takes
// (puts are refused past it), and the sync policy ("" without drives).
std::string JournalLine(const JsonValue& d) {
  const JsonValue* live = Number(d, {"storage", "journal_live_bytes"});
  const JsonValue* budget = Number(d, {"storage", "journal_budget_bytes"});
  const JsonValue* sync = d.Path({"storage", "sync"});
  if (live == nullptr || budget == nullptr || budget->number <= 0) return "";
  return "  journal: " + FormatSizeRounded(uint64_t(live->number)) + " of " +
         FormatSizeRounded(uint64_t(budget->number)) + " (" + Percent(live->number / budget->number) +
         ") the live index may take" + (sync != nullptr ? ", sync " + sync->string : "") + "\n";
}

// One line per namespace that saw traffic: its hit ratio (matched over
// requested blocks), what it read and wrote, and what it lost to eviction.
std::string NamespaceLines(const JsonValue& d) {
  const JsonValue* list = d.Find("namespaces");
  if (list == nullptr || list->type != JsonValue::Type::kArray) return "";
  std::string out;
  for (const JsonValue& ns : list->array) {
    const JsonValue* name = ns.Find("name");
    auto number = [&ns](std::string_view key) {
      const JsonValue* v = ns.Find(key);
      return v == nullptr ? 0.0 : v->NumberOr(0);
    };
    const double lookups = number("lookups");
    const double puts = number("puts");
    if (name == nullptr || (lookups == 0 && puts == 0 && number("evictions") == 0)) continue;
    out += "  namespace " + (name->string.empty() ? std::string("\"\"") : name->string) + ": " +
           std::to_string(uint64_t(lookups)) + " lookups, " + Percent(number("hit_ratio")) + " hit, " +
           FormatSizeRounded(uint64_t(number("read_bytes"))) + " read, " + std::to_string(uint64_t(puts)) +
           " puts (" + FormatSizeRounded(uint64_t(number("written_bytes"))) + "), " +
           std::to_string(uint64_t(number("evictions"))) + " evictions\n";
  }
  return out;
}

// One line per tenant (docs/tenants.md): what it holds against its quotas,
// its hit ratio, what it lost, its connections open and what it was refused.
std::string TenantLines(const JsonValue& d) {
  const JsonValue* list = d.Find("tenants");
  if (list == nullptr || list->type != JsonValue::Type::kArray) return "";
  const bool drives = d.Path({"storage", "keys"}) != nullptr;
  std::string out;
  for (const JsonValue& t : list->array) {
    const JsonValue* name = t.Find("name");
    if (name == nullptr) continue;
    auto number = [&t](std::string_view key) {
      const JsonValue* v = t.Find(key);
      return v == nullptr ? uint64_t(0) : uint64_t(v->NumberOr(0));
    };
    auto held = [&](std::string_view tier) {
      const std::string k(tier);
      std::string text = tier == "dram" ? "DRAM " : "drives ";
      text += FormatSizeRounded(number(k + "_bytes"));
      if (number(k + "_quota_bytes") > 0) text += " of " + FormatSizeRounded(number(k + "_quota_bytes"));
      return text + " (" + std::to_string(number(k + "_keys")) + " keys)";
    };
    const JsonValue* configured = t.Find("configured");
    const JsonValue* ratio = t.Find("hit_ratio");
    out += "  tenant " + name->string + ": ";
    if (configured != nullptr && !configured->boolean) {
      out += "removed from the config, ";
    } else {
      out += held("dram") + (drives ? ", " + held("drive") : "") + ", ";
    }
    out += std::to_string(number("lookups")) + " lookups, " + Percent(ratio == nullptr ? 0 : ratio->NumberOr(0)) +
           " hit, " + std::to_string(number("evictions")) + " evictions (" + std::to_string(number("quota_evictions")) +
           " by its quota), " + std::to_string(number("connections_open")) + " connections open, refused: " +
           std::to_string(number("quota_refusals")) + " over quota, " + std::to_string(number("read_only_refusals")) +
           " read-only, " + std::to_string(number("connections_refused")) + " at its connection limit\n";
  }
  return out;
}

std::string RenderText(const std::vector<Answer>& answers) {
  std::vector<std::vector<std::string>> rows = {{"ADDRESS", "HEALTH", "UPTIME", "USED", "HIT RATIO", "OPS/S", "TRANSPORT"}};
  for (const Answer& a : answers) rows.push_back(Cells(a));
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (size_t i = 0; i < rows[r].size(); ++i) {
      line += rows[r][i];
      if (i + 1 < rows[r].size()) line += std::string(width[i] - rows[r][i].size() + 2, ' ');
    }
    out += line + "\n";
    if (r == 0) continue;
    const Answer& a = answers[r - 1];
    if (!a.reachable) {
      out += "  error: " + a.error + "\n";
      continue;
    }
    out += FleetLine(a.status);
    out += TierLine(a.status, "dram", "memory", "pool_bytes");
    out += TierLine(a.status, "drives", "storage", "usable_bytes");
    out += JournalLine(a.status);
    out += NamespaceLines(a.status);
    out += TenantLines(a.status);
    const std::string health = HealthOf(a);
    const JsonValue* reason = a.status.Path({"health", "reason"});
    if (health != "healthy" && reason != nullptr && !reason->string.empty()) {
      out += "  reason: " + reason->string + "\n";
    }
  }
  return out;
}

std::string RenderJson(const std::vector<Answer>& answers) {
  std::string out = "[";
  for (size_t i = 0; i < answers.size(); ++i) {
    const Answer& a = answers[i];
    out += std::string(i ? ",\n" : "\n") + "  {\"address\": " + JsonQuote(a.address) +
           ", \"reachable\": " + (a.reachable ? "true" : "false") +
           ", \"error\": " + (a.reachable ? "null" : JsonQuote(a.error)) +
           ", \"status\": " + (a.reachable ? a.status_text : "null") + "}";
  }
  return out + (answers.empty() ? "]\n" : "\n]\n");
}

int ExitCodeOf(const std::vector<Answer>& answers) {
  bool config = false, unreachable = false, unhealthy = false;
  for (const Answer& a : answers) {
    config |= a.config_error;
    unreachable |= !a.reachable;
    const std::string h = HealthOf(a);
    unhealthy |= a.reachable && h != "healthy" && h != "degraded";
  }
  if (config) return kExitConfig;
  if (unreachable) return kExitUnavailable;
  return unhealthy ? kExitSomeUnhealthy : kExitOk;
}

// ---------------------------------------------------------------- reload

// The administrator key: --key-file, else the client's key.
Result<std::vector<uint8_t>> AdminKey(const AdminFlags& flags, const Environment& env) {
  if (!flags.key_file.empty()) {
    Result<std::vector<uint8_t>> key = server::ReadAuthKeyFile(flags.key_file);
    if (!key.ok()) return key.status().WithContext("--key-file " + flags.key_file);
    return key;
  }
  Result<config::ClientConfig> config = config::LoadClientConfig(ClientLookupWithDefaults(env));
  if (!config.ok()) {
    return InvalidArgument("no administrator key: " + config.status().message() +
                           " (or give --key-file with the server's auth.key)");
  }
  return config->auth_key;
}

// Signs and sends one POST /v1/admin/<action> (reload, drain, undrain); the
// exit code, having printed the server's JSON answer or the error.
int PostSigned(const std::string& action, const Target& target, std::span<const uint8_t> key, bool several) {
  const std::string prefix = "memkv admin " + action + ": ";
  http::HttpGetOptions o = target.get;
  o.path = "/v1/admin/" + action;
  o.method = "POST";
  Result<std::string> nonce = server::NewAdminNonce();
  if (!nonce.ok()) {
    std::fprintf(stderr, "%s%s\n", prefix.c_str(), nonce.status().ToString().c_str());
    return kExitFailed;
  }
  o.headers.push_back({"Authorization", server::SignAdminRequest(key, o.method, o.path, o.body,
                                                                 server::UnixMillis(), *nonce)});
  const std::string url = http::HttpUrl(o);
  Result<http::HttpClientResponse> r = http::HttpGet(o);
  if (!r.ok()) {
    std::fprintf(stderr, "%s%s\n", prefix.c_str(), r.status().message().c_str());
    return r.status().code() == StatusCode::kInvalidArgument ? kExitConfig : kExitUnavailable;
  }
  std::string body = r->body;
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  if (r->status == 200) {
    if (several) {
      std::printf("%s: %s\n", target.address.c_str(), body.c_str());
    } else {
      std::printf("%s\n", body.c_str());
    }
    std::fflush(stdout);
    return kExitOk;
  }
  // The server's message: the JSON error, or the first line of a text body.
  std::string message = body.substr(0, body.find('\n'));
  if (Result<JsonValue> doc = ParseJson(body); doc.ok() && doc->type == JsonValue::Type::kObject) {
    if (const JsonValue* e = doc->Find("error"); e != nullptr && e->type == JsonValue::Type::kString) message = e->string;
  }
  if (r->status == 400 && body.find("speaks HTTPS") != std::string::npos) {
    message += " (pass --cacert FILE or --insecure)";
  }
  std::fprintf(stderr, "%s%s: HTTP %d %s: %s\n", prefix.c_str(), url.c_str(), r->status, r->reason.c_str(),
               message.c_str());
  return r->status == 401 ? kExitAuth : kExitFailed;
}

// The servers to ask: flags.addresses, else the client's servers; checks
// that --cacert can be read. InvalidArgument: an address that is not one;
// FailedPrecondition: the client configuration or the --cacert file.
Result<std::vector<Target>> TargetsOf(const AdminFlags& flags, const Environment& env) {
  std::vector<std::string> addresses = flags.addresses;
  if (addresses.empty()) {
    config::EnvLookup base = ClientLookupWithDefaults(env);
    config::EnvLookup lookup = [base](std::string_view name) -> std::optional<std::string> {
      if (name == "MEMKV_AUTH_KEY") return std::string(kUnusedAuthKey);
      return base(name);
    };
    Result<config::ClientConfig> config = config::LoadClientConfig(lookup);
    if (!config.ok()) return FailedPrecondition("client configuration: " + config.status().message());
    for (const config::ServerAddress& s : config->servers) addresses.push_back(s.ToString());
  }
  std::vector<Target> targets;
  for (const std::string& text : addresses) {
    Result<Target> t = ResolveTarget(text, flags);
    if (!t.ok()) return t.status();
    targets.push_back(std::move(t).value());
  }
  if (!flags.ca_file.empty() && ::access(flags.ca_file.c_str(), R_OK) != 0) {
    return FailedPrecondition("--cacert " + flags.ca_file + ": " + ErrnoText(errno));
  }
  return targets;
}

// A server refused the client's key: its Connect tag did not verify, so it
// holds another key (Client::Servers() keeps such a server pending, with
// the AuthFailed status as its detail).
bool RefusedTheKey(const ServerView& v) { return v.detail.rfind("AuthFailed", 0) == 0; }

// The "client view" after the server table: the servers as a client built
// from the same configuration places keys on them (Client::Servers(),
// docs/fleet.md, "What the client shows"), and the servers that refused the
// client's key. Nothing when the configuration has no auth key (a client
// could not be made).
struct ClientView {
  std::string text;
  std::vector<ServerView> refused;
};

ClientView ClientViewOf(const Environment& env) {
  ClientView out;
  Result<config::ClientConfig> config = config::LoadClientConfig(ClientLookupWithDefaults(env));
  if (!config.ok()) return out;
  Result<std::unique_ptr<Client>> client = client::CreateClient(*config);
  if (!client.ok()) {
    out.text = "\nclient view: " + client.status().ToString() + "\n";
    return out;
  }
  out.text = "\nclient view:\n";
  char line[512];
  std::snprintf(line, sizeof(line), "%-24s %-20s %8s %7s %-9s %s\n", "SERVER", "ID", "WEIGHT", "SHARE", "STATE",
                "DETAIL");
  out.text += line;
  for (ServerView& v : (*client)->Servers()) {
    if (RefusedTheKey(v)) {
      v.state = "refused";
      v.detail = "auth failed: the client's key differs from the server's";
      out.refused.push_back(v);
    }
    std::snprintf(line, sizeof(line), "%-24s %-20s %8llu %6.1f%% %-9s %s\n", v.name.c_str(),
                  v.id.empty() ? "-" : v.id.c_str(), static_cast<unsigned long long>(v.weight), v.share * 100,
                  v.state.c_str(), v.detail.c_str());
    out.text += line;
  }
  return out;
}

}  // namespace

Result<std::vector<ServerStatus>> AskFleetStatus(const FleetStatusOptions& options, const Environment& env) {
  AdminFlags flags;
  flags.action = "status";
  flags.addresses = options.addresses;
  flags.timeout_ms = options.timeout_ms;
  flags.ca_file = options.ca_file;
  flags.insecure = options.insecure;
  Result<std::vector<Target>> targets = TargetsOf(flags, env);
  if (!targets.ok()) return targets.status();
  std::vector<ServerStatus> out;
  for (Answer& a : AskAll(*targets, flags.timeout_ms)) {
    if (a.config_error) return FailedPrecondition(a.error);
    out.push_back({.address = std::move(a.address), .reachable = a.reachable, .error = std::move(a.error),
                   .status = std::move(a.status)});
  }
  return out;
}

int RunAdmin(const std::vector<std::string>& args, const Environment& env) {
  AdminFlags flags;
  if (auto code = ParseAdminFlags(args, &flags)) return *code;

  Result<std::vector<Target>> resolved = TargetsOf(flags, env);
  if (!resolved.ok() && resolved.status().code() == StatusCode::kInvalidArgument) {
    return Usage(resolved.status().message());
  }
  if (!resolved.ok()) {
    std::fprintf(stderr, "memkv admin %s: %s\n", flags.action.c_str(), resolved.status().message().c_str());
    return kExitConfig;
  }
  const std::vector<Target>& targets = *resolved;

  if (IsSignedAction(flags.action)) {
    Result<std::vector<uint8_t>> key = AdminKey(flags, env);
    if (!key.ok()) {
      std::fprintf(stderr, "memkv admin %s: %s\n", flags.action.c_str(), key.status().message().c_str());
      return kExitConfig;
    }
    int code = kExitOk;
    for (const Target& t : targets) {
      const int one = PostSigned(flags.action, t, *key, targets.size() > 1);
      if (code == kExitOk) code = one;
    }
    return code;
  }

  std::vector<Answer> answers = AskAll(targets, flags.timeout_ms);
  std::string out = flags.json ? RenderJson(answers) : RenderText(answers);
  // The client's servers are also asked with the client's key: a server
  // that holds another key answers its status (which needs no key) and
  // refuses every client, so it would look healthy. --json keeps its
  // contract (one array of the servers' answers); the refusals go to stderr.
  ClientView view;
  if (flags.addresses.empty()) view = ClientViewOf(env);
  if (!flags.json) out += view.text;
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  for (const ServerView& v : view.refused) {
    std::fprintf(stderr,
                 "memkv admin status: server %s refuses the client's key (%s): the servers of a fleet share one "
                 "auth key, and the client needs it (docs/fleet.md)\n",
                 v.name.c_str(), v.detail.c_str());
  }
  const int code = ExitCodeOf(answers);
  if (code == kExitConfig || code == kExitUnavailable || view.refused.empty()) return code;
  return kExitAuth;
}

}  // namespace memkv::cli
