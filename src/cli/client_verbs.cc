// memkv put / get / del / exists / match-prefix / ls: the client library from the shell.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <span>
#include <utility>

#include "base/log.h"
#include "base/unique_fd.h"
#include "base/units.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "client/client_from_config.h"
#include "config/client_config.h"
#include "memkv/client.h"
#include "memkv/identity.h"
#include "memkv/put_options.h"
#include "proto/frame.h"

namespace memkv::cli {
namespace {

constexpr const char* kDefaultServer = "127.0.0.1:9900";

constexpr const char* kVerbUsage = R"(Usage:
  memkv put [--ttl T] [--retention R] [--parent KEY] KEY [FILE|-]
                             store FILE (default: standard input) under KEY
  memkv get KEY [-o FILE]    write the value to standard output or FILE
  memkv del KEY              delete KEY
  memkv exists KEY...        print "present KEY" or "absent KEY" per key
  memkv match-prefix KEY...  print "matched N of M": the keys stored from the
                             first without a gap, then "first miss KEY" when
                             N < M (exit 1: not all matched)
  memkv ls [PREFIX]          print every key that starts with PREFIX, one per
                             line in bytewise order (every server is asked;
                             one that cannot be is named on standard error,
                             the others' keys are printed, and ls exits 4,
                             or 5 when each such server refused the key)
  memkv ls --by-identity [PREFIX]
                             instead, one line per identity segment and how
                             many of the keys are in it: "SEGMENT COUNT",
                             where SEGMENT is the key up to and including its
                             first "@<16 hex tag>/" (a tenant's prefix, if
                             any, then the cache identity's tag, as the server
                             stores them), and "none" counts the keys
                             without one. Segments in bytewise order, none
                             last

put's options:
  --ttl T          lifetime from the put: milliseconds, or a number with ms,
                   s, m or h (30s, 10m); past it the value is a miss. 0: none
  --retention R    normal (default), pinned (not evicted while its TTL runs;
                   no TTL: the server's memory.pin_ttl) or evict_first
  --parent KEY     the previous block of the value's prefix chain: eviction
                   takes tails before heads

"--" ends the options: memkv put -- -key file, memkv get -- -key.
-o FILE and --output=FILE are the same; -o - is standard output. A FILE
that begins with '-' is written --output=-file (or -o ./-file). put maps
FILE (no copy) or reads standard input (or a pipe or device) until EOF. A
value larger than the limit the key's server announces (its
memory.max_value_size, default 16 GiB) is refused naming that limit, and
nothing is stored (exit 6): a file by its size before it is read, a stream
as soon as it passes the limit (memkv put K /dev/zero stops there). A
stream never takes more than this host's memory.

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
  MEMKV_ASSIGN_OR_RETURN(config::ClientConfig config, config::LoadClientConfig(ClientLookupWithDefaults(env)));
  return client::CreateClient(config);
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

// The value to put: a regular file mapped read-only (no copy; a file cut
// short by another process while it is read kills the command with SIGBUS),
// or a stream (standard input, a pipe, a device) read until EOF into one
// anonymous mapping that grows by doubling (mremap moves pages, never bytes).
class InputValue {
 public:
  InputValue() = default;
  InputValue(InputValue&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(other.size_), mapped_(other.mapped_) {}
  InputValue& operator=(InputValue&&) = delete;
  ~InputValue() {
    if (data_ != nullptr) ::munmap(data_, mapped_);
  }

  static Result<InputValue> MapFile(int fd, uint64_t size, const std::string& name) {
    InputValue v;
    if (size == 0) return v;
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return IoError("cannot map " + name + " (" + FormatSize(size) + "): " + std::strerror(errno));
    (void)::madvise(p, size, MADV_SEQUENTIAL);
    v.data_ = static_cast<uint8_t*>(p);
    v.size_ = v.mapped_ = size;
    return v;
  }

  // Reads `fd` until EOF, failing once it has more than `limit` bytes.
  static Result<InputValue> ReadStream(int fd, uint64_t limit, const std::string& name, const std::string& why) {
    InputValue v;
    constexpr uint64_t kFirst = 1 << 20;
    const uint64_t cap = limit + 1;  // one byte past the limit tells an oversized stream
    for (;;) {
      if (v.size_ == v.mapped_) {
        if (v.size_ >= cap) {
          return TooLarge(name + " holds more than " + FormatSize(limit) + " (" + std::to_string(limit) +
                          " bytes), " + why + "; stopped reading after " + std::to_string(v.size_) +
                          " bytes and stored nothing");
        }
        MEMKV_RETURN_IF_ERROR(v.Grow(std::min(cap, std::max(kFirst, 2 * v.mapped_)), name));
      }
      const ssize_t n = ::read(fd, v.data_ + v.size_, v.mapped_ - v.size_);
      if (n == 0) return v;
      if (n < 0) {
        if (errno == EINTR) continue;
        return IoError("cannot read " + name + ": " + std::strerror(errno));
      }
      v.size_ += static_cast<size_t>(n);
    }
  }

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  Status Grow(uint64_t bytes, const std::string& name) {
    void* p = data_ == nullptr ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                               : ::mremap(data_, mapped_, bytes, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) {
      return ResourceExhausted("cannot hold " + FormatSize(bytes) + " of " + name + " in memory: " +
                               std::strerror(errno));
    }
    data_ = static_cast<uint8_t*>(p);
    mapped_ = bytes;
    return Status::Ok();
  }

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;
};

// How much of a value put reads: the limit the key's server announced at
// Connect (its memory.max_value_size), so that an endless stream
// (`memkv put K /dev/zero`, `yes | memkv put K`) stops there with a line
// naming it; never more than the protocol carries or this host's memory.
// When the owner does not take the put itself (draining or down: the put
// goes to its next server), the largest limit any server announced; the
// client still checks the value against the server that takes it.
struct ValueLimit {
  uint64_t bytes = 0;
  std::string why;  // "the limit that server X announced at Connect (its memory.max_value_size)"
};

ValueLimit ValueLimitFor(const Client& client, std::string_view key) {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  const uint64_t memory = pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
                                                     : UINT64_MAX;
  ValueLimit limit{proto::kMaxValueBytesCeiling, "the largest value the protocol carries"};
  if (memory < limit.bytes) limit = {memory, "this host's memory"};
  const std::vector<ServerView> servers = client.Servers();
  const size_t owner = client.ServerFor(key);
  const ServerView* by = nullptr;
  if (owner < servers.size() && (servers[owner].state == "up" || servers[owner].state == "busy")) {
    by = &servers[owner];
  } else {
    for (const ServerView& v : servers) {
      if (by == nullptr || v.max_value_bytes > by->max_value_bytes) by = &v;
    }
  }
  if (by != nullptr && by->max_value_bytes != 0 && by->max_value_bytes <= limit.bytes) {
    limit = {by->max_value_bytes,
             "the limit that server " + by->name + " announced at Connect (its memory.max_value_size)"};
  }
  return limit;
}

// The value to put from `path` ("-": standard input), refused (TooLarge,
// naming `limit`) once it is larger: a regular file by its size before it
// is mapped, a stream as soon as it has sent one byte more than the limit.
Result<InputValue> ReadInput(const std::string& path, const ValueLimit& limit) {
  const std::string name = path == "-" ? std::string("standard input") : path;
  UniqueFd owned;
  int fd = STDIN_FILENO;
  if (path != "-") {
    owned = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!owned.valid()) return InvalidArgument("cannot open " + path + ": " + std::strerror(errno));
    fd = owned.get();
    struct stat st {};
    if (::fstat(fd, &st) != 0) return IoError("cannot stat " + path + ": " + std::strerror(errno));
    if (S_ISREG(st.st_mode)) {
      const auto size = static_cast<uint64_t>(st.st_size);
      if (size > limit.bytes) {
        return TooLarge(path + " is " + std::to_string(size) + " bytes, more than " +
                        FormatSize(limit.bytes) + " (" + std::to_string(limit.bytes) + " bytes), " + limit.why +
                        "; stored nothing");
      }
      return InputValue::MapFile(fd, size, name);
    }
  }
  return InputValue::ReadStream(fd, limit.bytes, name, limit.why);
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

// --ttl: milliseconds, or a whole number with ms, s, m or h.
Result<uint64_t> ParseTtl(const std::string& text) {
  constexpr std::pair<std::string_view, uint64_t> kUnits[] = {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}};
  const size_t digits = text.find_first_not_of("0123456789");
  const std::string number = text.substr(0, digits);
  const std::string unit = digits == std::string::npos ? std::string() : text.substr(digits);
  uint64_t scale = unit.empty() ? 1 : 0;
  for (const auto& [name, ms] : kUnits) {
    if (unit == name) scale = ms;
  }
  const Status bad = InvalidArgument("--ttl '" + text + "' is not a duration; allowed: milliseconds, or a number with "
                                     "ms, s, m or h (30s, 10m, 0 for none)");
  if (number.empty() || number.size() > 15 || scale == 0) return bad;
  return std::stoull(number) * scale;
}

// --retention: the names of memkv::RetentionName.
Result<Retention> ParseRetention(const std::string& text) {
  for (Retention r : {Retention::kNormal, Retention::kPinned, Retention::kEvictFirst}) {
    if (text == RetentionName(r)) return r;
  }
  return InvalidArgument("--retention '" + text + "' is not a retention class; allowed: normal, pinned, evict_first");
}

// put's options from its flags (name -> value, as given).
Result<PutOptions> ParsePutOptions(const std::vector<std::pair<std::string, std::string>>& flags) {
  PutOptions options;
  for (const auto& [name, value] : flags) {
    if (name == "--ttl") {
      MEMKV_ASSIGN_OR_RETURN(options.ttl_ms, ParseTtl(value));
    } else if (name == "--retention") {
      MEMKV_ASSIGN_OR_RETURN(options.retention, ParseRetention(value));
    } else if (value.empty()) {
      return InvalidArgument("--parent needs a key");
    } else {
      options.parent_key = value;
    }
  }
  return options;
}

// memkv match-prefix: the matched count, then the first key not matched.
int MatchPrefix(Client& client, const std::vector<std::string>& positional) {
  const std::vector<std::string_view> keys(positional.begin(), positional.end());
  Result<size_t> matched = client.MatchPrefix(keys);
  if (!matched.ok()) return Report("match-prefix", matched.status());
  std::printf("matched %zu of %zu\n", *matched, keys.size());
  if (*matched == keys.size()) return kExitOk;
  std::printf("first miss %s\n", positional[*matched].c_str());
  return kExitNotFound;
}

}  // namespace

// The servers a listing could not ask: the client has not reached them
// (pending: down since it started, or refusing its key) or backs off from
// them (down). Their keys are missing from the list.
std::vector<ServerView> UnlistedServers(const Client& client) {
  std::vector<ServerView> out;
  for (ServerView& v : client.Servers()) {
    if (v.state == "pending" || v.state == "down") out.push_back(std::move(v));
  }
  return out;
}

// The identity segment of a stored key: the key up to and including its
// first "@<tag>/" (tag: 16 lowercase hex characters), so a tenant's prefix
// stays part of it; "" when it has none (docs/cli.md, "memkv ls").
std::string_view IdentitySegment(std::string_view key) {
  constexpr size_t kSegment = CacheIdentity::kTagChars + 2;  // '@', tag, '/'
  for (size_t at = key.find('@'); at != std::string_view::npos; at = key.find('@', at + 1)) {
    if (key.size() - at < kSegment || key[at + kSegment - 1] != '/') continue;
    const std::string_view tag = key.substr(at + 1, CacheIdentity::kTagChars);
    if (std::all_of(tag.begin(), tag.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); })) {
      return key.substr(0, at + kSegment);
    }
  }
  return {};
}

// memkv ls: every key under `prefix`, a page at a time, one per line (or,
// `by_identity`, one line per identity segment with its key count, at the
// end). What could be listed is printed; each server that could not be asked
// is named on stderr and the command exits 4 (5 when every such server
// refused the client's key), as for any command that cannot reach a server.
int ListKeys(const std::string& prefix, bool by_identity, const Environment& env) {
  Result<std::unique_ptr<Client>> client = MakeClient(env);
  if (!client.ok()) {
    std::fprintf(stderr, "memkv ls: client configuration: %s\n", client.status().message().c_str());
    return kExitConfig;
  }
  constexpr size_t kPage = 1000;
  std::string cursor;
  int code = kExitOk;
  std::map<std::string, uint64_t> segments;  // by_identity: keys per segment
  uint64_t without_segment = 0;
  do {
    Result<KeyListPage> page = (*client)->ListKeys(prefix, cursor, kPage);
    if (!page.ok()) {
      code = Report("ls", page.status());
      break;
    }
    for (const std::string& key : page->keys) {
      if (by_identity) {
        const std::string_view segment = IdentitySegment(key);
        if (segment.empty()) {
          ++without_segment;
        } else {
          ++segments[std::string(segment)];
        }
        continue;
      }
      std::fwrite(key.data(), 1, key.size(), stdout);
      std::fputc('\n', stdout);
    }
    cursor = std::move(page->next_cursor);
  } while (!cursor.empty());
  if (by_identity && code == kExitOk) {
    for (const auto& [segment, count] : segments) {
      std::fwrite(segment.data(), 1, segment.size(), stdout);
      std::fprintf(stdout, " %llu\n", static_cast<unsigned long long>(count));
    }
    if (without_segment > 0) std::fprintf(stdout, "none %llu\n", static_cast<unsigned long long>(without_segment));
  }
  if (std::fflush(stdout) != 0 && code == kExitOk) code = Report("ls", IoError("writing standard output failed"));
  if (code != kExitOk) return code;
  const std::vector<ServerView> unlisted = UnlistedServers(**client);
  bool all_refused = !unlisted.empty();
  for (const ServerView& v : unlisted) {
    const bool refused = v.detail.rfind("AuthFailed", 0) == 0;
    all_refused = all_refused && refused;
    std::fprintf(stderr, "memkv ls: server %s could not be listed, its keys are missing above: %s%s\n",
                 v.name.c_str(), v.detail.c_str(),
                 refused ? " (MEMKV_AUTH_KEY must equal the server's key; the servers of a fleet share one key)"
                         : " (is the server running? 'memkv admin status' shows the fleet)");
  }
  if (unlisted.empty()) return kExitOk;
  return all_refused ? kExitAuth : kExitUnavailable;
}

int RunClientVerb(const std::string& verb, const std::vector<std::string>& args, const Environment& env) {
  const Command* command = FindCommand(verb);
  Result<std::vector<std::string>> expanded =
      ExpandOptions(args, command != nullptr ? command->options : kKeyOperandsOnly);
  if (!expanded.ok()) return Usage(verb, expanded.status().message());
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> put_flags;
  std::string out_path;
  bool by_identity = false;
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
      if (a == "--by-identity") {  // ls only, as above
        by_identity = true;
        continue;
      }
      if (a == "--ttl" || a == "--retention" || a == "--parent") {  // put only, as above
        put_flags.emplace_back(a, (*expanded)[++i]);
        continue;
      }
    }
    positional.push_back(a);
  }
  if (verb == "ls") {
    if (positional.size() > 1) return Usage(verb, "takes at most one PREFIX");
    return ListKeys(positional.empty() ? std::string() : positional[0], by_identity, env);
  }
  if (positional.empty()) return Usage(verb, "missing KEY");
  const bool one_key = verb == "get" || verb == "del";
  if (one_key && positional.size() != 1) return Usage(verb, "takes exactly one KEY");
  if (verb == "put" && positional.size() > 2) return Usage(verb, "takes KEY and at most one FILE");
  Result<PutOptions> put_options = ParsePutOptions(put_flags);
  if (!put_options.ok()) return Usage(verb, put_options.status().message());

  Result<std::unique_ptr<Client>> client = MakeClient(env);
  if (!client.ok()) {
    std::fprintf(stderr, "memkv %s: client configuration: %s\n", verb.c_str(), client.status().message().c_str());
    return kExitConfig;
  }
  if (verb == "match-prefix") return MatchPrefix(**client, positional);
  const std::string& key = positional[0];
  if (verb == "put") {
    Result<InputValue> data = ReadInput(positional.size() == 2 ? positional[1] : "-", ValueLimitFor(**client, key));
    if (!data.ok()) return Report(verb, data.status());
    // Without flags a plain put, which every server takes.
    Status s = put_options->empty() ? (*client)->Put(key, data->bytes())
                                    : (*client)->PutWith(key, data->bytes(), *put_options);
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
config::EnvLookup ClientLookupWithDefaults(const Environment& env) {
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
