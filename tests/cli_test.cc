// The `memkv` command as a user drives it: the client verbs against a real
// server (byte-exact binary data, exit codes, one-line errors), `memkv start`
// config validation and --check, auth key generation, and shutdown on SIGTERM.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/unique_fd.h"
#include "cli/commands.h"
#include "proto/messages.h"
#include "tests/harness.h"
#include "tests/shared_server.h"
#include "tests/raw_connection.h"

namespace memkv::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kWrongKeyHex[] = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string AsString(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

// Binary data that a text-mode mistake would damage: every byte value,
// NULs, CR/LF pairs, and no trailing newline.
std::string BinaryData(size_t size, uint64_t seed) {
  std::string data;
  for (int b = 0; b < 256; ++b) data.push_back(static_cast<char>(b));
  data += "\r\n\n\r\0\0\x1a";
  data += AsString(Pattern(size, seed));
  return data;
}

size_t CountLines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

// A TCP port on loopback. Listening: connections complete (into the
// backlog) but nothing ever answers. Not listening: connections are refused.
class DeadPort {
 public:
  explicit DeadPort(bool listening) {
    fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    if (listening) ::listen(fd_.get(), 64);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  UniqueFd fd_;
  uint16_t port_ = 0;
};

class CliTest : public SharedServerTest {
 protected:
  static std::map<std::string, std::string> Env() {
    return {{"MEMKV_SERVERS", server_->address()}, {"MEMKV_AUTH_KEY", kTestKeyHex}};
  }

  TempDir dir_;
};

TEST_F(CliTest, PutFromFileAndStdinGetToStdoutAndFileAreByteExact) {
  const std::string from_file = BinaryData(3 << 20, 1);
  const std::string from_stdin = BinaryData(1 << 20, 2);
  const std::string file = dir_.Write("in.bin", from_file);

  CommandResult r = RunMemkv({"put", "cli/file", file}, Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = RunMemkv({"put", "cli/stdin"}, Env(), from_stdin);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunMemkv({"put", "cli/dash", "-"}, Env(), from_file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunMemkv({"put", "cli/empty"}, Env(), "");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = RunMemkv({"get", "cli/file"}, Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out == from_file) << "stdout differs (" << r.out.size() << " vs " << from_file.size() << " bytes)";
  r = RunMemkv({"get", "cli/dash"}, Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out == from_file);
  r = RunMemkv({"get", "cli/empty"}, Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());

  const std::string out_path = dir_.path() + "/out.bin";
  r = RunMemkv({"get", "cli/stdin", "-o", out_path}, Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << "with -o nothing goes to stdout";
  EXPECT_TRUE(ReadWholeFile(out_path) == from_stdin) << "file differs";
  // -o replaces an existing, longer file.
  r = RunMemkv({"get", "cli/empty", "--output", out_path}, Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(ReadWholeFile(out_path).empty());

  // The library sees exactly what the shell stored.
  auto client = ClientFor({server_});
  Result<std::vector<uint8_t>> got = client->Get("cli/stdin");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(AsString(*got) == from_stdin);
}

TEST_F(CliTest, PutOfAMissingFileFailsWithoutStoring) {
  CommandResult r = RunMemkv({"put", "cli/nofile", dir_.path() + "/does-not-exist"}, Env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("does-not-exist"), std::string::npos) << r.err;
  EXPECT_EQ(RunMemkv({"get", "cli/nofile"}, Env()).exit_code, 1);
}

TEST_F(CliTest, DelExistsAndMissingKeys) {
  ASSERT_EQ(RunMemkv({"put", "cli/a"}, Env(), "A").exit_code, 0);
  ASSERT_EQ(RunMemkv({"put", "cli/c"}, Env(), "C").exit_code, 0);

  CommandResult r = RunMemkv({"exists", "cli/a", "cli/b", "cli/c"}, Env());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "present cli/a\nabsent cli/b\npresent cli/c\n");
  r = RunMemkv({"exists", "cli/a", "cli/c"}, Env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "present cli/a\npresent cli/c\n");

  r = RunMemkv({"get", "cli/b"}, Env());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.back(), '\n');
  EXPECT_NE(r.err.find("cli/b"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
  // -o with a missing key creates no file.
  r = RunMemkv({"get", "cli/b", "-o", dir_.path() + "/never"}, Env());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(std::ifstream(dir_.path() + "/never").good());

  r = RunMemkv({"del", "cli/b"}, Env());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  r = RunMemkv({"del", "cli/a"}, Env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(RunMemkv({"get", "cli/a"}, Env()).exit_code, 1);
  r = RunMemkv({"exists", "cli/a", "cli/c"}, Env());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "absent cli/a\npresent cli/c\n");
}

TEST_F(CliTest, MatchPrefixPrintsTheCountAndTheFirstMiss) {
  ASSERT_EQ(RunMemkv({"put", "cli/m0"}, Env(), "0").exit_code, 0);
  ASSERT_EQ(RunMemkv({"put", "--parent", "cli/m0", "cli/m1"}, Env(), "1").exit_code, 0);
  ASSERT_EQ(RunMemkv({"put", "--parent=cli/m2", "cli/m3"}, Env(), "3").exit_code, 0);

  CommandResult r = RunMemkv({"match-prefix", "cli/m0", "cli/m1", "cli/m2", "cli/m3"}, Env());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "matched 2 of 4\nfirst miss cli/m2\n");
  r = RunMemkv({"match-prefix", "cli/m0", "cli/m1"}, Env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "matched 2 of 2\n");
  r = RunMemkv({"match-prefix", "cli/m2", "cli/m0"}, Env());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "matched 0 of 2\nfirst miss cli/m2\n");
}

TEST_F(CliTest, PutTakesTtlRetentionAndParent) {
  CommandResult r = RunMemkv({"put", "--ttl", "10m", "--retention", "evict_first", "cli/opt"}, Env(), "v");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunMemkv({"get", "cli/opt"}, Env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "v");
  r = RunMemkv({"put", "--ttl=60000", "--retention=normal", "--parent", "cli/opt", "cli/opt2"}, Env(), "w");
  EXPECT_EQ(r.exit_code, 0) << r.err;

  // A bad value names the flag and what it allows, and stores nothing.
  r = RunMemkv({"put", "--retention", "forever", "cli/bad"}, Env(), "x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("normal, pinned, evict_first"), std::string::npos) << r.err;
  r = RunMemkv({"put", "--ttl", "soon", "cli/bad"}, Env(), "x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ttl 'soon'"), std::string::npos) << r.err;
  EXPECT_EQ(RunMemkv({"get", "cli/bad"}, Env()).exit_code, 1);
}

TEST_F(CliTest, UsageErrorsExitTwo) {
  const std::vector<std::vector<std::string>> cases = {
      {"frobnicate"},
      {"get"},
      {"get", "k1", "k2"},
      {"get", "k", "-o"},
      {"del"},
      {"del", "k1", "k2"},
      {"exists"},
      {"match-prefix"},
      {"put"},
      {"put", "--ttl", "5d", "k"},
      {"put", "--retention", "pin", "k"},
      {"put", "--parent=", "k"},
      {"get", "--ttl", "5", "k"},
      {"put", "k", "f1", "f2"},
      {"put", "--bogus", "k"},
      {"get", "-x", "k"},
      {"start", "--config"},
      {"start", "--workers", "zero"},
      {"start", "--log-level", "loud"},
      {"start", "--no-such-flag", "1"},
  };
  for (const auto& args : cases) {
    std::string joined;
    for (const std::string& a : args) joined += a + " ";
    CommandResult r = RunMemkv(args, Env());
    EXPECT_EQ(r.exit_code, 2) << joined << "\nstderr: " << r.err;
    EXPECT_TRUE(r.out.empty()) << joined << "\nstdout: " << r.out;
    EXPECT_EQ(CountLines(r.err), 1u) << joined << "\nstderr: " << r.err;
  }
}

TEST_F(CliTest, BadClientConfigurationExitsThree) {
  const std::vector<std::map<std::string, std::string>> cases = {
      {{"MEMKV_SERVERS", server_->address()}, {"MEMKV_AUTH_KEY", "not-a-key"}},
      {{"MEMKV_SERVERS", server_->address()}, {"MEMKV_AUTH_KEY", "0123"}},
      {{"MEMKV_SERVERS", "nonsense"}, {"MEMKV_AUTH_KEY", kTestKeyHex}},
      {{"MEMKV_SERVERS", server_->address()}, {"MEMKV_AUTH_KEY", kTestKeyHex}, {"MEMKV_TIMEOUT_MS", "soon"}},
      {{"MEMKV_CONFIG", dir_.path() + "/missing.yaml"}},
  };
  for (const auto& env : cases) {
    std::string described;
    for (const auto& [k, v] : env) described += k + "=" + v + " ";
    CommandResult r = RunMemkv({"get", "k"}, env);
    EXPECT_EQ(r.exit_code, 3) << described << "\nstderr: " << r.err;
    EXPECT_FALSE(r.err.empty()) << described;
  }
  CommandResult r = RunMemkv({"get", "k"}, {{"MEMKV_SERVERS", server_->address()}, {"MEMKV_AUTH_KEY", "xyz"}});
  EXPECT_NE(r.err.find("MEMKV_AUTH_KEY"), std::string::npos) << "error does not name the variable: " << r.err;
  EXPECT_EQ(r.err.find("xyz"), std::string::npos) << "the key must not be echoed: " << r.err;
}

TEST_F(CliTest, WrongKeyExitsFiveWithAHint) {
  const std::map<std::string, std::string> env = {{"MEMKV_SERVERS", server_->address()},
                                                  {"MEMKV_AUTH_KEY", kWrongKeyHex}};
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"get", "k"}, {"del", "k"}, {"exists", "k"}}) {
    CommandResult r = RunMemkv(args, env);
    EXPECT_EQ(r.exit_code, 5) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("MEMKV_AUTH_KEY"), std::string::npos) << args[0] << ": no hint in " << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  }
  CommandResult r = RunMemkv({"put", "k"}, env, "value");
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_EQ(RunMemkv({"get", "k"}, Env()).exit_code, 1) << "a put with the wrong key was stored";
}

TEST_F(CliTest, UnreachableServerExitsFourWithinTheTimeout) {
  DeadPort refused(/*listening=*/false);
  DeadPort silent(/*listening=*/true);
  // The hint says what happened: nothing listens, or something listens and
  // never answers.
  const std::pair<const DeadPort*, const char*> cases[] = {{&refused, "memkv start"},
                                                           {&silent, "did not answer in time"}};
  for (const auto& [port, hint] : cases) {
    const std::map<std::string, std::string> env = {
        {"MEMKV_SERVERS", port->address()}, {"MEMKV_AUTH_KEY", kTestKeyHex}, {"MEMKV_TIMEOUT_MS", "300"}};
    Clock::time_point start = Clock::now();
    CommandResult r = RunMemkv({"get", "k"}, env, "", 20000);
    const int64_t ms = MsSince(start);
    EXPECT_EQ(r.exit_code, 4) << port->address() << ": " << r.err;
    EXPECT_LE(ms, 300 + 3000) << "took " << ms << " ms";
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(port->address()), std::string::npos) << "does not name the server: " << r.err;
    EXPECT_NE(r.err.find(hint), std::string::npos) << "no hint: " << r.err;
    r = RunMemkv({"put", "k"}, env, "v", 20000);
    EXPECT_EQ(r.exit_code, 4) << r.err;
  }
}

// A hung server (it accepts, into the backlog, and never answers): the wait
// is MEMKV_CONNECT_TIMEOUT_MS, and the hint names the knob of the deadline
// that passed, the connect one or the operation's.
TEST_F(CliTest, HungServerHintNamesTheDeadlineThatPassed) {
  DeadPort silent(/*listening=*/true);
  struct Case {
    std::map<std::string, std::string> timeouts;
    const char* knob;
    const char* other;
  };
  const Case cases[] = {
      {{{"MEMKV_CONNECT_TIMEOUT_MS", "300"}}, "MEMKV_CONNECT_TIMEOUT_MS sets the wait", "MEMKV_TIMEOUT_MS"},
      {{{"MEMKV_CONNECT_TIMEOUT_MS", "60000"}, {"MEMKV_TIMEOUT_MS", "300"}}, "MEMKV_TIMEOUT_MS sets the wait",
       "MEMKV_CONNECT_TIMEOUT_MS"},
  };
  for (const Case& c : cases) {
    std::map<std::string, std::string> env = {{"MEMKV_SERVERS", silent.address()}, {"MEMKV_AUTH_KEY", kTestKeyHex}};
    env.insert(c.timeouts.begin(), c.timeouts.end());
    Clock::time_point start = Clock::now();
    CommandResult r = RunMemkv({"get", "k"}, env, "", 20000);
    const int64_t ms = MsSince(start);
    EXPECT_EQ(r.exit_code, 4) << r.err;
    // Well under the 2 s connect wait of the default: the variable is honoured.
    EXPECT_LT(ms, 1800) << "took " << ms << " ms: " << r.err;
    EXPECT_NE(r.err.find(c.knob), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(c.other), std::string::npos) << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  }
  CommandResult r = RunMemkv(
      {"get", "k"},
      {{"MEMKV_SERVERS", silent.address()}, {"MEMKV_AUTH_KEY", kTestKeyHex}, {"MEMKV_CONNECT_TIMEOUT_MS", "soon"}});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("MEMKV_CONNECT_TIMEOUT_MS"), std::string::npos) << r.err;
}

TEST_F(CliTest, ClientConfigFileIsUsedAndVariablesOverrideIt) {
  DeadPort refused(/*listening=*/false);
  const std::string config = dir_.Write(
      "client.yaml", "servers:\n  - " + server_->address() + "\nauth_key: " + kTestKeyHex + "\ntimeout_ms: 2000\n");
  CommandResult r = RunMemkv({"put", "cli/from-config"}, {{"MEMKV_CONFIG", config}}, "via config");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunMemkv({"get", "cli/from-config"}, {{"MEMKV_CONFIG", config}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "via config");
  // The variable wins over the file's field.
  r = RunMemkv({"get", "cli/from-config"}, {{"MEMKV_CONFIG", config}, {"MEMKV_SERVERS", refused.address()}});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  r = RunMemkv({"get", "cli/from-config"}, {{"MEMKV_CONFIG", config}, {"MEMKV_AUTH_KEY", kWrongKeyHex}});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  // A config file with a problem is a configuration error naming the field.
  const std::string bad = dir_.Write(
      "bad-client.yaml", "servers: [" + server_->address() + "]\nauth_key: " + kTestKeyHex + "\ntimeout_ms: soon\n");
  r = RunMemkv({"get", "cli/from-config"}, {{"MEMKV_CONFIG", bad}});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("timeout_ms"), std::string::npos) << r.err;
}

TEST_F(CliTest, WithoutConfigurationTheVerbsUseTheKeyInHome) {
  // A server that generated its key in $HOME/.memkv, as `memkv start` does by default.
  const std::string home = dir_.path() + "/home";
  ServerSpec spec;
  spec.auth_key_hex = "";
  spec.data_dir = home + "/.memkv";
  ServerProcess local;
  Status s = local.Start(spec);
  ASSERT_TRUE(s.ok()) << s.ToString();
  // Only the address is given (the default 127.0.0.1:9900 may be taken on a
  // test machine); the key comes from $HOME/.memkv/auth.key.
  const std::map<std::string, std::string> env = {{"HOME", home}, {"MEMKV_SERVERS", local.address()}};
  CommandResult r = RunMemkv({"put", "cli/home"}, env, "from home");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunMemkv({"get", "cli/home"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "from home");
  // With no key file there, the error says how to provide one.
  r = RunMemkv({"get", "cli/home"}, {{"HOME", dir_.path() + "/empty-home"}, {"MEMKV_SERVERS", local.address()}});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("MEMKV_AUTH_KEY"), std::string::npos) << r.err;
}

TEST_F(CliTest, ValueLargerThanTheServersPoolExitsSix) {
  ServerProcess small;
  ServerSpec spec;
  spec.memory_max_size = "4 MiB";
  Status s = small.Start(spec);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::map<std::string, std::string> env = {{"MEMKV_SERVERS", small.address()}, {"MEMKV_AUTH_KEY", kTestKeyHex}};
  const std::string file = dir_.Write("five.bin", AsString(Pattern(5 << 20, 1)));
  CommandResult r = RunMemkv({"put", "cli/too-large", file}, env);
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("4 MiB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("5 MiB"), std::string::npos) << r.err;
  EXPECT_EQ(RunMemkv({"get", "cli/too-large"}, env).exit_code, 1);
}

// Past the 256 MiB that put once stopped at: a file (mapped, not copied) and
// the same bytes on standard input, each read back byte-exact.
TEST_F(CliTest, PutTakesValuesPast256MiBFromAFileAndFromStandardInput) {
  ServerProcess big;
  ServerSpec spec;
  spec.memory_max_size = "1 GiB";
  spec.memory_block_size = "2 MiB";
  spec.memory_yaml = "  prefault: false\n";
  Status s = big.Start(spec);
  ASSERT_TRUE(s.ok()) << s.ToString() << big.Stderr();
  const std::map<std::string, std::string> env = {{"MEMKV_SERVERS", big.address()}, {"MEMKV_AUTH_KEY", kTestKeyHex},
                                                  {"MEMKV_TIMEOUT_MS", "120000"}};
  const std::string data = AsString(Pattern((300 << 20) + 3, 11));
  const std::string file = dir_.Write("big.bin", data);
  CommandResult r = RunMemkv({"put", "cli/big-file", file}, env, "", 120000);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunMemkv({"put", "cli/big-stdin"}, env, data, 120000);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* key : {"cli/big-file", "cli/big-stdin"}) {
    const std::string out = dir_.path() + "/out.bin";
    r = RunMemkv({"get", key, "-o", out}, env, "", 120000);
    ASSERT_EQ(r.exit_code, 0) << key << ": " << r.err;
    const std::string got = ReadWholeFile(out);
    EXPECT_EQ(got.size(), data.size()) << key;
    EXPECT_TRUE(got == data) << key << ": bytes differ";
  }
}

// Standard input larger than the server's memory.max_value_size: the client
// refuses it before sending, naming the limit; nothing is stored.
TEST_F(CliTest, StandardInputPastTheServersValueLimitExitsSixNamingIt) {
  ServerProcess small;
  ServerSpec spec;
  spec.memory_max_size = "16 MiB";
  spec.memory_yaml = "  max_value_size: 1 MiB\n";
  Status s = small.Start(spec);
  ASSERT_TRUE(s.ok()) << s.ToString() << small.Stderr();
  const std::map<std::string, std::string> env = {{"MEMKV_SERVERS", small.address()}, {"MEMKV_AUTH_KEY", kTestKeyHex}};
  CommandResult r = RunMemkv({"put", "cli/over"}, env, AsString(Pattern((1 << 20) + 1, 4)));
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("1048577"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("max_value_size"), std::string::npos) << r.err;
  EXPECT_EQ(RunMemkv({"get", "cli/over"}, env).exit_code, 1);
  EXPECT_EQ(RunMemkv({"put", "cli/at-limit"}, env, AsString(Pattern(1 << 20, 4))).exit_code, 0);
}

TEST_F(CliTest, StartWithAnInvalidConfigNamesEveryProblemAndExitsThree) {
  const std::string bad = dir_.Write("bad.yaml",
                                     "network:\n"
                                     "  address: 127.0.0.1:0\n"
                                     "  tls_cert: /etc/memkv/cert.pem\n"
                                     "  colour: blue\n"
                                     "memory:\n"
                                     "  block_size: 3 MiB\n"
                                     "storage:\n"
                                     "  mode: memory\n");
  CommandResult r = RunMemkv({"start", "--config", bad, "--data-dir", dir_.path() + "/data"}, {});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.out.find("ready"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("network.colour"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("memory.block_size"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("3 MiB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("network.tls_key"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad.yaml"), std::string::npos) << "does not name the file: " << r.err;
  // --check validates the same way.
  r = RunMemkv({"start", "--config", bad, "--check", "--data-dir", dir_.path() + "/data"}, {});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  // A missing file is a configuration error too.
  r = RunMemkv({"start", "--config", dir_.path() + "/nope.yaml"}, {});
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

TEST_F(CliTest, CheckPrintsTheEffectiveSettingsAndNeverTheKey) {
  const std::string config =
      dir_.Write("good.yaml", std::string("network:\n  address: 127.0.0.1:0\n  auth_key: ") + kTestKeyHex +
                                  "\nmemory:\n  max_size: 16 MiB\n  block_size: 1 MiB\n"
                                  "storage:\n  mode: memory\n");
  CommandResult r = RunMemkv({"start", "--config", config, "--check", "--data-dir", dir_.path() + "/data"}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("network.address: 127.0.0.1:0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory.max_size: 16 MiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory.block_size: 1 MiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("storage.mode: memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("network.auth_key:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(kTestKeyHex), std::string::npos) << "the key was printed";
  EXPECT_EQ(r.err.find(kTestKeyHex), std::string::npos) << "the key was logged";
  EXPECT_EQ(r.out.find("ready"), std::string::npos) << "--check started serving";
}

TEST_F(CliTest, EmbeddedDefaultIsFileModeUnderTheDataDir) {
  if (::access("/etc/memkv/config.yaml", F_OK) == 0) GTEST_SKIP() << "/etc/memkv/config.yaml exists on this host";
  const std::string data_dir = dir_.path() + "/embedded";
  CommandResult r = RunMemkv({"start", "--check", "--data-dir", data_dir}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("network.address: 127.0.0.1:9900"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("storage.mode: file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("storage.drive: " + data_dir + "/drive0.memkv"), std::string::npos) << r.out;
  EXPECT_NE(::access(data_dir.c_str(), F_OK), 0) << "--check created the data directory";
}

TEST_F(CliTest, CheckWithoutAKeyCreatesNothing) {
  const std::string config = dir_.Write("nokey.yaml", "network:\n  address: 127.0.0.1:0\nstorage:\n  mode: memory\n");
  const std::string data_dir = dir_.path() + "/check-only";
  CommandResult r = RunMemkv({"start", "--config", config, "--check", "--data-dir", data_dir}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(data_dir + "/auth.key (generated on first start)"), std::string::npos) << r.out;
  struct stat st{};
  EXPECT_NE(::stat(data_dir.c_str(), &st), 0) << "--check created " << data_dir;
}

TEST_F(CliTest, StartWithoutAKeyGeneratesOneAndReusesIt) {
  const std::string data_dir = dir_.path() + "/fresh/data";
  const std::string key_path = data_dir + "/auth.key";
  ServerSpec spec;
  spec.auth_key_hex = "";
  spec.data_dir = data_dir;

  ServerProcess first;
  Status s = first.Start(spec);
  ASSERT_TRUE(s.ok()) << s.ToString();
  struct stat st {};
  ASSERT_EQ(::stat(key_path.c_str(), &st), 0) << key_path << " was not created\n" << first.Stderr();
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string content = ReadWholeFile(key_path);
  std::string key = content;
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
  ASSERT_EQ(key.size(), 64u) << "'" << content << "'";
  EXPECT_TRUE(std::all_of(key.begin(), key.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }));
  EXPECT_NE(key, kTestKeyHex);
  const std::string log = first.Stderr();
  EXPECT_NE(log.find(key_path), std::string::npos) << log;
  EXPECT_NE(log.find("MEMKV_AUTH_KEY"), std::string::npos) << log;
  EXPECT_EQ(log.find(key), std::string::npos) << "the key was logged";

  // A client holding the generated key works, through the library and the shell.
  ClientOptions o = OptionsFor({&first});
  o.auth_key_hex = key;
  auto client = Client::Create(o);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Put("gen/k", Pattern(100, 1)).ok());
  const std::map<std::string, std::string> env = {{"MEMKV_SERVERS", first.address()}, {"MEMKV_AUTH_KEY", key}};
  CommandResult r = RunMemkv({"get", "gen/k"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out == AsString(Pattern(100, 1)));
  EXPECT_EQ(RunMemkv({"get", "gen/k"}, {{"MEMKV_SERVERS", first.address()}, {"MEMKV_AUTH_KEY", kTestKeyHex}}).exit_code,
            5);
  EXPECT_EQ(first.Stop(), 0);

  // The second start reuses the file as it is.
  ServerProcess second;
  s = second.Start(spec);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(ReadWholeFile(key_path), content);
  o = OptionsFor({&second});
  o.auth_key_hex = key;
  client = Client::Create(o);
  ASSERT_TRUE(client.ok());
  EXPECT_TRUE((*client)->Put("gen/k2", Pattern(10, 2)).ok());
  EXPECT_EQ(second.Stop(), 0);
}

TEST_F(CliTest, StartRefusesAKeyFileReadableByOthers) {
  const std::string data_dir = dir_.path() + "/loose";
  ::mkdir(data_dir.c_str(), 0700);
  const std::string key_path = dir_.Write("loose/auth.key", std::string(kTestKeyHex) + "\n");
  ASSERT_EQ(::chmod(key_path.c_str(), 0644), 0);
  const std::string config = dir_.Write("nokey.yaml",
                                        "network:\n  address: 127.0.0.1:0\nmemory:\n  max_size: 16 MiB\n"
                                        "  block_size: 1 MiB\nstorage:\n  mode: memory\n");
  CommandResult r = RunMemkv({"start", "--config", config, "--data-dir", data_dir}, {}, "", 20000);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("chmod 600"), std::string::npos) << r.err;
}

TEST_F(CliTest, LogLinesCarryLevelTimeAndComponentAndNeverTheKey) {
  ServerProcess server;
  ServerSpec spec;
  spec.extra_args = {"--log-level", "debug"};
  spec.storage_yaml = "  mode: file\n  block_size: 1 MiB\n  drives:\n    - {media: " + dir_.path() +
                      "/log-d0.memkv, size: 64 MiB}\n";
  ASSERT_TRUE(server.Start(spec).ok());
  auto client = ClientFor({&server});
  ASSERT_TRUE(client->Put("k", Pattern(10, 1)).ok());
  ClientOptions wrong = OptionsFor({&server});
  wrong.auth_key_hex = std::string(64, 'e');
  auto intruder = std::move(Client::Create(wrong)).value();
  EXPECT_EQ(intruder->Put("x", Pattern(10, 1)).code(), StatusCode::kAuthFailed);
  EXPECT_EQ(server.Stop(), 0);
  const std::string err = server.Stderr();
  EXPECT_EQ(err.find(kTestKeyHex), std::string::npos) << "the auth key was logged:\n" << err;
  EXPECT_EQ(err.find(std::string(64, 'e')), std::string::npos) << "a client's key was logged";
  // Every line: 2026-11-23T16:57:03.271Z LEVEL [component] message.
  size_t start = 0, lines = 0, tagged = 0;
  while (start < err.size()) {
    size_t end = err.find('\n', start);
    const std::string line = err.substr(start, end - start);
    start = end == std::string::npos ? err.size() : end + 1;
    if (line.empty()) continue;
    ++lines;
    ASSERT_GE(line.size(), 31u) << line;
    EXPECT_EQ(line[4], '-') << line;
    EXPECT_EQ(line[10], 'T') << line;
    EXPECT_EQ(line[23], 'Z') << line;
    const std::string level = line.substr(25, 5);
    EXPECT_TRUE(level == "DEBUG" || level == "INFO " || level == "WARN " || level == "ERROR") << line;
    tagged += line.find(" [drive] ") != std::string::npos || line.find(" [start] ") != std::string::npos ||
              line.find(" [server] ") != std::string::npos;
  }
  EXPECT_GT(lines, 5u);
  EXPECT_GT(tagged, 3u) << err;
  EXPECT_NE(err.find("WARN  [server] closing connection"), std::string::npos) << err;
}

TEST_F(CliTest, LogLevelComesFromTheConfigUnlessTheFlagSaysOtherwise) {
  ServerProcess quiet;
  ServerSpec spec;
  spec.network_yaml = "";
  spec.storage_yaml = "  mode: memory\nlog:\n  level: warn\n";
  ASSERT_TRUE(quiet.Start(spec).ok());
  EXPECT_EQ(quiet.Stop(), 0);
  EXPECT_EQ(quiet.Stderr().find("INFO"), std::string::npos) << quiet.Stderr();
  ServerProcess loud;
  spec.extra_args = {"--log-level", "info"};
  ASSERT_TRUE(loud.Start(spec).ok());
  EXPECT_EQ(loud.Stop(), 0);
  EXPECT_NE(loud.Stderr().find("INFO"), std::string::npos) << loud.Stderr();
}

TEST_F(CliTest, SigtermStopsAnIdleServerWithExitZero) {
  ServerProcess server;
  Status s = server.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto client = ClientFor({&server});
  ASSERT_TRUE(client->Put("k", Pattern(10, 1)).ok());  // an idle pooled connection stays open
  Clock::time_point start = Clock::now();
  EXPECT_EQ(server.Stop(), 0) << server.Stderr();
  EXPECT_LE(MsSince(start), 10000);
  EXPECT_NE(server.Stderr().find("SIGTERM"), std::string::npos) << server.Stderr();
}

TEST_F(CliTest, SigintStopsTheServerWithExitZero) {
  ServerProcess server;
  Status s = server.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(::kill(server.pid(), SIGINT), 0);
  ASSERT_TRUE(PollUntil([&] { return server.Stderr().find("stopped") != std::string::npos; }, 10000))
      << server.Stderr();
  EXPECT_NE(server.Stderr().find("SIGINT"), std::string::npos) << server.Stderr();
  // SIGINT alone ends the process: no second signal is sent.
  EXPECT_EQ(server.WaitExit(20000), 0) << server.Stderr();
}

TEST_F(CliTest, SigtermWithAClientMidStreamExitsZero) {
  ServerProcess server;
  Status s = server.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();

  // A writer streaming large values as fast as it can.
  std::atomic<bool> stop{false};
  std::atomic<int> puts_ok{0};
  Status last;
  std::thread writer([&] {
    auto client = ClientFor({&server});
    const std::vector<uint8_t> value = Pattern(8 << 20, 9);
    while (!stop.load()) {
      Status put = client->Put("stream/" + std::to_string(puts_ok.load() % 8), value);
      if (!put.ok()) {
        last = put;
        return;
      }
      puts_ok.fetch_add(1);
    }
  });
  // And a peer that sent half a frame and went quiet.
  auto raw = RawConnection::Open(server.port());
  ASSERT_TRUE(raw.ok());
  auto hello = (*raw)->Handshake(kTestKeyHex);
  ASSERT_TRUE(hello.ok() && hello->header.status == StatusCode::kOk);
  std::vector<uint8_t> frame = (*raw)->BuildFrame(proto::Opcode::kPut, "half", Pattern(1 << 20, 3), 1);
  frame.resize(frame.size() / 2);
  ASSERT_TRUE((*raw)->SendBytes(frame).ok());

  ASSERT_TRUE(PollUntil([&] { return puts_ok.load() >= 3; }, 30000));
  Clock::time_point start = Clock::now();
  const int code = server.Stop();
  const int64_t ms = MsSince(start);
  stop.store(true);
  writer.join();
  EXPECT_EQ(code, 0) << server.Stderr();
  EXPECT_LE(ms, 10000) << "shutdown took " << ms << " ms";
  // The writer, if it was cut off, was told so with an outage error.
  EXPECT_TRUE(last.ok() || last.code() == StatusCode::kUnavailable || last.code() == StatusCode::kDeadlineExceeded)
      << last.ToString();
}

}  // namespace
}  // namespace memkv::testing
