// memkv put / get / del / exists / ls: the client library from the shell.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <iterator>

#include "base/log.h"
#include "base/units.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "client/client_from_config.h"
#include "config/client_config.h"
#include "memkv/client.h"
#include "proto/frame.h"

namespace memkv::cli {
namespace {

constexpr const char* kDefaultServer = "127.0.0.1:9900";

constexpr const char* kVerbUsage = R"(Usage:
  memkv put KEY [FILE|-]     store FILE (default: standard input) under KEY
  memkv get KEY [-o FILE]    write the value to standard output or FILE
  memkv del KEY              delete KEY
  memkv exists KEY...        print "present KEY" or "absent KEY" per key
  memkv ls [PREFIX]          print every key that starts with PREFIX, one per
                             line in bytewise order (every server is asked)

"--" ends the options: memkv put -- -key file, memkv get -- -key.
-o FILE and --output=FILE are the same; -o - is standard output. A FILE
that begins with '-' is written --output=-file (or -o ./-file). put stops
reading past 256 MiB, the largest value a server takes (exit 6).

Servers and key: the YAML named by MEMKV_CONFIG, then MEMKV_SERVERS,
MEMKV_AUTH_KEY, MEMKV_TRANSPORT, MEMKV_TIMEOUT_MS (each operation's deadline,
default 5000), MEMKV_CONNECT_TIMEOUT_MS (connecting and the handshake, default
2000: the wait for a server that does not answer). With neither set, the local
embedded default: 127.0.0.1:9900 and the key in ~/.memkv/auth.key.
Exit codes: 0 ok, 1 not found / absent, 2 usage, 3 configuration,
4 unavailable or timed out, 5 authentication failed, 6 request failed.
)";

Result<std::unique_ptr<Client>> MakeClient(const Environment& env) {
  // A shell verb speaks only when something is wrong: warnings (such as an
  // RDMA downgrade) and the one error line.
  SetLogLevel(LogLevel::kWarn);
  // Every MEMKV_* variable, MEMKV_CONNECT_TIMEOUT_MS (the wait a hung server
  // costs each command) included, is read by LoadClientConfig.
  MEMKV_ASSIGN_OR_RETURN(ClientConfig config, LoadClientConfig(ClientLookupWithDefaults(env)));
  return CreateClient(config);
}

// What an Unavailable or DeadlineExceeded means for the operator, told from
// the client's own wording (src/client/connection*.cc, pool.cc): the server
// could not be reached, it dropped the connection, or it was reached and
// answered the error itself (a drive offline, say), when "is the server
// running?" would send the operator the wrong way.
std::string UnavailableHint(const Status& status) {
  const std::string& m = status.message();
  auto has = [&m](std::string_view part) { return m.find(part) != std::string::npos; };
  if (status.code() == StatusCode::kDeadlineExceeded) {
    // The client names the deadline that passed: connecting and the
    // handshake wait at most connect_timeout_ms, an operation timeout_ms.
    const char* knob = has("connect deadline") ? "MEMKV_CONNECT_TIMEOUT_MS" : "MEMKV_TIMEOUT_MS";
    if (has("TCP connect to ")) {
      return std::string(" (nothing answered the connection attempt: check MEMKV_SERVERS and the network path; ") +
             knob + " sets the wait)";
    }
    if (has("accepted the connection but did not answer")) {
      return std::string(" (something accepted the connection but did not answer in time: a hung server, or not "
                         "a MemKV server; ") + knob + " sets the wait)";
    }
    return std::string(" (the server did not answer in time: it may be stopped, overloaded or unreachable; ") +
           knob + " sets the wait)";
  }
  if (has("connect to ") || has("cannot resolve ") || has("no address for ") || has("socket() for ") ||
      has(" is marked down after ")) {
    return " (is the server running? check MEMKV_SERVERS, or start one with 'memkv start')";
  }
  if (has("closed the connection") || has("send to ") || has("receive from ")) {
    return " (the connection to the server broke: its log says why)";
  }
  return " (the server is up and answered this itself: its log and 'memkv admin status' say more)";
}

// One line on stderr that says what failed and what to do about it.
int Report(const std::string& verb, const Status& status) {
  std::string hint;
  switch (status.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      hint = UnavailableHint(status);
      break;
    case StatusCode::kAuthFailed:
      hint = " (MEMKV_AUTH_KEY must equal the server's key: its network.auth_key or the auth.key file in its data directory)";
      break;
    default:
      break;
  }
  std::fprintf(stderr, "memkv %s: %s%s\n", verb.c_str(), status.ToString().c_str(), hint.c_str());
  return ExitCodeFor(status);
}

// Reads the value to put, stopping at one byte past the largest value a
// server takes: an endless stream (`yes | memkv put K -`) must fail, not eat
// the host's memory.
Result<std::vector<uint8_t>> ReadInput(const std::string& path) {
  const std::string name = path == "-" ? std::string("standard input") : path;
  int fd = STDIN_FILENO;
  if (path != "-") {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return InvalidArgument("cannot open " + path + ": " + std::strerror(errno));
  }
  auto too_large = [&name] {
    return TooLarge(name + " holds more than the largest value a server takes (" +
                    FormatSize(proto::kMaxValueBytes) + "); stopped reading there and stored nothing");
  };
  std::vector<uint8_t> data;
  Status status = Status::Ok();
  constexpr size_t kChunk = 1 << 16;
  for (;;) {
    if (data.size() > proto::kMaxValueBytes) {
      status = too_large();
      break;
    }
    const size_t old_size = data.size();
    data.resize(old_size + kChunk);
    ssize_t n = ::read(fd, data.data() + old_size, kChunk);
    data.resize(old_size + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      status = IoError("cannot read " + name + ": " + std::strerror(errno));
      break;
    }
  }
  if (fd != STDIN_FILENO) ::close(fd);
  if (!status.ok()) return status;
  return data;
}

// Writes `data` to the file `path`, or to standard output when `path` is
// empty or "-" (as put reads "-" as standard input; a file named "-" is ./-).
Status WriteOutput(const std::string& path, const std::vector<uint8_t>& data) {
  int fd = STDOUT_FILENO;
  if (!path.empty() && path != "-") {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return IoError("cannot create " + path + ": " + std::strerror(errno));
  }
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = IoError("cannot write " + (fd == STDOUT_FILENO ? std::string("standard output") : path) + ": " +
                         std::strerror(errno));
      if (fd != STDOUT_FILENO) ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (fd != STDOUT_FILENO && ::close(fd) != 0) return IoError("cannot close " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

int Usage(const std::string& verb, const std::string& problem) {
  std::fprintf(stderr, "memkv %s: %s; see 'memkv %s --help'\n", verb.c_str(), problem.c_str(), verb.c_str());
  return kExitUsage;
}

}  // namespace

// memkv ls: every key under `prefix`, a page at a time, one per line.
int ListKeys(const std::string& prefix, const Environment& env) {
  Result<std::unique_ptr<Client>> client = MakeClient(env);
  if (!client.ok()) {
    std::fprintf(stderr, "memkv ls: client configuration: %s\n", client.status().message().c_str());
    return kExitConfig;
  }
  constexpr size_t kPage = 1000;
  std::string cursor;
  do {
    Result<KeyListPage> page = (*client)->ListKeys(prefix, cursor, kPage);
    if (!page.ok()) return Report("ls", page.status());
    for (const std::string& key : page->keys) {
      std::fwrite(key.data(), 1, key.size(), stdout);
      std::fputc('\n', stdout);
    }
    cursor = std::move(page->next_cursor);
  } while (!cursor.empty());
  return std::fflush(stdout) == 0 ? kExitOk : Report("ls", IoError("writing standard output failed"));
}

int RunClientVerb(const std::string& verb, const std::vector<std::string>& args, const Environment& env) {
  Result<std::vector<std::string>> expanded =
      ExpandOptions(args, verb == "get" ? OptionTable{.valued = {"-o", "--output"}, .operand = "key"}
                                        : OptionTable{.operand = "key"});
  if (!expanded.ok()) return Usage(verb, expanded.status().message());
  std::vector<std::string> positional;
  std::string out_path;
  bool options_done = false;
  for (size_t i = 0; i < expanded->size(); ++i) {
    const std::string& a = (*expanded)[i];
    if (!options_done) {
      if (a == kEndOfOptions) {
        options_done = true;
        continue;
      }
      if (IsHelp(a)) {
        std::fputs(kVerbUsage, stdout);
        return kExitOk;
      }
      if (a == "-o" || a == "--output") {  // get only: ExpandOptions refuses it elsewhere
        out_path = (*expanded)[++i];
        if (out_path.empty()) return Usage(verb, a + " needs a file name");
        continue;
      }
    }
    positional.push_back(a);
  }
  if (verb == "ls") {
    if (positional.size() > 1) return Usage(verb, "takes at most one PREFIX");
    return ListKeys(positional.empty() ? std::string() : positional[0], env);
  }
  if (positional.empty()) return Usage(verb, "missing KEY");
  const bool one_key = verb == "get" || verb == "del";
  if (one_key && positional.size() != 1) return Usage(verb, "takes exactly one KEY");
  if (verb == "put" && positional.size() > 2) return Usage(verb, "takes KEY and at most one FILE");

  Result<std::unique_ptr<Client>> client = MakeClient(env);
  if (!client.ok()) {
    std::fprintf(stderr, "memkv %s: client configuration: %s\n", verb.c_str(), client.status().message().c_str());
    return kExitConfig;
  }
  const std::string& key = positional[0];
  if (verb == "put") {
    Result<std::vector<uint8_t>> data = ReadInput(positional.size() == 2 ? positional[1] : "-");
    if (!data.ok()) return Report(verb, data.status());
    Status s = (*client)->Put(key, *data);
    return s.ok() ? kExitOk : Report(verb, s);
  }
  if (verb == "get") {
    Result<std::vector<uint8_t>> value = (*client)->Get(key);
    if (!value.ok()) {
      if (value.status().code() == StatusCode::kNotFound) {
        std::fprintf(stderr, "memkv get: key '%s' not found\n", key.c_str());
        return kExitNotFound;
      }
      return Report(verb, value.status());
    }
    Status s = WriteOutput(out_path, *value);
    return s.ok() ? kExitOk : Report(verb, s);
  }
  if (verb == "del") {
    Status s = (*client)->Delete(key);
    if (s.code() == StatusCode::kNotFound) {
      std::fprintf(stderr, "memkv del: key '%s' not found\n", key.c_str());
      return kExitNotFound;
    }
    return s.ok() ? kExitOk : Report(verb, s);
  }
  // exists
  std::vector<std::string_view> keys(positional.begin(), positional.end());
  BatchResult result = (*client)->BatchExists(keys);
  int code = kExitOk;
  for (size_t i = 0; i < keys.size(); ++i) {
    const Status& s = result.statuses[i];
    if (s.ok()) {
      std::printf("present %s\n", positional[i].c_str());
    } else if (s.code() == StatusCode::kNotFound) {
      std::printf("absent %s\n", positional[i].c_str());
      if (code == kExitOk) code = kExitNotFound;
    } else {
      code = Report(verb, s.WithContext("key '" + positional[i] + "'"));
    }
  }
  return code;
}

// The client's view of the environment: the real one, plus the local
// defaults when neither a config file nor the variable provides a value.
EnvLookup ClientLookupWithDefaults(const Environment& env) {
  return [env](std::string_view name) -> std::optional<std::string> {
    if (auto v = env.Get(name)) return v;
    if (env.Get("MEMKV_CONFIG")) return std::nullopt;
    if (name == "MEMKV_SERVERS") return std::string(kDefaultServer);
    if (name == "MEMKV_AUTH_KEY") {
      std::ifstream in(DefaultDataDir(env) + "/auth.key");
      std::string key;
      if (in >> key) return key;
    }
    return std::nullopt;
  };
}

}  // namespace memkv::cli
