// Test harness for integration tests: real `memkv` processes on loopback.
//
// ServerProcess starts the binary built by this tree (MEMKV_BINARY) with a
// config written to a fresh temporary directory, waits for its "ready
// HOST:PORT" line (polling against a deadline, never sleeping), and stops or
// kills it. RunCommand runs the CLI and captures its output.
#ifndef MEMKV_TESTS_HARNESS_H_
#define MEMKV_TESTS_HARNESS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/temp_dir.h"
#include "memkv/client.h"
#include "memkv/status.h"

namespace memkv::testing {

inline constexpr char kTestKeyHex[] =
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

struct ServerSpec {
  std::string memory_max_size = "256 MiB";
  std::string memory_block_size = "1 MiB";
  // Empty: the config has no network.auth_key, so the server uses (and on
  // first start generates) <data_dir>/auth.key.
  std::string auth_key_hex = kTestKeyHex;
  // Passed as --data-dir; empty: a fresh directory owned by the ServerProcess.
  std::string data_dir;
  std::vector<std::string> extra_args;
  // The config's storage section, indented two spaces per line (e.g.
  // "  mode: file\n  drives:\n    - media: /tmp/x/d0\n"); empty: memory mode.
  std::string storage_yaml;
  // The data port (the admin endpoint is then port + 1); 0: any free port
  // (and any free admin port).
  uint16_t port = 0;
  // The loopback address it listens on (any of 127.0.0.0/8, so several
  // servers can share one port behind one DNS name).
  std::string host = "127.0.0.1";
  // More lines for the network section (e.g. "  tls_cert: /x\n").
  std::string network_yaml;
  // More lines for the memory section (e.g. "  prefault: false\n").
  std::string memory_yaml;
  // More top-level sections, after storage (e.g. "fleet:\n  id: a\n").
  std::string extra_yaml;
};

class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts `memkv start` on 127.0.0.1 port 0 and waits until it is ready.
  Status Start(const ServerSpec& spec = {});
  // SIGTERM, then waits for exit; returns the exit status (or -1).
  int Stop();
  // Waits up to `ms` for the server to exit on its own (no signal sent):
  // its exit code, or -1 if it is still running then.
  int WaitExit(int ms);
  // SIGKILL, no drain.
  void Kill();
  // SIGSTOP / SIGCONT: a server that is alive but does not answer. Pause
  // returns once the process has stopped.
  void Pause();
  void Resume();

  uint16_t port() const { return port_; }
  std::string address() const { return host_ + ":" + std::to_string(port_); }
  const std::string& host() const { return host_; }
  pid_t pid() const { return pid_; }
  // Everything the server wrote on stderr so far.
  std::string Stderr() const;
  // The admin endpoint's port, from the start-up log line; 0 if not found.
  uint16_t AdminPort() const;

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string host_ = "127.0.0.1";
  std::string stderr_path_;
};

// Options for a TCP client of `servers` (in that order) holding kTestKeyHex.
ClientOptions OptionsFor(const std::vector<const ServerProcess*>& servers, uint32_t timeout_ms = 5000);
std::unique_ptr<Client> ClientFor(const std::vector<const ServerProcess*>& servers, uint32_t timeout_ms = 5000);

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs the memkv binary with args and environment (only `env`, plus PATH);
// `stdin_data` is piped to it. Bounded by `timeout_ms` (killed after).
CommandResult RunMemkv(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                       const std::string& stdin_data = "", int timeout_ms = 30000);

// One HTTP/1.1 GET (or any method) to 127.0.0.1:port over plain TCP; the
// status (0 when there was no parsable answer) and the body. Bounded by
// `timeout_ms`.
struct HttpResult {
  int status = 0;
  std::string headers;
  std::string body;
};
HttpResult HttpRequestTo(uint16_t port, const std::string& method, const std::string& path, int timeout_ms = 5000,
                         const std::string& raw_request = "");
// The same to host:port (a loopback address other than 127.0.0.1).
HttpResult HttpRequestToHost(const std::string& host, uint16_t port, const std::string& method,
                             const std::string& path, int timeout_ms = 5000, const std::string& raw_request = "");

// Runs a shell command; its exit code and standard output.
CommandResult RunShell(const std::string& command);

// A storage.mode file spec: `drives` drive files d0.memkv, d1.memkv, ...
// under `dir` of `drive_size` each (created on the first start), extents and
// pool chunks of 1 MiB, a pool of `pool`; `extra_storage` adds lines to the
// storage section.
ServerSpec FileModeSpec(const std::string& dir, int drives, const std::string& drive_size = "128 MiB",
                        const std::string& pool = "32 MiB", const std::string& extra_storage = "");

// The samples of a Prometheus text exposition, keyed by what precedes the
// value ("memkv_requests_total{op=\"put\",transport=\"tcp\"}").
std::map<std::string, double> PrometheusSamples(const std::string& text);

// Deterministic test bytes: value `i` of `size` bytes, seeded by `seed`.
std::vector<uint8_t> Pattern(size_t size, uint64_t seed);
// Fills `out` with a pattern that differs in every 8 bytes, seeded by `seed`:
// cheap enough for values of many GiB.
void FillPattern(std::span<uint8_t> out, uint64_t seed);

// Polls `condition` until true or the deadline; never sleeps longer than 5 ms at a time.
template <typename F>
bool PollUntil(F condition, int timeout_ms);
bool PollUntilImpl(const std::function<bool()>& condition, int timeout_ms);
template <typename F>
bool PollUntil(F condition, int timeout_ms) {
  return PollUntilImpl(std::function<bool()>(condition), timeout_ms);
}

std::string MemkvBinary();

// A data port whose port and port + 1 (the admin endpoint) are free on each
// of `hosts` (loopback addresses), from 10000..32767, below the kernel's
// ephemeral range: no other process's outgoing connection or port-0
// listener takes it while a server using it restarts. 0 if none is free.
uint16_t FreeServerPort(const std::vector<std::string>& hosts = {"127.0.0.1"});

// Raises this process's soft open-files limit to at least `wanted` (never
// past the hard limit, never lowering it): true when it is then at least
// `wanted`. Tests that hold many sockets call it first; a CI shell's soft
// limit may be 1024.
bool RaiseOpenFilesLimit(uint64_t wanted);

}  // namespace memkv::testing

#endif  // MEMKV_TESTS_HARNESS_H_
