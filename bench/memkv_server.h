// A `memkv start` process spawned for one benchmark run.
//
// Start() writes a config (127.0.0.1 port 0, the given key, a memory store of
// `pool_bytes` in 2 MiB blocks) into a fresh temporary directory, runs the
// binary with it, and reads the "ready HOST:PORT" line from its stdout
// against a deadline. The server's stderr goes to a file in that directory
// and is quoted when it fails to start. Destruction sends SIGTERM, waits
// (SIGKILL after a grace period) and removes the directory.
//
// Not thread-safe; owned by main.
#ifndef MEMKV_BENCH_MEMKV_SERVER_H_
#define MEMKV_BENCH_MEMKV_SERVER_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "memkv/status.h"

namespace memkv::bench {

class MemkvServer {
 public:
  // `temp_base`: where the temporary directory goes (main passes $TMPDIR).
  static Result<std::unique_ptr<MemkvServer>> Start(const std::string& binary, uint64_t pool_bytes,
                                                    const std::string& auth_key_hex,
                                                    const std::string& temp_base);
  ~MemkvServer();
  MemkvServer(const MemkvServer&) = delete;
  MemkvServer& operator=(const MemkvServer&) = delete;

  const std::string& address() const { return address_; }
  // SIGTERM and wait; the exit status (128+signal if killed, -1 if unknown).
  int Stop();

 private:
  MemkvServer() = default;
  Status Spawn(const std::string& binary, const std::string& config_path);
  Status ReadReadyLine(int stdout_fd);

  std::string dir_;
  std::string stderr_path_;
  pid_t pid_ = -1;
  std::string address_;
};

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_MEMKV_SERVER_H_
