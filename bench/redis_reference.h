// The reference of `memkv-bench --fill`: a redis-server spawned on a free
// loopback port, and the smallest RESP client that can fill it.
//
// RedisServer::Start runs `redis-server --port P --bind 127.0.0.1 --save ''
// --appendonly no` (no maxmemory, nothing written to disk) in a fresh
// temporary directory, its log in a file there, and waits for PING to answer
// against a deadline. Destruction sends SIGTERM, waits and removes the
// directory. Not thread-safe; owned by the fill run.
//
// RespConnection is one blocking RESP2 connection (deadline-bounded socket
// calls, io/socket.h): single commands, and SETs pipelined in batches, which
// stores exactly the keys and values given (redis-benchmark -r repeats keys).
// Used by one thread at a time.
#ifndef MEMKV_BENCH_REDIS_REFERENCE_H_
#define MEMKV_BENCH_REDIS_REFERENCE_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "memkv/status.h"

namespace memkv::bench {

class RedisServer {
 public:
  // `binary`: a redis-server executable. `temp_base`: where its directory goes.
  static Result<std::unique_ptr<RedisServer>> Start(const std::string& binary, const std::string& temp_base);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& version() const { return version_; }  // INFO server's redis_version
  // SIGTERM and wait; the exit status (128+signal if killed, -1 if unknown).
  int Stop();

 private:
  RedisServer() = default;
  Status TryStart(const std::string& binary);

  std::string dir_;
  std::string log_path_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string version_;
};

// One reply: its type byte ('+' simple string, '-' error, ':' integer, '$'
// bulk string) and its text; `null` for a null bulk string.
struct RespReply {
  char type = 0;
  std::string text;
  bool null = false;
};

// Parses one reply at the start of `buffer`. Returns the bytes it took, 0
// when the buffer holds only part of a reply. ProtocolError on anything
// else (arrays included: the commands used here never answer one).
Result<size_t> ParseRespReply(std::string_view buffer, RespReply* reply);

// The value of `name` in INFO's "name:value" lines, or nullopt.
std::optional<std::string> InfoField(std::string_view info, std::string_view name);

// The value of key `i` of a pipelined fill.
using ValueFn = std::function<std::span<const uint8_t>(uint64_t i)>;

class RespConnection {
 public:
  static Result<RespConnection> Connect(uint16_t port);

  // One command; the reply's text. A '-' reply becomes ProtocolError quoting it.
  Result<std::string> Command(const std::vector<std::string_view>& args);
  // SET keys[i] value(i) for every i, up to `batch` commands sent before
  // their replies are read. Returns how many replies were not +OK (the
  // first few are printed on stderr); a broken connection is an error.
  Result<uint64_t> PipelinedSet(std::span<const std::string> keys, const ValueFn& value, uint32_t batch);

 private:
  explicit RespConnection(UniqueFd fd) : fd_(std::move(fd)) {}
  // The next reply, reading more as needed (one deadline for the wait).
  Status ReadReply(RespReply* reply);

  UniqueFd fd_;
  std::string in_;     // received, not yet parsed from in_pos_
  size_t in_pos_ = 0;
};

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_REDIS_REFERENCE_H_
