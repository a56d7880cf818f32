// memkv doctor: the RoCEv2 runbook's verification as one command
// (docs/doctor.md). Parses flags, loads the config `start` would use, runs
// the host checks through a HostProbe and prints the table or JSON.
#include <sys/stat.h>

#include <cstdio>
#include <memory>

#include "base/bytes.h"
#include "base/log.h"
#include "base/parse_number.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "config/client_config.h"
#include "config/server_config.h"
#include "doctor/finding.h"
#include "doctor/fixture_probe.h"
#include "doctor/host_checks.h"
#include "doctor/path_checks.h"
#include "doctor/path_probe.h"
#include "doctor/render.h"
#include "doctor/system_probe.h"
#include "verbs/verbs.h"

namespace memkv::cli {
namespace {

constexpr const char* kDoctorUsage = R"(Usage: memkv doctor [options]

Checks this host against the RoCEv2 runbook: the switch settings it implies,
the host NIC (port, MTU, GIDs, DSCP trust and map, PFC, ECN, counters) and
MemKV's own settings (rdma.*, MEMKV_RDMA_MTU, memory.max_size). Each finding
names what was seen, what was expected and the exact fix (docs/doctor.md).

Options:
  --config PATH      server config whose rdma and memory settings are checked
                     (default /etc/memkv/config.yaml if it exists, else the
                     defaults: every rdma value auto, mtu 4096)
  --device DEV       RDMA device (default: rdma.device of the config file,
                     else the first device)
  --netdev IF        netdev behind the device (default: the port's own)
  --port N           device port (default 1)
  --interval-ms N    how long counters are watched for deltas (default 1000)
  --peer HOST:PORT   also check the path to a running MemKV server: connect as
                     a client would with MEMKV_TRANSPORT=rdma (MEMKV_AUTH_KEY,
                     MEMKV_RDMA_DEVICES, MEMKV_RDMA_MTU as for any client),
                     move --peer-blocks 1 MiB blocks by RDMA WRITE and READ,
                     and report what failed (an MTU hop shows as retry
                     exhaustion), throughput, and whether the lossless
                     priority's tx counters moved while priority 0's did not
  --peer-blocks N    blocks for --peer (default 16)
  --json             one JSON object on standard output instead of the table

Environment: MEMKV_RDMA_MTU, the MTU of clients on this host; with --peer
also MEMKV_AUTH_KEY (default: the key in ~/.memkv/auth.key), MEMKV_RDMA_DEVICES
(default: --device), MEMKV_RDMA_RETRY_COUNT, MEMKV_RDMA_TIMEOUT.

Exit codes: 0 no warnings or errors, 1 warnings only, 2 errors (also a usage
error), 3 the config file cannot be used.
)";

constexpr const char* kSystemConfig = "/etc/memkv/config.yaml";

struct DoctorFlags {
  doctor::DoctorOptions options;
  std::string config_path;
  std::string fixture;  // hidden: run against a recorded host (FixtureProbe)
  std::string peer;     // --peer: the path check
  uint32_t peer_blocks = 16;
  bool json = false;
};

bool ParseNumber(const std::string& text, uint64_t max, uint64_t* out) {
  std::optional<uint64_t> v = ParseDecimal(text);
  if (!v || *v > max) return false;
  *out = *v;
  return true;
}

std::optional<int> ParseFlags(const std::vector<std::string>& raw_args, DoctorFlags* flags) {
  Result<std::vector<std::string>> expanded =
      ExpandOptions(raw_args, kDoctorOptions);
  if (!expanded.ok()) {
    std::fprintf(stderr, "memkv doctor: %s; see 'memkv doctor --help'\n", expanded.status().message().c_str());
    return kExitUsage;
  }
  const std::vector<std::string>& args = *expanded;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == kEndOfOptions && i + 1 == args.size()) break;
    if (a == kEndOfOptions || !LooksLikeOption(a)) {
      const std::string& word = a == kEndOfOptions ? args[i + 1] : a;
      std::fprintf(stderr, "memkv doctor: unexpected argument '%s'; doctor takes options only\n", word.c_str());
      return kExitUsage;
    }
    if (IsHelp(a)) {
      std::fputs(kDoctorUsage, stdout);
      return kExitOk;
    }
    if (a == "--json") {
      flags->json = true;
      continue;
    }
    const std::string& v = args[++i];  // ExpandOptions: every other option is followed by its value
    uint64_t n = 0;
    if (a == "--config") {
      flags->config_path = v;
    } else if (a == "--device") {
      flags->options.device = v;
    } else if (a == "--netdev") {
      flags->options.netdev = v;
    } else if (a == "--port" && ParseNumber(v, 255, &n) && n > 0) {
      flags->options.port = static_cast<uint8_t>(n);
    } else if (a == "--interval-ms" && ParseNumber(v, 600000, &n)) {
      flags->options.interval_ms = static_cast<uint32_t>(n);
    } else if (a == "--fixture") {
      flags->fixture = v;
    } else if (a == "--peer") {
      flags->peer = v;
    } else if (a == "--peer-blocks" && ParseNumber(v, 4096, &n) && n > 0) {
      flags->peer_blocks = static_cast<uint32_t>(n);
    } else {
      std::fprintf(stderr, "memkv doctor: %s '%s': out of range; see 'memkv doctor --help'\n", a.c_str(), v.c_str());
      return kExitUsage;
    }
  }
  return std::nullopt;
}

// The path check: counters around a real RDMA transfer to `peer`.
Status CheckPeer(const DoctorFlags& flags, const Environment& env, doctor::HostProbe& probe,
                 const std::optional<doctor::HostState>& host, doctor::Report* report) {
  config::EnvLookup base = ClientLookupWithDefaults(env);
  const std::string peer = flags.peer;
  config::EnvLookup lookup = [&](std::string_view name) -> std::optional<std::string> {
    if (name == "MEMKV_SERVERS") return peer;
    return base(name);
  };
  MEMKV_ASSIGN_OR_RETURN(config::ClientConfig client, config::LoadClientConfig(lookup));
  doctor::PathProbeOptions o;
  o.peer = client.servers.front().ToString();
  o.auth_key_hex = HexEncode(client.auth_key.data(), client.auth_key.size());
  o.devices = client.options.rdma_devices;
  if (o.devices.empty() && !report->device.empty()) o.devices = {report->device};
  o.mtu = client.options.rdma_mtu;
  o.retry_count = client.options.rdma_retry_count;
  o.rdma_timeout = client.options.rdma_timeout;
  o.blocks = flags.peer_blocks;
  o.timeout_ms = client.options.timeout_ms;

  doctor::PathCheckInput in;
  in.peer = o.peer;
  in.mtu = o.mtu;
  in.have_counters = host.has_value() && !host->netdev.empty();
  if (in.have_counters) in.before = probe.ReadCounters(report->device, host->port.port_num, host->netdev);
  in.result = doctor::RunPathProbe(o, verbs::SystemProvider());
  if (in.have_counters) in.after = probe.ReadCounters(report->device, host->port.port_num, host->netdev);
  in.service_level = doctor::ServiceLevelOf(in.result.rdma_path);
  doctor::AddPathFindings(in, report);
  return Status::Ok();
}

bool FileExists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

int RunDoctor(const std::vector<std::string>& args, const Environment& env) {
  DoctorFlags flags;
  if (auto code = ParseFlags(args, &flags)) return *code;
  if (flags.fixture.empty()) {
    if (auto root = env.Get("MEMKV_DOCTOR_ROOT"); root && !root->empty()) flags.fixture = *root;
  }

  // The config `start` would use: --config, else the system file (under the
  // fixture's root when running against one), else the defaults.
  std::string path = flags.config_path;
  if (path.empty()) {
    std::string system = flags.fixture.empty() ? kSystemConfig : flags.fixture + kSystemConfig;
    if (FileExists(system)) path = system;
  }
  doctor::DoctorOptions& options = flags.options;
  options.config = config::EmbeddedDefaultConfig(DefaultDataDir(env));
  if (!path.empty()) {
    Result<config::ServerConfig> config = config::LoadServerConfigFile(path);
    if (!config.ok()) {
      std::fprintf(stderr, "memkv doctor: invalid configuration:\n%s\n", config.status().message().c_str());
      return kExitConfig;
    }
    options.config = std::move(config).value();
    options.config_path = path;
  }
  options.client_mtu = env.Get("MEMKV_RDMA_MTU");

  std::unique_ptr<doctor::HostProbe> probe;
  if (flags.fixture.empty()) {
    probe = std::make_unique<doctor::SystemProbe>(verbs::SystemProvider());
  } else {
    probe = std::make_unique<doctor::FixtureProbe>(flags.fixture);
  }
  doctor::Report report;
  std::optional<doctor::HostState> host = doctor::CheckHost(*probe, options, &report);
  if (!flags.peer.empty()) {
    SetLogLevel(LogLevel::kWarn);  // the report is the output; the client library only warns
    Status s = CheckPeer(flags, env, *probe, host, &report);
    if (!s.ok()) {
      std::fprintf(stderr, "memkv doctor: --peer %s: client configuration: %s\n", flags.peer.c_str(),
                   s.message().c_str());
      return kExitConfig;
    }
  }
  const std::string out = flags.json ? doctor::RenderJson(report) : doctor::RenderTable(report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return doctor::ExitCode(report);
}

}  // namespace memkv::cli
