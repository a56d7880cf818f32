#include "bench/redis_reference.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/clock.h"
#include "base/parse_number.h"
#include "bench/process.h"
#include "io/socket.h"

namespace memkv::bench {
namespace {

constexpr int kReadyTimeoutMs = 15000;
constexpr int kConnectRetryMs = 20;  // poll interval while redis-server starts
constexpr int kStopGraceMs = 10000;
constexpr int kStartAttempts = 3;    // a free port found by binding may be taken before redis binds it
constexpr Nanos kCommandTimeoutNs = Nanos(120) * 1'000'000'000;  // INFO after a GiB fill, a batch of 2 MiB SETs
constexpr size_t kReadChunkBytes = 64 * 1024;
// GET values of at least this size are read straight into the caller's
// buffer: the header is received alone. Smaller ones are received many
// replies per recv and copied out, which costs less than a recv each.
constexpr uint64_t kDirectValueBytes = 16 * 1024;
constexpr std::string_view kCrlf = "\r\n";
constexpr size_t kLogShownBytes = 3000;
constexpr uint64_t kFailuresShown = 5;

std::string ReadLogTail(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  return text.size() > kLogShownBytes ? "..." + text.substr(text.size() - kLogShownBytes) : text;
}

Result<uint16_t> FreeLoopbackPort() {
  MEMKV_ASSIGN_OR_RETURN(UniqueFd fd, io::ListenTcp("127.0.0.1", 0, 1));
  return io::LocalPort(fd.get());
}

// "$<n>\r\n" or "*<n>\r\n" style length line of a request.
std::string Length(char type, size_t n) { return type + std::to_string(n) + "\r\n"; }

bool Exited(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == pid;
}

}  // namespace

// ---- RESP parsing ----

Result<size_t> ParseRespReply(std::string_view buffer, RespReply* reply) {
  const size_t eol = buffer.find("\r\n");
  if (eol == std::string_view::npos) return size_t{0};
  if (eol == 0) return ProtocolError("RESP: empty reply line");
  const char type = buffer[0];
  const std::string_view line = buffer.substr(1, eol - 1);
  reply->type = type;
  reply->null = false;
  switch (type) {
    case '+':
    case '-':
    case ':':
      reply->text = std::string(line);
      return eol + 2;
    case '$': {
      if (line == "-1") {
        reply->null = true;
        reply->text.clear();
        return eol + 2;
      }
      const uint64_t n = ParseDecimal(line).value_or(UINT64_MAX);
      if (n > (uint64_t{512} << 20)) {
        return ProtocolError("RESP: bad bulk length '" + std::string(line) + "'");
      }
      if (buffer.size() < eol + 2 + n + 2) return size_t{0};
      if (buffer.substr(eol + 2 + n, 2) != "\r\n") return ProtocolError("RESP: bulk string not ended by CRLF");
      reply->text = std::string(buffer.substr(eol + 2, n));
      return eol + 2 + n + 2;
    }
    default:
      return ProtocolError(std::string("RESP: unexpected reply type '") + type + "'");
  }
}

Result<size_t> ParseBulkHeader(std::string_view buffer, BulkHeader* header) {
  const size_t eol = buffer.find(kCrlf);
  if (eol == std::string_view::npos) return size_t{0};
  if (eol == 0) return ProtocolError("RESP: empty reply line where GET's reply was expected");
  const std::string_view line = buffer.substr(1, eol - 1);
  if (buffer[0] == '-') {
    header->kind = BulkHeader::Kind::kError;
    header->error = std::string(line);
    return eol + 2;
  }
  if (buffer[0] != '$') {
    return ProtocolError(std::string("RESP: reply type '") + buffer[0] + "' where GET's bulk string was expected");
  }
  if (line == "-1") {
    header->kind = BulkHeader::Kind::kNull;
    return eol + 2;
  }
  const uint64_t n = ParseDecimal(line).value_or(UINT64_MAX);
  if (n > (uint64_t{512} << 20)) {
    return ProtocolError("RESP: bad bulk length '" + std::string(line) + "'");
  }
  header->kind = BulkHeader::Kind::kValue;
  header->length = n;
  return eol + 2;
}

std::optional<std::string> InfoField(std::string_view info, std::string_view name) {
  size_t start = 0;
  while (start < info.size()) {
    size_t end = info.find('\n', start);
    if (end == std::string_view::npos) end = info.size();
    std::string_view line = info.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > name.size() && line.substr(0, name.size()) == name && line[name.size()] == ':') {
      return std::string(line.substr(name.size() + 1));
    }
    start = end + 1;
  }
  return std::nullopt;
}

// ---- RespConnection ----

Result<RespConnection> RespConnection::Connect(uint16_t port) {
  MEMKV_ASSIGN_OR_RETURN(UniqueFd fd, io::ConnectTcp("127.0.0.1", port, MonotonicNanos() + kCommandTimeoutNs));
  return RespConnection(std::move(fd));
}

std::string_view RespConnection::Pending() const {
  return std::string_view(in_).substr(in_pos_, in_end_ - in_pos_);
}

void RespConnection::Consume(size_t bytes) {
  in_pos_ += bytes;
  if (in_pos_ == in_end_) in_pos_ = in_end_ = 0;
}

Status RespConnection::ReceiveMore(size_t max_bytes, Nanos deadline) {
  if (in_pos_ > 0) {  // what is pending moves to the front
    std::memmove(in_.data(), in_.data() + in_pos_, in_end_ - in_pos_);
    in_end_ -= std::exchange(in_pos_, 0);
  }
  if (in_.size() < in_end_ + max_bytes) in_.resize(in_end_ + max_bytes);  // grows once, not per call
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), in_.data() + in_end_, max_bytes, 0);
    if (n > 0) {
      in_end_ += static_cast<size_t>(n);
      return Status::Ok();
    }
    if (n == 0) return Unavailable("redis closed the connection");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Unavailable(std::string("recv from redis: ") + std::strerror(errno));
    }
    pollfd p{fd_.get(), POLLIN, 0};
    const Nanos left_ms = (deadline - MonotonicNanos()) / 1'000'000;
    if (left_ms <= 0 || ::poll(&p, 1, static_cast<int>(left_ms)) == 0) {
      return DeadlineExceeded("no reply from redis within " + std::to_string(kCommandTimeoutNs / 1'000'000'000) +
                              " s");
    }
  }
}

Status RespConnection::ReadReply(RespReply* reply) {
  const Nanos deadline = MonotonicNanos() + kCommandTimeoutNs;
  for (;;) {
    MEMKV_ASSIGN_OR_RETURN(size_t used, ParseRespReply(Pending(), reply));
    if (used > 0) {
      Consume(used);
      return Status::Ok();
    }
    MEMKV_RETURN_IF_ERROR(ReceiveMore(kReadChunkBytes, deadline));
  }
}

Status RespConnection::Skip(uint64_t bytes, Nanos deadline) {
  for (;;) {
    const uint64_t from_in = std::min<uint64_t>(bytes, Pending().size());
    Consume(from_in);
    bytes -= from_in;
    if (bytes == 0) return Status::Ok();
    MEMKV_RETURN_IF_ERROR(ReceiveMore(std::min<uint64_t>(bytes, kReadChunkBytes), deadline));
  }
}

Status RespConnection::ReadBulkInto(std::span<uint8_t> buffer, Nanos deadline, Status* item, size_t* size) {
  BulkHeader header;
  for (;;) {
    MEMKV_ASSIGN_OR_RETURN(size_t used, ParseBulkHeader(Pending(), &header));
    if (used > 0) {
      Consume(used);
      break;
    }
    // For a large value, ask for no more than its header ("$<n>\r\n"), so
    // the value lands in `buffer` rather than in in_.
    const size_t have = Pending().size();
    const size_t header_bytes = std::to_string(buffer.size()).size() + 3;
    const size_t want = buffer.size() >= kDirectValueBytes && have < header_bytes ? header_bytes - have
                                                                                   : kReadChunkBytes;
    MEMKV_RETURN_IF_ERROR(ReceiveMore(want, deadline));
  }
  *size = 0;
  if (header.kind == BulkHeader::Kind::kError) {
    *item = ProtocolError("redis GET: " + header.error);
    return Status::Ok();
  }
  if (header.kind == BulkHeader::Kind::kNull) {
    *item = NotFound("redis GET: no such key");
    return Status::Ok();
  }
  if (header.length > buffer.size()) {
    *item = TooLarge("redis GET: a value of " + std::to_string(header.length) + " bytes for a buffer of " +
                     std::to_string(buffer.size()));
    return Skip(header.length + 2, deadline);
  }
  // What came with the header is copied; the rest is received in place.
  const size_t length = header.length;
  const size_t from_in = std::min(length, Pending().size());
  std::memcpy(buffer.data(), Pending().data(), from_in);
  Consume(from_in);
  char crlf[2] = {0, 0};
  const size_t crlf_from_in = std::min<size_t>(2, Pending().size());
  std::memcpy(crlf, Pending().data(), crlf_from_in);
  Consume(crlf_from_in);
  iovec rest[2] = {{buffer.data() + from_in, length - from_in}, {crlf + crlf_from_in, 2 - crlf_from_in}};
  MEMKV_RETURN_IF_ERROR(io::RecvAll(fd_.get(), std::span<iovec>(rest, 2), deadline));
  if (std::string_view(crlf, 2) != kCrlf) return ProtocolError("RESP: bulk string not ended by CRLF");
  *size = length;
  *item = Status::Ok();
  return Status::Ok();
}

Result<std::string> RespConnection::Command(const std::vector<std::string_view>& args) {
  std::string request = Length('*', args.size());
  for (std::string_view a : args) request += Length('$', a.size()) + std::string(a) + "\r\n";
  iovec v{request.data(), request.size()};
  MEMKV_RETURN_IF_ERROR(io::SendAll(fd_.get(), std::span<iovec>(&v, 1), MonotonicNanos() + kCommandTimeoutNs));
  RespReply reply;
  MEMKV_RETURN_IF_ERROR(ReadReply(&reply));
  if (reply.type == '-') {
    return ProtocolError("redis " + std::string(args.empty() ? "" : args[0]) + ": " + reply.text);
  }
  return reply.text;
}

Result<uint64_t> RespConnection::PipelinedSet(std::span<const std::string> keys, const ValueFn& value,
                                              uint32_t batch) {
  static constexpr std::string_view kSetHead = "*3\r\n$3\r\nSET\r\n";
  uint64_t failed = 0;
  std::vector<std::string> lengths;
  std::vector<iovec> iov;
  for (size_t first = 0; first < keys.size();) {
    const size_t count = std::min<size_t>(batch, keys.size() - first);
    lengths.clear();
    iov.clear();
    for (size_t i = first; i < first + count; ++i) {  // two length lines per command, kept alive for the send
      lengths.push_back(Length('$', keys[i].size()));
      lengths.push_back(std::string(kCrlf) + Length('$', value(i).size()));
    }
    for (size_t j = 0; j < count; ++j) {
      const std::span<const uint8_t> v = value(first + j);
      const std::string& key = keys[first + j];
      iov.push_back({const_cast<char*>(kSetHead.data()), kSetHead.size()});  // sendmsg only reads
      iov.push_back({lengths[2 * j].data(), lengths[2 * j].size()});
      iov.push_back({const_cast<char*>(key.data()), key.size()});
      iov.push_back({lengths[2 * j + 1].data(), lengths[2 * j + 1].size()});
      iov.push_back({const_cast<uint8_t*>(v.data()), v.size()});
      iov.push_back({const_cast<char*>(kCrlf.data()), kCrlf.size()});
    }
    MEMKV_RETURN_IF_ERROR(io::SendAll(fd_.get(), iov, MonotonicNanos() + kCommandTimeoutNs));
    RespReply reply;
    for (size_t j = 0; j < count; ++j) {
      MEMKV_RETURN_IF_ERROR(ReadReply(&reply));
      if (reply.type == '+' && reply.text == "OK") continue;
      if (failed++ < kFailuresShown) {
        std::fprintf(stderr, "error: redis SET '%s': %c%s\n", keys[first + j].c_str(), reply.type,
                     reply.text.c_str());
      }
    }
    first += count;
  }
  return failed;
}

Status RespConnection::SetBatch(std::span<const std::string_view> keys,
                                std::span<const std::span<const uint8_t>> values) {
  if (keys.size() != values.size()) return InvalidArgument("SetBatch: keys and values differ in number");
  // Per command: its text up to the value's length line, the value, CRLF.
  out_.clear();
  ends_.clear();
  for (size_t i = 0; i < keys.size(); ++i) {
    out_ += "*3\r\n$3\r\nSET\r\n";
    out_ += Length('$', keys[i].size());
    out_ += keys[i];
    out_ += kCrlf;
    out_ += Length('$', values[i].size());
    ends_.push_back(out_.size());
  }
  iov_.clear();
  size_t start = 0;
  for (size_t i = 0; i < keys.size(); ++i) {  // out_ no longer grows: its pointers hold
    iov_.push_back({out_.data() + start, ends_[i] - start});
    iov_.push_back({const_cast<uint8_t*>(values[i].data()), values[i].size()});  // sendmsg only reads
    iov_.push_back({const_cast<char*>(kCrlf.data()), kCrlf.size()});
    start = ends_[i];
  }
  MEMKV_RETURN_IF_ERROR(io::SendAll(fd_.get(), iov_, MonotonicNanos() + kCommandTimeoutNs));
  Status first_failure;
  RespReply reply;
  for (size_t i = 0; i < keys.size(); ++i) {
    MEMKV_RETURN_IF_ERROR(ReadReply(&reply));
    if ((reply.type != '+' || reply.text != "OK") && first_failure.ok()) {
      first_failure = ProtocolError("redis SET '" + std::string(keys[i]) + "': " + reply.type + reply.text);
    }
  }
  return first_failure;
}

Status RespConnection::GetBatchInto(std::span<const std::string_view> keys,
                                    std::span<const std::span<uint8_t>> buffers, std::vector<size_t>* sizes) {
  if (keys.size() != buffers.size()) return InvalidArgument("GetBatchInto: keys and buffers differ in number");
  out_.clear();
  for (std::string_view key : keys) {
    out_ += "*2\r\n$3\r\nGET\r\n";
    out_ += Length('$', key.size());
    out_ += key;
    out_ += kCrlf;
  }
  iov_.assign(1, iovec{out_.data(), out_.size()});
  const Nanos deadline = MonotonicNanos() + kCommandTimeoutNs;
  MEMKV_RETURN_IF_ERROR(io::SendAll(fd_.get(), iov_, deadline));
  sizes->assign(keys.size(), 0);
  Status first_failure;
  for (size_t i = 0; i < keys.size(); ++i) {
    Status item;
    MEMKV_RETURN_IF_ERROR(ReadBulkInto(buffers[i], deadline, &item, &(*sizes)[i]));
    if (!item.ok() && first_failure.ok()) first_failure = item.WithContext("key '" + std::string(keys[i]) + "'");
  }
  return first_failure;
}

Status RespConnection::Set(std::string_view key, std::span<const uint8_t> value) {
  return SetBatch(std::span<const std::string_view>(&key, 1), std::span<const std::span<const uint8_t>>(&value, 1));
}

Result<size_t> RespConnection::GetInto(std::string_view key, std::span<uint8_t> buffer) {
  std::vector<size_t> sizes;
  MEMKV_RETURN_IF_ERROR(GetBatchInto(std::span<const std::string_view>(&key, 1),
                                     std::span<const std::span<uint8_t>>(&buffer, 1), &sizes));
  return sizes[0];
}

// ---- RedisServer ----

Result<std::unique_ptr<RedisServer>> RedisServer::Start(const std::string& binary, const std::string& temp_base,
                                                        const std::string& appendfsync) {
  std::unique_ptr<RedisServer> server(new RedisServer());
  MEMKV_ASSIGN_OR_RETURN(server->dir_, MakeTempDir(temp_base, "memkv-bench-redis-"));
  server->log_path_ = server->dir_ + "/redis.log";
  Status started;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    started = server->TryStart(binary, appendfsync);
    if (started.ok()) return server;
  }
  return started;
}

Status RedisServer::TryStart(const std::string& binary, const std::string& appendfsync) {
  MEMKV_ASSIGN_OR_RETURN(port_, FreeLoopbackPort());
  std::vector<std::string> args = {binary,     "--port", std::to_string(port_), "--bind",      "127.0.0.1",
                                   "--save",   "",       "--dir",               dir_,          "--daemonize",
                                   "no",       "--logfile", ""};
  if (appendfsync.empty()) {
    args.insert(args.end(), {"--appendonly", "no"});
  } else {
    args.insert(args.end(), {"--appendonly", "yes", "--appendfsync", appendfsync});
  }
  MEMKV_ASSIGN_OR_RETURN(pid_, SpawnChild(args, -1, log_path_));
  const Nanos deadline = MonotonicNanos() + Nanos(kReadyTimeoutMs) * 1'000'000;
  while (MonotonicNanos() < deadline) {
    if (Exited(pid_)) {
      pid_ = -1;
      return Unavailable(binary + " exited at start; its log:\n" + ReadLogTail(log_path_));
    }
    Result<RespConnection> c = RespConnection::Connect(port_);
    if (c.ok() && c->Command({"PING"}).ok()) {
      Result<std::string> info = c->Command({"INFO", "server"});
      if (info.ok()) version_ = InfoField(*info, "redis_version").value_or("unknown");
      return Status::Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kConnectRetryMs));
  }
  Stop();
  return Unavailable(binary + " did not answer PING on 127.0.0.1:" + std::to_string(port_) + " within " +
                     std::to_string(kReadyTimeoutMs) + " ms; its log:\n" + ReadLogTail(log_path_));
}

int RedisServer::Stop() {
  if (pid_ <= 0) return -1;
  const int status = TerminateChild(pid_, kStopGraceMs);
  pid_ = -1;
  return status;
}

RedisServer::~RedisServer() {
  Stop();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

}  // namespace memkv::bench
