// A `memkv start` process spawned for one benchmark run.
//
// Start() writes a config (127.0.0.1 port 0, the given key, a memory store of
// `pool_bytes` with memory.prefault as asked) into a fresh temporary
// directory, runs the binary with it, and reads the "ready HOST:PORT" line
// from its stdout against a deadline. The server's stderr goes to a file in
// that directory and is quoted when it fails to start; the admin endpoint's
// address is read from its "serving on ...; admin endpoint on URL" line.
// Destruction sends SIGTERM, waits (SIGKILL after a grace period) and removes
// the directory.
//
// Not thread-safe; owned by main.
#ifndef MEMKV_BENCH_MEMKV_SERVER_H_
#define MEMKV_BENCH_MEMKV_SERVER_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "memkv/status.h"

namespace memkv::bench {

// What the modes that spawn their own servers need from the environment;
// main fills it (no getenv elsewhere).
struct SpawnEnv {
  std::string memkv_binary;  // --memkv, else beside memkv-bench, else the build tree's
  std::string temp_base;     // $TMPDIR, else /tmp: where the servers' directories go
  std::string path;          // $PATH, to find peers such as redis-server
};

struct MemkvServerConfig {
  uint64_t pool_bytes = 4ULL << 30;  // memory.max_size
  bool prefault = true;              // memory.prefault (the server's default)
  // storage.mode file with one drive file of drive_bytes in the server's
  // directory, storage.sync `sync`; false: storage.mode memory.
  bool file_mode = false;
  std::string sync = "interval";
  uint32_t flush_on_loop_us = 0;  // storage.flush_on_loop_us; 0: not written (the server's default)
  uint64_t drive_bytes = 4ULL << 30;
  std::string extra_yaml;  // more top-level sections (tenants:, ...)
  std::string network_yaml;  // more network: fields, each "  field: value\n" (loads_first, ...)
  int workers = 0;           // memkv start --workers; 0: the server's default
};

// Where the admin endpoint listens.
struct AdminAddress {
  std::string host;
  uint16_t port = 0;
};

// The admin endpoint named in a server's log: the last line with
// "admin endpoint on http://HOST:PORT". NotFound when there is none yet.
Result<AdminAddress> FindAdminAddress(std::string_view log);

class MemkvServer {
 public:
  // `temp_base`: where the temporary directory goes (main passes $TMPDIR).
  static Result<std::unique_ptr<MemkvServer>> Start(const std::string& binary, const MemkvServerConfig& config,
                                                    const std::string& auth_key_hex,
                                                    const std::string& temp_base);
  ~MemkvServer();
  MemkvServer(const MemkvServer&) = delete;
  MemkvServer& operator=(const MemkvServer&) = delete;

  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  // From the server's log; Unavailable (quoting the log's tail) when it never
  // named one.
  const Result<AdminAddress>& admin() const { return admin_; }
  // SIGTERM and wait; the exit status (128+signal if killed, -1 if unknown).
  int Stop();

 private:
  MemkvServer() = default;
  Status Spawn(const std::string& binary, const std::string& config_path, int workers);
  Status ReadReadyLine(int stdout_fd);

  std::string dir_;
  std::string stderr_path_;
  pid_t pid_ = -1;
  std::string address_;
  Result<AdminAddress> admin_ = Unavailable("not started");
};

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_MEMKV_SERVER_H_
