// Regressions found by an operator in the `memkv` command (docs/cli.md):
// argument conventions ("--", "--name=value", where -h/--help counts), the
// value limit of `put` from a stream, SIGHUP, `start --check` refusing what
// start refuses, a config that names no storage, `start --address/--port`,
// and Prometheus' default `/metrics` path. Real `memkv` processes throughout.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <chrono>
#include <thread>

#include "tests/harness.h"
#include "tests/shared_server.h"

namespace memkv::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

// The shell's quoting of one word.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class CliArgsTest : public SharedServerTest {
 protected:
  static std::map<std::string, std::string> Env() {
    return {{"MEMKV_SERVERS", server_->address()}, {"MEMKV_AUTH_KEY", kTestKeyHex}};
  }
  // `memkv ARGS` run by sh in `cwd` with the client's variables.
  static CommandResult InDir(const std::string& cwd, const std::vector<std::string>& args) {
    std::string cmd = "cd " + Quote(cwd) + " && MEMKV_SERVERS=" + server_->address() +
                      " MEMKV_AUTH_KEY=" + kTestKeyHex + " " + Quote(MemkvBinary());
    for (const std::string& a : args) cmd += " " + Quote(a);
    return RunShell(cmd + " 2>&1");
  }

  TempDir dir_;
};

TEST_F(CliArgsTest, KeysThatBeginWithADashWorkAfterDoubleDash) {
  CommandResult r = RunMemkv({"put", "--", "-dash-key"}, Env(), "dashed");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunMemkv({"get", "--", "-dash-key"}, Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "dashed");
  r = RunMemkv({"exists", "--", "-dash-key", "--other"}, Env());
  EXPECT_EQ(r.out, "present -dash-key\nabsent --other\n") << r.err;
  EXPECT_EQ(RunMemkv({"del", "--", "-dash-key"}, Env()).exit_code, 0);
  EXPECT_EQ(RunMemkv({"get", "--", "-dash-key"}, Env()).exit_code, 1);
  // Without "--" it is still an unknown option, and the message says what to do.
  r = RunMemkv({"get", "-dash-key"}, Env());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'--'"), std::string::npos) << r.err;
}

TEST_F(CliArgsTest, HelpAsAFileNameIsAFileNotTheUsage) {
  dir_.Write("--help", "help-file-contents");
  dir_.Write("-h", "h-file-contents");
  CommandResult r = InDir(dir_.path(), {"put", "help/key", "--", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("Usage"), std::string::npos) << r.out;
  r = InDir(dir_.path(), {"put", "--", "h/key", "-h"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(RunMemkv({"get", "help/key"}, Env()).out, "help-file-contents");
  EXPECT_EQ(RunMemkv({"get", "h/key"}, Env()).out, "h-file-contents");
  // A file named --help is written --output=--help; "-o --help" is refused
  // as a missing value rather than read as either.
  r = InDir(dir_.path(), {"get", "h/key", "--output=--help"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(ReadAll(dir_.path() + "/--help"), "h-file-contents");
  r = InDir(dir_.path(), {"get", "h/key", "-o", "--help"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("-o needs a value; '--help' looks like an option"), std::string::npos) << r.out;
  // In option position it is still the usage.
  r = RunMemkv({"put", "k", "--help"}, Env());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Usage"), std::string::npos);
}

TEST_F(CliArgsTest, OptionEqualsValueIsAcceptedEverywhere) {
  ASSERT_EQ(RunMemkv({"put", "eq/key"}, Env(), "eq").exit_code, 0);
  const std::string out = dir_.path() + "/eq.out";
  CommandResult r = RunMemkv({"get", "eq/key", "--output=" + out}, Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadAll(out), "eq");

  const std::string config = dir_.Write("c.yaml", "network:\n  address: 127.0.0.1:0\nstorage:\n  mode: memory\n");
  r = RunMemkv({"start", "--check", "--config=" + config, "--data-dir=" + dir_.path(), "--log-level=warn"}, {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("storage.mode: memory"), std::string::npos) << r.out;

  r = RunMemkv({"admin", "status", "--timeout-ms=2000", "--json",
                "http://127.0.0.1:" + std::to_string(server_->AdminPort())}, {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // A switch with a value is a usage error naming it, not silently taken.
  r = RunMemkv({"start", "--check=yes", "--config", config}, {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--check takes no value"), std::string::npos) << r.err;
}

// An option whose value is missing never takes the next option as its
// value: `start --data-dir --check` once served, with a 4 GiB drive file in
// a directory named --check.
TEST_F(CliArgsTest, AnOptionNeverTakesTheNextOptionAsItsValue) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<Case> cases = {
      {{"start", "--data-dir", "--check"},
       "--data-dir needs a value; '--check' looks like an option (if it is the value, write --data-dir=--check)"},
      {{"start", "--config", "--port", "0"}, "--config needs a value; '--port' looks like an option"},
      {{"start", "--data-dir", "-x", "--check"}, "--data-dir needs a value; '-x' looks like an option"},
      {{"start", "--check", "--data-dir"}, "--data-dir needs a value"},
      {{"doctor", "--config", "--json"}, "--config needs a value; '--json' looks like an option"},
      {{"setup", "--drives", "--force"}, "--drives needs a value; '--force' looks like an option"},
      {{"drive", "list", "--config", "--json"}, "--config needs a value; '--json' looks like an option"},
      {{"admin", "status", "--cacert", "--json"}, "--cacert needs a value; '--json' looks like an option"},
      {{"get", "k", "--output", "--", "x"}, "--output needs a value; '--' looks like an option"},
      // Unknown options are named alone, not with the word after them.
      {{"start", "--bogus", "--check"}, "unknown option '--bogus';"},
      {{"start", "--bogus", "7"}, "unknown option '--bogus';"},
      {{"doctor", "--bogus", "--json"}, "unknown option '--bogus';"},
      {{"get", "--bogus", "k"}, "unknown option '--bogus' (a key that begins with '-' goes after '--')"},
      // A bad value names the option and the value, and what is allowed.
      {{"start", "--port", "-1"}, "--port '-1': allowed: a port, 0..65534"},
      {{"start", "--workers", "0"}, "--workers '0': allowed: threads, 1..64"},
  };
  for (const Case& c : cases) {
    std::string joined;
    for (const std::string& a : c.args) joined += a + " ";
    // `timeout`: were the option taken as a value, start would serve.
    std::vector<std::string> args = {"/usr/bin/timeout", "20", MemkvBinary()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string cmd = "cd " + Quote(dir_.path()) + " &&";
    for (const std::string& a : args) cmd += " " + Quote(a);
    CommandResult r = RunShell(cmd + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << joined << ": " << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << joined << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << joined << ": " << r.out;
  }
  EXPECT_FALSE(Exists(dir_.path() + "/--check")) << "a directory named --check was made";
  EXPECT_FALSE(Exists(dir_.path() + "/-x"));

  // Written --name=value, a value that begins with '-' is taken as given.
  const std::string config = dir_.Write("c.yaml", "storage:\n  mode: memory\n");
  CommandResult r = InDir(dir_.path(), {"start", "--check", "--config", config, "--data-dir=--check"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("network.auth_key: --check/auth.key"), std::string::npos) << r.out;
  ASSERT_EQ(RunMemkv({"put", "dash/out"}, Env(), "to a dash file").exit_code, 0);
  r = InDir(dir_.path(), {"get", "dash/out", "--output=-dash"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(ReadAll(dir_.path() + "/-dash"), "to a dash file");
}

// `get KEY -o -` writes standard output, as `put KEY -` reads standard input.
TEST_F(CliArgsTest, GetToDashIsStandardOutput) {
  ASSERT_EQ(RunMemkv({"put", "dash/stdout", "-"}, Env(), "through stdout").exit_code, 0);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"get", "dash/stdout", "-o", "-"}, {"get", "dash/stdout", "--output=-"}, {"get", "-o", "-", "dash/stdout"}}) {
    CommandResult r = InDir(dir_.path(), args);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(r.out, "through stdout");
    EXPECT_FALSE(Exists(dir_.path() + "/-")) << "wrote a file named '-'";
  }
  // A file named '-' is still reachable: ./-
  CommandResult r = InDir(dir_.path(), {"get", "dash/stdout", "-o", "./-"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(ReadAll(dir_.path() + "/-"), "through stdout");
}

// `memkv put KEY FILE` (default: `memkv put endless/key -`, standard input)
// with /dev/zero (an endless stream) as its standard input and its address
// space capped at 1 GiB (put reads a stream up to the server's value limit,
// 16 GiB by default, or the host's memory, so without the cap it would eat
// the host): its exit code and peak resident set (-1, 0 when it did not exit
// within 30 s).
struct EndlessPut {
  int exit_code = -1;
  int64_t max_rss_bytes = 0;
};

EndlessPut PutFromDevZero(const std::map<std::string, std::string>& env, const std::string& stderr_path,
                          const std::string& key = "endless/key", const std::string& file = "-") {
  std::vector<std::string> argv_s = {MemkvBinary(), "put", key, file};
  std::vector<std::string> env_s;
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const rlimit address_space{1ULL << 30, 1ULL << 30};
    ::setrlimit(RLIMIT_AS, &address_space);
    const int in = ::open("/dev/zero", O_RDONLY);
    const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(in, 0);
    ::dup2(err, 2);
    std::vector<char*> argv, envp;
    for (auto& s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);
    for (auto& s : env_s) envp.push_back(s.data());
    envp.push_back(nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  EndlessPut result;
  if (!PollUntil([&] { return ::wait4(pid, &status, WNOHANG, &usage) == pid; }, 30000)) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return result;
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.max_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is in KiB
  return result;
}

TEST_F(CliArgsTest, PutFromAnEndlessStreamFailsWithALineWhenMemoryRunsOut) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the put runs under an address-space cap, which AddressSanitizer's shadow memory cannot live in";
#endif
  const std::string err_path = dir_.path() + "/put.err";
  const EndlessPut put = PutFromDevZero(Env(), err_path);
  const std::string err = ReadAll(err_path);
  EXPECT_EQ(put.exit_code, 6) << err;
  // It read past the 256 MiB it once stopped at, and failed with a line, not
  // a crash, when its buffer could not double again.
  EXPECT_GT(put.max_rss_bytes, int64_t{256} << 20) << "peak RSS of memkv put";
  EXPECT_LT(put.max_rss_bytes, int64_t{1} << 30) << "peak RSS of memkv put";
  EXPECT_NE(err.find("of standard input in memory"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("memkv put: "), std::string::npos) << err;
  EXPECT_EQ(RunMemkv({"get", "endless/key"}, Env()).exit_code, 1) << "nothing is stored";
}

// An endless stream against a server whose memory.max_value_size is 1 MiB:
// put stops reading one byte past that limit and fails naming it, at once
// and in little memory, from a device given as FILE (/dev/zero) and from a
// pipe on standard input, rather than reading until its buffer cannot grow.
TEST_F(CliArgsTest, PutFromAnEndlessStreamStopsAtTheServersValueLimit) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the put runs under an address-space cap, which AddressSanitizer's shadow memory cannot live in";
#endif
  ServerProcess small;
  ServerSpec spec;
  spec.memory_max_size = "16 MiB";
  spec.memory_yaml = "  max_value_size: 1 MiB\n";
  ASSERT_TRUE(small.Start(spec).ok()) << small.Stderr();
  const std::map<std::string, std::string> env = {{"MEMKV_SERVERS", small.address()}, {"MEMKV_AUTH_KEY", kTestKeyHex}};
  for (const std::string file : {"/dev/zero", "-"}) {
    const std::string err_path = dir_.path() + "/limited.err";
    const auto start = std::chrono::steady_clock::now();
    const EndlessPut put = PutFromDevZero(env, err_path, "endless/limited", file);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    const std::string err = ReadAll(err_path);
    const std::string name = file == "-" ? "standard input" : file;
    EXPECT_EQ(put.exit_code, 6) << name << ": " << err;
    EXPECT_EQ(err, "memkv put: TooLarge: " + name + " holds more than 1 MiB (1048576 bytes), the limit that server " +
                       small.address() + " announced at Connect (its memory.max_value_size); stopped reading after "
                       "1048577 bytes and stored nothing\n");
    // A whole 1 GiB address space would let it read far more: it stopped at
    // the limit, holding a few MiB of the stream at most.
    EXPECT_LT(put.max_rss_bytes, int64_t{128} << 20) << name << ": peak RSS of memkv put";
    EXPECT_LT(ms, 10000) << name;
  }
  EXPECT_EQ(RunMemkv({"get", "endless/limited"}, env).exit_code, 1) << "nothing is stored";

  // A regular file over the limit is refused by its size, before it is read.
  const std::string big = dir_.path() + "/two-mib.bin";
  std::ofstream(big) << std::string(2 << 20, 'x');
  CommandResult r = RunMemkv({"put", "endless/file", big}, env);
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_NE(r.err.find("is 2097152 bytes, more than 1 MiB (1048576 bytes), the limit that server " + small.address()),
            std::string::npos)
      << r.err;
}

TEST_F(CliArgsTest, SighupReloadsTheConfigAndTheServerServesOn) {
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  ASSERT_EQ(::kill(server.pid(), SIGHUP), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (server.Stderr().find("received SIGHUP: reloaded the config") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval
  }
  EXPECT_NE(server.Stderr().find("received SIGHUP: reloaded the config: 0 tenants, 1 keys, 0 connections closed"),
            std::string::npos)
      << server.Stderr();
  auto client = ClientFor({&server});
  ASSERT_TRUE(client);
  EXPECT_TRUE(client->Put("after-hup", std::vector<uint8_t>{1, 2}).ok());
  EXPECT_EQ(server.Stop(), 0) << server.Stderr();
}

// memkv start --check with `yaml`: its exit code and stderr.
CommandResult Check(const TempDir& dir, const std::string& yaml) {
  const std::string config = dir.Write("check.yaml", yaml);
  return RunMemkv({"start", "--check", "--config", config, "--data-dir", dir.path() + "/data"}, {});
}

TEST_F(CliArgsTest, CheckRefusesWhatStartRefuses) {
  const std::string memory = "storage:\n  mode: memory\n";
  struct Case {
    const char* what;
    std::string yaml;
    const char* message;
  };
  const std::string missing = dir_.path() + "/missing";
  const std::string regular = dir_.Write("not-a-device", "x");
  const std::vector<Case> cases = {
      {"missing TLS files",
       "network:\n  tls_cert: " + missing + "/cert.pem\n  tls_key: " + missing + "/key.pem\n" + memory, "tls_cert"},
      {"a pool larger than the host", "memory:\n  max_size: 100 TiB\n" + memory, "more than this host's memory"},
      {"missing direct-mode drives",
       "storage:\n  mode: direct\n  drives:\n    - media: " + missing + "/nvme0\n    - media: " + missing + "/nvme1\n",
       "none of the 2 drive(s) exists"},
      {"a direct-mode drive that is a file", "storage:\n  mode: direct\n  drives:\n    - media: " + regular + "\n",
       "is not a block device"},
      {"a drive file whose directory cannot be made",
       "storage:\n  mode: file\n  drives:\n    - media: " + missing + "/deeper/d0.memkv\n", "does not exist"},
  };
  for (const Case& c : cases) {
    CommandResult r = Check(dir_, c.yaml);
    EXPECT_EQ(r.exit_code, 3) << c.what << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.what << ": " << r.err;
  }
  EXPECT_FALSE(Exists(missing)) << "--check creates nothing";
  EXPECT_FALSE(Exists(dir_.path() + "/data")) << "--check creates nothing";
  // And a good config still passes.
  EXPECT_EQ(Check(dir_, memory).exit_code, 0);
}

TEST_F(CliArgsTest, ConfigNamingNoStorageUsesAFileDriveInTheDataDir) {
  for (const char* yaml : {"", "network:\n  address: 127.0.0.1:9911\n"}) {
    CommandResult r = Check(dir_, yaml);
    ASSERT_EQ(r.exit_code, 0) << "'" << yaml << "': " << r.err;
    EXPECT_NE(r.out.find("storage.mode: file\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("storage.drive: " + dir_.path() + "/data/drive0.memkv\n"), std::string::npos) << r.out;
  }
  // It really serves from that file.
  ServerSpec spec;
  spec.storage_yaml = "  promote_on_read: true\n";  // a storage section that names no storage
  spec.memory_max_size = "32 MiB";
  spec.data_dir = dir_.path() + "/served";
  ServerProcess server;
  Status s = server.Start(spec);
  ASSERT_TRUE(s.ok()) << s.ToString() << server.Stderr();
  EXPECT_TRUE(Exists(spec.data_dir + "/drive0.memkv")) << server.Stderr();
}

TEST_F(CliArgsTest, StartAddressAndPortFlagsOverrideTheConfig) {
  CommandResult r = Check(dir_, "network:\n  address: 0.0.0.0:9900\nstorage:\n  mode: memory\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string config = dir_.path() + "/check.yaml";
  r = RunMemkv({"start", "--check", "--config", config, "--address", "127.0.0.2:9920"}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("network.address: 127.0.0.2:9920\n"), std::string::npos) << r.out;
  r = RunMemkv({"start", "--check", "--config", config, "--port", "9930"}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("network.address: 0.0.0.0:9930\n"), std::string::npos) << r.out;
  EXPECT_EQ(RunMemkv({"start", "--check", "--config", config, "--address", "nohost"}, {}).exit_code, 2);
  EXPECT_EQ(RunMemkv({"start", "--check", "--config", config, "--port", "65535"}, {}).exit_code, 2);

  // A second local server on a port the config does not name.
  ServerSpec spec;
  spec.port = server_->port();  // taken: only the flag lets this one start
  spec.extra_args = {"--address", "127.0.0.1:0"};
  ServerProcess second;
  Status s = second.Start(spec);
  ASSERT_TRUE(s.ok()) << s.ToString() << second.Stderr();
  EXPECT_NE(second.port(), server_->port());
}

// The local addresses (hex, as /proc/net/tcp{,6} print them) of the sockets
// listening on `port`.
std::vector<std::string> ListeningOn(uint16_t port) {
  char port_hex[8];
  std::snprintf(port_hex, sizeof(port_hex), "%04X", port);
  std::vector<std::string> found;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream lines(ReadAll(table));
    std::string line;
    std::getline(lines, line);  // the header
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      const size_t colon = local.find(':');
      if (state == "0A" && colon != std::string::npos && local.substr(colon + 1) == port_hex) {
        found.push_back(local.substr(0, colon));
      }
    }
  }
  return found;
}

// Loopback unless an address is given: an empty config file, and one that
// sets other sections but not network.address, serve this host only, as no
// config does.
TEST_F(CliArgsTest, EmptyAndPartialConfigsListenOnLoopback) {
  for (const char* yaml : {"", "memory:\n  max_size: 16 MiB\n", "network:\n  frame_timeout_ms: 10000\n"}) {
    CommandResult r = Check(dir_, yaml);
    ASSERT_EQ(r.exit_code, 0) << "'" << yaml << "': " << r.err;
    EXPECT_NE(r.out.find("network.address: 127.0.0.1:9900\n"), std::string::npos) << "'" << yaml << "': " << r.out;
  }
  // A real server from a partial config (no network section): its
  // listening socket is bound to 127.0.0.1. The second --config wins over
  // the harness's own, which names an address; --port keeps the config's host.
  const std::string partial = dir_.Write(
      "partial.yaml", std::string("memory:\n  max_size: 16 MiB\n  block_size: 1 MiB\nstorage:\n  mode: memory\n"));
  ServerSpec spec;
  spec.extra_args = {"--config", partial, "--port", "0"};
  ServerProcess server;
  Status s = server.Start(spec);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(server.Stderr().find("serving on 127.0.0.1:" + std::to_string(server.port())), std::string::npos)
      << server.Stderr();
  EXPECT_EQ(ListeningOn(server.port()), std::vector<std::string>{"0100007F"}) << "port " << server.port();
}

// Faulting a pool of gigabytes in takes seconds: start says so before it
// begins, and then how long it took, before it serves.
TEST_F(CliArgsTest, StartSaysItIsFaultingThePoolInBeforeItBegins) {
  ServerSpec spec;
  spec.memory_max_size = "64 MiB";
  ServerProcess server;
  Status s = server.Start(spec);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string err = server.Stderr();
  const size_t preparing = err.find("preparing the 64 MiB DRAM pool: faulting it in (memory.prefault) ...");
  const size_t done = err.find("memory pool faulted in: 64 MiB in ");
  const size_t serving = err.find("serving on ");
  ASSERT_NE(preparing, std::string::npos) << err;
  ASSERT_NE(done, std::string::npos) << err;
  EXPECT_LT(preparing, done) << err;
  EXPECT_LT(done, serving) << err;
}

TEST_F(CliArgsTest, PrometheusDefaultMetricsPathIsServed) {
  const uint16_t admin = server_->AdminPort();
  ASSERT_NE(admin, 0);
  HttpResult scrape = HttpRequestTo(admin, "GET", "/metrics");
  ASSERT_EQ(scrape.status, 200) << scrape.headers << scrape.body;
  EXPECT_NE(scrape.headers.find("text/plain"), std::string::npos) << scrape.headers;
  std::map<std::string, double> samples = PrometheusSamples(scrape.body);
  EXPECT_TRUE(samples.count("memkv_connections_accepted_total")) << scrape.body;
  // The same families as /v1/metrics.
  std::map<std::string, double> v1 = PrometheusSamples(HttpRequestTo(admin, "GET", "/v1/metrics").body);
  ASSERT_FALSE(v1.empty());
  for (const auto& [name, value] : v1) EXPECT_TRUE(samples.count(name)) << name;
}

}  // namespace
}  // namespace memkv::testing
