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
// stores exactly the keys and values given (redis-benchmark -r repeats keys);
// and for the sweep's timed cells (--peer redis) SET and GET of N keys per
// round trip with no copy of large values: a SET is written with writev
// straight from the caller's value, a GET's value is read straight into the
// caller's buffer once its header is parsed. Used by one thread at a time.
#ifndef MEMKV_BENCH_REDIS_REFERENCE_H_
#define MEMKV_BENCH_REDIS_REFERENCE_H_

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/unique_fd.h"
#include "memkv/status.h"

namespace memkv::bench {

class RedisServer {
 public:
  // `binary`: a redis-server executable. `temp_base`: where its directory goes.
  // `appendfsync`: empty, --appendonly no; else --appendonly yes with this
  // --appendfsync (everysec, always), the file in that directory.
  static Result<std::unique_ptr<RedisServer>> Start(const std::string& binary, const std::string& temp_base,
                                                    const std::string& appendfsync = "");
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
  Status TryStart(const std::string& binary, const std::string& appendfsync);

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

// The header line of a reply to GET: "$<n>\r\n" (n value bytes and a CRLF
// follow), "$-1\r\n" (no such key) or "-<error>\r\n".
struct BulkHeader {
  enum class Kind { kValue, kNull, kError };
  Kind kind = Kind::kValue;
  uint64_t length = 0;  // kValue: the value's bytes
  std::string error;    // kError: the error line, without '-'
};

// Parses the header line at the start of `buffer`. Returns the bytes it
// took (the value is not among them), 0 when the line is not complete yet.
// ProtocolError for any other reply type or a bad length.
Result<size_t> ParseBulkHeader(std::string_view buffer, BulkHeader* header);

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

  // SET keys[i] values[i] for every i: all sent (one writev, values not
  // copied), then every reply read. The first reply that is not +OK becomes
  // the error, after all were read.
  Status SetBatch(std::span<const std::string_view> keys, std::span<const std::span<const uint8_t>> values);
  // GET keys[i] into buffers[i] for every i: all sent, then each reply read,
  // its value straight into its buffer; (*sizes)[i] is the value's length.
  // A miss (NotFound), an error reply (ProtocolError) or a value longer than
  // its buffer (TooLarge) becomes the error after every reply was read; a
  // broken connection returns at once.
  Status GetBatchInto(std::span<const std::string_view> keys, std::span<const std::span<uint8_t>> buffers,
                      std::vector<size_t>* sizes);
  Status Set(std::string_view key, std::span<const uint8_t> value);
  Result<size_t> GetInto(std::string_view key, std::span<uint8_t> buffer);

 private:
  explicit RespConnection(UniqueFd fd) : fd_(std::move(fd)) {}
  // The next reply, reading more as needed (one deadline for the wait).
  Status ReadReply(RespReply* reply);
  // Received bytes not parsed yet, and dropping `bytes` of them.
  std::string_view Pending() const;
  void Consume(size_t bytes);
  // Receives up to `max_bytes` more into in_ (waiting until the deadline
  // for the first).
  Status ReceiveMore(size_t max_bytes, Nanos deadline);
  // Reads one GET reply: the header, then the value into `buffer`. The
  // returned Status is a broken connection; *item is this reply's outcome
  // (the value's size, or why there is none), and the stream stays in step.
  Status ReadBulkInto(std::span<uint8_t> buffer, Nanos deadline, Status* item, size_t* size);
  // Consumes `bytes` of the stream (a value that does not fit).
  Status Skip(uint64_t bytes, Nanos deadline);

  UniqueFd fd_;
  std::string in_;     // [in_pos_, in_end_): received, not parsed yet; the rest is room
  size_t in_pos_ = 0;
  size_t in_end_ = 0;
  std::string out_;            // SetBatch / GetBatchInto: the commands' text
  std::vector<size_t> ends_;   // SetBatch: where each command's text ends in out_
  std::vector<iovec> iov_;
};

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_REDIS_REFERENCE_H_
