// memkv start: load and validate the config, build the store, serve until a
// signal, drain, exit 0.
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "base/bytes.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/parse_number.h"
#include "base/thread_name.h"
#include "base/units.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/start_preflight.h"
#include "config/host_port.h"
#include "config/server_config.h"
#include "server/daemon.h"
#include "server/key_file.h"
#include "storage/memory_store.h"
#include "verbs/verbs.h"

namespace memkv::cli {
namespace {

constexpr const char* kStartUsage = R"(Usage: memkv start [options]

Runs a MemKV server in the foreground until SIGINT or SIGTERM (each drains:
queued responses are flushed, then it exits 0).

SIGHUP re-reads the config file the server started with (--config, else
/etc/memkv/config.yaml) and applies its credentials alone, as 'memkv admin
reload' does: network.auth_key and tenants (keys, prefixes, read_only, rdma,
quotas). Connections whose key is gone are closed; the rest serve on. Every
other setting (the rest of network, memory, storage, rdma, log, metrics,
events, fleet, a tenant's events_publish) applies only on a restart: the log
line "received SIGHUP: reloaded the config: ..." names each one that
changed. A file with problems, one that drops network.auth_key, or a server
started without a config file changes nothing: "received SIGHUP: reload
failed, nothing changed: ..." says why. Either way the server serves on.
The options below are read at start only.

Options:
  --config PATH          server config (YAML, docs/configuration.md); default
                         /etc/memkv/config.yaml if it exists, else the embedded
                         default: 127.0.0.1:9900, memory pool sized to the box,
                         values kept in DATA_DIR/drive0.memkv (file mode)
  --data-dir DIR         where the generated auth key and the embedded
                         default's drive file live (default ~/.memkv)
  --log-level LEVEL      debug, info, warn, error (default: log.level of the
                         config, info)
  --workers N            event-loop threads (default: one per core, at most 8)
  --handshake-timeout-ms N  close connections that do not authenticate in time
                         (default 10000)
  --write-stall-timeout-ms N  close connections that stop reading their
                         responses for this long (default 30000)
  --address HOST:PORT    serve here instead of network.address (admin: PORT+1);
                         with neither, the server listens on 127.0.0.1 only
  --port N               serve on port N of network.address's host
  --check                validate the config and run every check start makes
                         before it serves (files, drives, memory); print the
                         effective settings; create nothing; exit 3 if start
                         would refuse

"--name=value" is the same as "--name value"; a value that begins with '-'
must be written that way (--data-dir=-dir): "--data-dir --check" is refused.

When ready it prints one line on standard output: "ready HOST:PORT".
)";

constexpr const char* kSystemConfig = "/etc/memkv/config.yaml";

struct StartFlags {
  std::string config_path;
  std::string data_dir;
  int workers = 0;
  uint32_t handshake_timeout_ms = 10000;
  uint32_t write_stall_timeout_ms = 30000;
  bool check_only = false;
  bool log_level_set = false;  // --log-level given: it wins over log.level
  std::optional<std::string> host;  // --address: overrides network.address
  std::optional<uint16_t> port;     // --address or --port
};

bool ParseUint(const std::string& text, uint64_t max, uint64_t* out) {
  const std::optional<uint64_t> value = ParseDecimal(text);
  if (!value || *value > max) return false;
  *out = *value;
  return true;
}

int BadValue(const std::string& option, const std::string& value, const char* allowed) {
  std::fprintf(stderr, "memkv start: %s '%s': allowed: %s; see 'memkv start --help'\n", option.c_str(),
               value.c_str(), allowed);
  return kExitUsage;
}

// Returns an exit code when parsing ends the command (help, usage error).
std::optional<int> ParseFlags(const std::vector<std::string>& raw_args, StartFlags* flags) {
  Result<std::vector<std::string>> expanded =
      ExpandOptions(raw_args, kStartOptions);
  if (!expanded.ok()) {
    std::fprintf(stderr, "memkv start: %s; see 'memkv start --help'\n", expanded.status().message().c_str());
    return kExitUsage;
  }
  const std::vector<std::string>& args = *expanded;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == kEndOfOptions || !LooksLikeOption(a)) {
      const size_t at = a == kEndOfOptions ? i + 1 : i;
      if (at == args.size()) break;
      std::fprintf(stderr, "memkv start: unexpected argument '%s'; start takes options only\n", args[at].c_str());
      return kExitUsage;
    }
    if (IsHelp(a)) {
      std::fputs(kStartUsage, stdout);
      return kExitOk;
    }
    if (a == "--check") {
      flags->check_only = true;
      continue;
    }
    // ExpandOptions let through only the options above and below, each
    // followed by its value.
    const std::string* v = &args[++i];
    uint64_t n = 0;
    if (a == "--config") {
      flags->config_path = *v;
    } else if (a == "--data-dir") {
      flags->data_dir = *v;
    } else if (a == "--address") {
      Result<config::internal::HostPort> split = config::internal::SplitHostPort(*v);
      if (!split.ok() || split->port > 65534) {
        std::fprintf(stderr, "memkv start: --address '%s': %s\n", v->c_str(),
                     split.ok() ? "port out of range; allowed: 0..65534 (port+1 is the admin port)"
                                : split.status().message().c_str());
        return kExitUsage;
      }
      flags->host = split->host;
      flags->port = static_cast<uint16_t>(split->port);
    } else if (a == "--port") {
      if (!ParseUint(*v, 65534, &n)) return BadValue(a, *v, "a port, 0..65534 (port+1 is the admin port)");
      flags->port = static_cast<uint16_t>(n);
    } else if (a == "--log-level") {
      LogLevel level;
      if (!ParseLogLevel(*v, &level)) {
        std::fprintf(stderr, "memkv start: --log-level '%s' is not one of debug, info, warn, error\n", v->c_str());
        return kExitUsage;
      }
      SetLogLevel(level);
      flags->log_level_set = true;
    } else if (a == "--workers") {
      if (!ParseUint(*v, 64, &n) || n == 0) return BadValue(a, *v, "threads, 1..64");
      flags->workers = static_cast<int>(n);
    } else if (a == "--handshake-timeout-ms" || a == "--write-stall-timeout-ms") {
      if (!ParseUint(*v, 3600000, &n) || n == 0) return BadValue(a, *v, "milliseconds, 1..3600000");
      (a == "--handshake-timeout-ms" ? flags->handshake_timeout_ms : flags->write_stall_timeout_ms) =
          static_cast<uint32_t>(n);
    }
  }
  return std::nullopt;
}

// The config file start reads (what a reload reads again); empty for none.
std::string ConfigPathOf(const StartFlags& flags) {
  if (!flags.config_path.empty()) return flags.config_path;
  struct stat st{};
  return ::stat(kSystemConfig, &st) == 0 ? std::string(kSystemConfig) : std::string();
}

Result<config::ServerConfig> ResolveConfig(const StartFlags& flags) {
  if (!flags.config_path.empty()) return config::LoadServerConfigFile(flags.config_path);
  struct stat st{};
  if (::stat(kSystemConfig, &st) == 0) {
    LOG_INFO_C("start") << "using " << kSystemConfig;
    return config::LoadServerConfigFile(kSystemConfig);
  }
  LOG_INFO_C("start") << "no config file: using the embedded single-node default";
  return config::EmbeddedDefaultConfig(flags.data_dir);
}

// The config start serves: the file (or the embedded default) with the
// data directory's default drive filled in and --address / --port applied.
Result<config::ServerConfig> EffectiveConfig(const StartFlags& flags) {
  MEMKV_ASSIGN_OR_RETURN(config::ServerConfig c, ResolveConfig(flags));
  config::ResolveDataDir(flags.data_dir, &c);
  if (flags.host) c.network.host = *flags.host;
  if (flags.port) c.network.port = *flags.port;
  return c;
}

void PrintEffective(const config::ServerConfig& c, const std::string& key_source) {
  std::printf("network.address: %s:%u\n", c.network.host.c_str(), c.network.port);
  std::printf("network.auth_key: %s\n", key_source.c_str());
  std::printf("memory.block_size: %s\n", FormatSize(c.memory.block_size_bytes).c_str());
  std::printf("memory.max_size: %s\n", FormatSize(c.memory.max_size_bytes).c_str());
  std::printf("storage.mode: %s\n", std::string(config::StorageModeName(c.storage.mode)).c_str());
  for (const config::DriveConfig& d : c.storage.drives) std::printf("storage.drive: %s\n", d.media.c_str());
}

// Every connection is a descriptor; the default soft limit (1024) would cap
// a cache server far below what its clients open.
void RaiseOpenFilesLimit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  lim.rlim_cur = lim.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) LOG_WARN_C("start") << "cannot raise the open-files limit";
}

// Progress of faulting the pool in, on a terminal, once it has taken more
// than a second (a small pool is done before anyone would read it). Not on a
// pipe or a journal: the log lines before and after it say what is being
// done and how long it took.
class PrefaultMeter {
 public:
  void Update(uint64_t done, uint64_t total) {
    if (!tty_ || MonotonicNanos() - start_ < kQuietNanos) return;
    std::fprintf(stderr, "\rmemkv start: faulting the memory pool in: %s / %s (%d%%)   ", FormatSize(done).c_str(),
                 FormatSize(total).c_str(), total == 0 ? 100 : int(done * 100 / total));
    if (done == total) std::fprintf(stderr, "\n");  // the last call: the log goes on below
    std::fflush(stderr);
  }

 private:
  static constexpr Nanos kQuietNanos = 1000000000;
  const bool tty_ = ::isatty(STDERR_FILENO) == 1;
  const Nanos start_ = MonotonicNanos();
};

// Signals are taken by one thread with sigwait; every other thread inherits
// the blocked mask. SIGINT and SIGTERM drain and stop; SIGHUP reloads the
// config file's credentials (Daemon::Reload, docs/tenants.md) and serves on.
sigset_t StopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  return signals;
}

// The exit code of a Daemon::Create that failed at `step` with `status`.
int ExitCodeForStep(server::Daemon::Step step, const Status& status) {
  if (step == server::Daemon::Step::kListen || step == server::Daemon::Step::kEvents) return kExitUnavailable;
  if (step == server::Daemon::Step::kAdmin && status.code() != StatusCode::kInvalidArgument) return kExitUnavailable;
  return kExitConfig;
}

// The data directory's key file, created on the first start. Returns the
// exit code when start must end.
std::optional<int> LoadKeyFile(const std::string& data_dir, std::vector<uint8_t>* key, std::string* source) {
  Result<server::AuthKeyFile> file = server::LoadOrCreateAuthKey(data_dir);
  if (!file.ok()) {
    std::fprintf(stderr, "memkv start: %s\n", file.status().message().c_str());
    return kExitConfig;
  }
  *key = file->key;
  *source = file->path;
  LOG_INFO_C("start") << (file->created ? "generated a new auth key in " : "using the auth key in ") << file->path
                      << " (mode 0600)";
  return std::nullopt;
}

// Serves on this thread until one of `signals` (blocked in every thread)
// arrives on a thread that waits for it, then drains; the exit code.
int ServeUntilSignalled(server::Daemon& daemon, const sigset_t& signals) {
  std::atomic<bool> signalled{false};
  std::thread signal_thread([&] {
    SetThreadName("memkv-signals");
    int sig = 0;
    for (;;) {
      sigwait(&signals, &sig);
      if (sig != SIGHUP || signalled.load()) break;
      Result<server::ReloadReport> report = daemon.Reload();
      if (report.ok()) {
        LOG_INFO_C("start") << "received SIGHUP: reloaded the config: " << report->ToString();
      } else {
        LOG_ERROR_C("start") << "received SIGHUP: reload failed, nothing changed: " << report.status().message();
      }
    }
    signalled.store(true);
    const char* name = sig == SIGINT ? "SIGINT" : sig == SIGHUP ? "SIGHUP" : "SIGTERM";
    LOG_INFO_C("start") << "received " << name << ": draining and stopping";
    daemon.Stop();
  });
  Status run = daemon.Run();
  // Run failed on its own: release the signal thread from its sigwait.
  if (!signalled.load()) pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  if (!run.ok()) {
    LOG_ERROR_C("start") << run.ToString();
    return kExitFailed;
  }
  LOG_INFO_C("start") << "stopped";
  return kExitOk;
}

}  // namespace

int RunStart(const std::vector<std::string>& args, const Environment& env) {
  StartFlags flags;
  if (auto code = ParseFlags(args, &flags)) return *code;
  if (flags.data_dir.empty()) flags.data_dir = DefaultDataDir(env);

  Result<config::ServerConfig> config = EffectiveConfig(flags);
  if (!config.ok()) {
    std::fprintf(stderr, "memkv start: invalid configuration:\n%s\n", config.status().message().c_str());
    return kExitConfig;
  }
  config::ServerConfig& c = *config;
  if (LogLevel level; !flags.log_level_set && ParseLogLevel(c.log.level, &level)) SetLogLevel(level);
  if (c.memory.max_size_bytes == 0) c.memory.max_size_bytes = config::DefaultMemoryPoolBytes(PhysicalMemoryBytes());

  // RDMA registers the pool exactly when the configured device is on this
  // host; registered, or the source of O_DIRECT I/O, the pool must be hugetlb.
  Result<server::PoolPin> pin = server::PoolPinFor(c, verbs::SystemProvider());
  if (!pin.ok()) {
    std::fprintf(stderr, "memkv start: %s\n", pin.status().message().c_str());
    return kExitConfig;
  }

  // Everything refusable without serving, before anything is created; the
  // same list for --check (docs/cli.md).
  if (Status pre = Preflight(c, {.data_dir = flags.data_dir, .pin_reason = pin->reason, .check_only = flags.check_only});
      !pre.ok()) {
    std::fprintf(stderr, "memkv start%s: %s\n", flags.check_only ? " --check" : "", pre.message().c_str());
    return kExitConfig;
  }
  if (flags.check_only) {
    // Validation only: report where the key would come from, create nothing.
    std::string source = "from the config";
    if (!c.network.auth_key) {
      std::string path = flags.data_dir + "/auth.key";
      struct stat st{};
      source = path + (::stat(path.c_str(), &st) == 0 ? "" : " (generated on first start)");
    }
    PrintEffective(c, source);
    return kExitOk;
  }

  if (Status ports = CheckPortsFree(c.network); !ports.ok()) {
    std::fprintf(stderr, "memkv start: %s\n", ports.message().c_str());
    return kExitUnavailable;
  }

  server::DaemonOptions options;
  options.config = c;
  options.config_path = ConfigPathOf(flags);
  options.data_dir = flags.data_dir;
  options.workers = flags.workers;
  options.handshake_timeout_ms = flags.handshake_timeout_ms;
  options.write_stall_timeout_ms = flags.write_stall_timeout_ms;
  std::string key_source = "from the config";
  if (c.network.auth_key) {
    options.auth_key = *c.network.auth_key;
  } else if (auto code = LoadKeyFile(flags.data_dir, &options.auth_key, &key_source)) {
    return *code;
  }

  PrefaultMeter meter;
  const sigset_t signals = StopSignals();
  server::DaemonSeams seams;
  seams.prefault_progress = [&meter](uint64_t done, uint64_t total) { meter.Update(done, total); };
  seams.before_threads = [&signals] {
    RaiseOpenFilesLimit();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
  };
  server::Daemon::Step failed_step = server::Daemon::Step::kPool;
  Result<std::unique_ptr<server::Daemon>> created =
      server::Daemon::Create(std::move(options), std::move(seams), &failed_step);
  if (!created.ok()) {
    std::fprintf(stderr, "memkv start: %s\n", created.status().message().c_str());
    return ExitCodeForStep(failed_step, created.status());
  }
  server::Daemon& daemon = **created;
  const std::string address = daemon.address();
  LOG_INFO_C("start") << "memory store: " << FormatSize(daemon.memory().pool_bytes()) << " pool ("
                      << FormatSize(c.memory.block_size_bytes) << " blocks, values packed in "
                      << storage::kPoolUnitBytes << "-byte units), " << daemon.memory().backing().detail;
  if (daemon.rdma() != nullptr) LOG_INFO_C("start") << daemon.rdma()->Describe();
  LOG_INFO_C("start") << "serving on " << address << "; admin endpoint on " << daemon.admin().scheme() << "://"
                      << c.network.host << ":" << daemon.admin_port();
  if (key_source != "from the config") {
    LOG_INFO_C("start") << "clients: export MEMKV_SERVERS=" << address << " MEMKV_AUTH_KEY=$(cat " << key_source << ")";
  }
  std::printf("ready %s\n", address.c_str());
  std::fflush(stdout);

  return ServeUntilSignalled(daemon, signals);
}

}  // namespace memkv::cli
