#include "bench/raw_reference.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "base/bytes.h"
#include "base/checksum.h"
#include "base/hmac.h"
#include "base/unique_fd.h"
#include "base/units.h"
#include "bench/process.h"

namespace memkv::bench {
namespace {

constexpr int kBacklog = 1024;
constexpr int kStopGraceMs = 5000;

std::string ErrnoText(const std::string& call) { return call + ": " + std::strerror(errno); }

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Blocking: every byte of the iovecs, or false.
bool SendAll(int fd, iovec* iov, int count) {
  while (count > 0) {
    if (iov->iov_len == 0) {
      ++iov, --count;
      continue;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    for (auto left = static_cast<size_t>(n); left > 0;) {  // n never exceeds what is left
      const size_t take = std::min(left, iov->iov_len);
      iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + take;
      iov->iov_len -= take;
      left -= take;
      if (iov->iov_len == 0) ++iov, --count;
    }
  }
  return true;
}

bool SendAll(int fd, const void* data, size_t size) {
  iovec v{const_cast<void*>(data), size};  // sendmsg only reads
  return SendAll(fd, &v, 1);
}

// Blocking: exactly `size` bytes, or false (EOF or error).
bool RecvAll(int fd, void* data, size_t size) {
  auto* p = static_cast<uint8_t*>(data);
  while (size > 0) {
    ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// ---- Authenticated variant: a header, its tag, checks on both ends ----

constexpr size_t kAuthHeaderBytes = 40;
constexpr size_t kAuthFrameBytes = kAuthHeaderBytes + 32;

// A per-connection signer/verifier under a fixed benchmark key.
std::unique_ptr<HmacSha256> NewMac() {
  static const std::vector<uint8_t> kKey(32, 0x5a);
  return std::move(HmacSha256::Create(kKey).value());
}

// Header (length, payload checksum) followed by its tag.
std::array<uint8_t, kAuthFrameBytes> SignedHeader(HmacSha256& mac, uint64_t len, uint64_t checksum) {
  std::array<uint8_t, kAuthFrameBytes> frame{};
  StoreLe64(frame.data(), len);
  StoreLe64(frame.data() + 8, checksum);
  Tag tag = mac.Compute(frame.data(), kAuthHeaderBytes);
  std::memcpy(frame.data() + kAuthHeaderBytes, tag.data(), tag.size());
  return frame;
}

// Receives a signed header; false on EOF or a tag that does not verify.
bool RecvSignedHeader(int fd, HmacSha256& mac, uint64_t* len, uint64_t* checksum) {
  std::array<uint8_t, kAuthFrameBytes> frame{};
  if (!RecvAll(fd, frame.data(), frame.size())) return false;
  Tag tag;
  std::memcpy(tag.data(), frame.data() + kAuthHeaderBytes, tag.size());
  if (!TagsEqual(mac.Compute(frame.data(), kAuthHeaderBytes), tag)) return false;
  *len = LoadLe64(frame.data());
  *checksum = LoadLe64(frame.data() + 8);
  return true;
}

void ServeAuthenticated(int fd, char mode, uint64_t max_value_bytes, const std::vector<uint8_t>& reply) {
  const bool sums = mode == 's' || mode == 'h';
  const bool put = mode == 'p' || mode == 's';
  auto mac = NewMac();
  std::vector<uint8_t> buffer;
  uint64_t len = 0, checksum = 0, reply_len = UINT64_MAX, reply_checksum = 0;
  while (RecvSignedHeader(fd, *mac, &len, &checksum) && len <= max_value_bytes) {
    if (put) {
      if (buffer.size() < len) buffer.resize(len);
      if (!RecvAll(fd, buffer.data(), len)) return;
      if (sums && Checksum(buffer.data(), len) != checksum) return;
      auto ack = SignedHeader(*mac, 0, 0);
      if (!SendAll(fd, ack.data(), ack.size())) return;
      continue;
    }
    // A stored value's checksum is known, not computed per read.
    if (sums && len != reply_len) reply_checksum = Checksum(reply.data(), reply_len = len);
    auto head = SignedHeader(*mac, len, reply_checksum);
    iovec iov[2] = {{head.data(), head.size()}, {const_cast<uint8_t*>(reply.data()), len}};
    if (!SendAll(fd, iov, 2)) return;
  }
}

// ---- The server child ----

void ServeConnection(UniqueFd fd, uint64_t max_value_bytes, const std::vector<uint8_t>* reply) {
  char mode = 0;
  if (!RecvAll(fd.get(), &mode, 1)) return;
  if (mode == 'p' || mode == 'g' || mode == 's' || mode == 'h') {
    ServeAuthenticated(fd.get(), mode, max_value_bytes, *reply);
    return;
  }
  std::vector<uint8_t> buffer;
  uint64_t len = 0;
  while (RecvAll(fd.get(), &len, sizeof(len)) && len <= max_value_bytes) {
    if (mode == 'P') {
      if (buffer.size() < len) buffer.resize(len);
      const uint8_t ack = 1;
      if (!RecvAll(fd.get(), buffer.data(), len) || !SendAll(fd.get(), &ack, 1)) return;
    } else if (!SendAll(fd.get(), reply->data(), len)) {
      return;
    }
  }
}

[[noreturn]] void ServeForever(int listen_fd, uint64_t max_value_bytes) {
  const std::vector<uint8_t> reply(max_value_bytes, 0x42);  // get answers come from here
  for (;;) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      ::_exit(1);
    }
    SetNoDelay(fd);
    std::thread(ServeConnection, UniqueFd(fd), max_value_bytes, &reply).detach();
  }
}

Result<UniqueFd> ListenLoopback(uint16_t* port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Internal(ErrnoText("socket"));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd.get(), kBacklog) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Internal(ErrnoText("raw reference: bind/listen on 127.0.0.1:0"));
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

// ---- The client side ----

Result<UniqueFd> ConnectRaw(uint16_t port, RawOp op) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (!fd.valid() || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Unavailable(ErrnoText("raw reference: connect 127.0.0.1:" + std::to_string(port)));
  }
  SetNoDelay(fd.get());
  static constexpr char kModes[] = {'P', 'G', 'p', 'g', 's', 'h'};
  const char mode = kModes[static_cast<int>(op)];
  if (!SendAll(fd.get(), &mode, 1)) return Unavailable(ErrnoText("raw reference: send mode"));
  return fd;
}

Status RawPut(int fd, std::span<const uint8_t> value) {
  uint64_t len = value.size();
  iovec iov[2] = {{&len, sizeof(len)}, {const_cast<uint8_t*>(value.data()), value.size()}};
  uint8_t ack = 0;
  if (!SendAll(fd, iov, 2) || !RecvAll(fd, &ack, 1)) return Unavailable(ErrnoText("raw put"));
  return Status::Ok();
}

Status RawGet(int fd, std::span<uint8_t> buffer) {
  uint64_t len = buffer.size();
  if (!SendAll(fd, &len, sizeof(len)) || !RecvAll(fd, buffer.data(), buffer.size())) {
    return Unavailable(ErrnoText("raw get"));
  }
  return Status::Ok();
}

Status RawPutAuth(int fd, HmacSha256& mac, bool sums, std::span<const uint8_t> value) {
  auto head = SignedHeader(mac, value.size(), sums ? Checksum(value.data(), value.size()) : 0);
  iovec iov[2] = {{head.data(), head.size()}, {const_cast<uint8_t*>(value.data()), value.size()}};
  uint64_t len = 0, checksum = 0;
  if (!SendAll(fd, iov, 2) || !RecvSignedHeader(fd, mac, &len, &checksum)) {
    return Unavailable(ErrnoText("raw authenticated put"));
  }
  return Status::Ok();
}

Status RawGetAuth(int fd, HmacSha256& mac, bool sums, std::span<uint8_t> buffer) {
  auto head = SignedHeader(mac, buffer.size(), 0);
  uint64_t len = 0, checksum = 0;
  if (!SendAll(fd, head.data(), head.size()) || !RecvSignedHeader(fd, mac, &len, &checksum) ||
      len != buffer.size() || !RecvAll(fd, buffer.data(), len)) {
    return Unavailable(ErrnoText("raw authenticated get"));
  }
  if (sums && Checksum(buffer.data(), len) != checksum) {
    return Corruption("raw authenticated get: checksum mismatch");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<RawReferenceServer>> RawReferenceServer::Start(uint64_t max_value_bytes) {
  uint16_t port = 0;
  MEMKV_ASSIGN_OR_RETURN(UniqueFd listener, ListenLoopback(&port));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Internal(ErrnoText("fork"));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the benchmark
    if (::getppid() != parent) ::_exit(0);
    ServeForever(listener.get(), max_value_bytes);
  }
  return std::unique_ptr<RawReferenceServer>(new RawReferenceServer(pid, port));
}

RawReferenceServer::~RawReferenceServer() { TerminateChild(pid_, kStopGraceMs); }

CellResult RunRawCell(uint16_t port, RawOp op, uint32_t conns, double seconds, const Payloads& payloads) {
  const bool auth = op != RawOp::kPut && op != RawOp::kGet;
  const bool sums = op == RawOp::kPutTagSum || op == RawOp::kGetTagSum;
  const bool put = op == RawOp::kPut || op == RawOp::kPutTag || op == RawOp::kPutTagSum;
  const std::string what = std::string(auth ? "raw+auth " : "raw ") + (put ? "put " : "get ") +
                           FormatSize(payloads.size_bytes()) + " x" + std::to_string(conns);
  std::vector<UniqueFd> fds;
  for (uint32_t t = 0; t < conns; ++t) {
    Result<UniqueFd> fd = ConnectRaw(port, op);
    if (!fd.ok()) {
      ReportError(what, fd.status(), 0);
      CellResult failed;
      failed.errors = 1;
      return failed;
    }
    fds.push_back(std::move(fd).value());
  }
  std::vector<std::unique_ptr<HmacSha256>> macs;
  for (uint32_t t = 0; t < conns; ++t) macs.push_back(NewMac());
  std::atomic<uint64_t> next{0};
  return Drive(DriveSpec{conns, seconds, payloads.size_bytes(), what}, nullptr, [&](uint32_t t) {
    if (!put) {
      return auth ? RawGetAuth(fds[t].get(), *macs[t], sums, payloads.Buffer(t)) : RawGet(fds[t].get(), payloads.Buffer(t));
    }
    const uint64_t i = next.fetch_add(1, std::memory_order_relaxed) % payloads.keys();
    return auth ? RawPutAuth(fds[t].get(), *macs[t], sums, payloads.Value(i)) : RawPut(fds[t].get(), payloads.Value(i));
  });
}

}  // namespace memkv::bench
