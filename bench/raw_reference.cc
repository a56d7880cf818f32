#include "bench/raw_reference.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>
#include <utility>
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

// Moves `*iov` / `*count` past `n` bytes that went through (n never exceeds
// what is left), skipping emptied entries.
void Advance(iovec** iov, int* count, size_t n) {
  while (*count > 0 && (n > 0 || (*iov)->iov_len == 0)) {
    const size_t take = std::min(n, (*iov)->iov_len);
    (*iov)->iov_base = static_cast<uint8_t*>((*iov)->iov_base) + take;
    (*iov)->iov_len -= take;
    n -= take;
    if ((*iov)->iov_len == 0) ++*iov, --*count;
  }
}

// Blocking: every byte of the iovecs, or false.
bool SendAll(int fd, iovec* iov, int count) {
  Advance(&iov, &count, 0);
  while (count > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(std::min(count, IOV_MAX));
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    Advance(&iov, &count, static_cast<size_t>(n));
  }
  return true;
}

// Blocking: every byte the iovecs can hold, or false (EOF or error).
bool RecvAll(int fd, iovec* iov, int count) {
  Advance(&iov, &count, 0);
  while (count > 0) {
    ssize_t n = ::readv(fd, iov, std::min(count, IOV_MAX));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    Advance(&iov, &count, static_cast<size_t>(n));
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

// ---- Pipelined variant: buffered reads, answers sent together ----

constexpr size_t kPipelineReadBytes = 256 * 1024;

// Bytes waiting to be read on `fd`, 0 when none (or on error).
int Readable(int fd) {
  int n = 0;
  return ::ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
}

// Sends the answers owed: `acks` one-byte put answers, or a get answer of
// each length in `lengths` (all from `reply`).
bool SendOwed(int fd, uint64_t* acks, std::vector<uint64_t>* lengths, const std::vector<uint8_t>& reply,
              std::vector<uint8_t>* ack_bytes, std::vector<iovec>* iov) {
  iov->clear();
  if (*acks > 0) {
    ack_bytes->assign(*acks, 1);
    iov->push_back({ack_bytes->data(), ack_bytes->size()});
  }
  for (uint64_t len : *lengths) iov->push_back({const_cast<uint8_t*>(reply.data()), len});  // sendmsg only reads
  *acks = 0;
  lengths->clear();
  return iov->empty() || SendAll(fd, iov->data(), static_cast<int>(iov->size()));
}

// Modes 'B' (put) and 'D' (get): the client sends N requests before it reads
// N answers. The server reads whatever has arrived into one buffer (a recv
// carries many small requests), answers every complete request in it, and
// sends the owed answers in one write once nothing more waits to be read, as
// an event-loop server does; N requests then cost a few system calls rather
// than three each. Put values are received into the buffer and dropped, as
// the plain put's are.
void ServePipelined(int fd, bool put, uint64_t max_value_bytes, const std::vector<uint8_t>& reply) {
  std::vector<uint8_t> in(kPipelineReadBytes);
  size_t begin = 0, end = 0;  // [begin, end): received, not answered
  uint64_t acks = 0;
  std::vector<uint64_t> lengths;
  std::vector<uint8_t> ack_bytes;
  std::vector<iovec> iov;
  for (;;) {
    size_t need = sizeof(uint64_t);  // what the first incomplete request needs in all
    while (end - begin >= sizeof(uint64_t)) {
      uint64_t len = 0;
      std::memcpy(&len, in.data() + begin, sizeof(len));
      if (len > max_value_bytes) return;
      const size_t request = sizeof(len) + (put ? len : 0);
      if (end - begin < request) {
        need = request;
        break;
      }
      begin += request;
      if (put) {
        ++acks;
      } else {
        lengths.push_back(len);
      }
    }
    if (begin == end) begin = end = 0;
    if (Readable(fd) == 0 && !SendOwed(fd, &acks, &lengths, reply, &ack_bytes, &iov)) return;
    if (in.size() - begin < need) {  // room for the whole of that request
      std::memmove(in.data(), in.data() + begin, end - begin);
      end -= std::exchange(begin, 0);
      if (in.size() < need) in.resize(need);
    }
    const ssize_t n = ::recv(fd, in.data() + end, in.size() - end, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    end += static_cast<size_t>(n);
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
  if (mode == 'B' || mode == 'D') {
    ServePipelined(fd.get(), mode == 'B', max_value_bytes, *reply);
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

Result<UniqueFd> ConnectRaw(uint16_t port, RawOp op, bool pipelined) {
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
  char mode = kModes[static_cast<int>(op)];
  if (pipelined) mode = op == RawOp::kPut ? 'B' : 'D';
  if (!SendAll(fd.get(), &mode, 1)) return Unavailable(ErrnoText("raw reference: send mode"));
  return fd;
}

// A thread's scratch for pipelined requests, reused call after call.
struct RawScratch {
  std::vector<iovec> iov;
  std::vector<uint64_t> lengths;  // one per request of a get batch
  std::vector<uint8_t> acks;      // one per request of a put batch
};

// `batch` puts of values first..first+batch-1 (mod the working set), then their acks.
Status RawPut(int fd, const Payloads& payloads, uint64_t first, uint32_t batch, RawScratch* s) {
  const uint64_t len = payloads.size_bytes();
  s->iov.clear();
  for (uint32_t j = 0; j < batch; ++j) {
    const std::span<const uint8_t> value = payloads.Value((first + j) % payloads.keys());
    s->iov.push_back({const_cast<uint64_t*>(&len), sizeof(len)});  // sendmsg only reads
    s->iov.push_back({const_cast<uint8_t*>(value.data()), value.size()});
  }
  s->acks.resize(batch);
  iovec acks{s->acks.data(), batch};
  if (!SendAll(fd, s->iov.data(), static_cast<int>(s->iov.size())) || !RecvAll(fd, &acks, 1)) {
    return Unavailable(ErrnoText("raw put"));
  }
  return Status::Ok();
}

// `batch` gets, thread `t`'s buffers t*batch .. t*batch+batch-1, answers read in order.
Status RawGet(int fd, const Payloads& payloads, uint32_t t, uint32_t batch, RawScratch* s) {
  s->lengths.assign(batch, payloads.size_bytes());
  s->iov.clear();
  for (uint32_t j = 0; j < batch; ++j) {
    const std::span<uint8_t> buffer = payloads.Buffer(t * batch + j);
    s->iov.push_back({buffer.data(), buffer.size()});
  }
  if (!SendAll(fd, s->lengths.data(), batch * sizeof(uint64_t)) ||
      !RecvAll(fd, s->iov.data(), static_cast<int>(s->iov.size()))) {
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

CellResult RunRawCell(uint16_t port, RawOp op, const RawCellSpec& spec, const Payloads& payloads) {
  const bool auth = op != RawOp::kPut && op != RawOp::kGet;
  const bool sums = op == RawOp::kPutTagSum || op == RawOp::kGetTagSum;
  const bool put = op == RawOp::kPut || op == RawOp::kPutTag || op == RawOp::kPutTagSum;
  const uint32_t conns = spec.conns;
  const uint32_t batch = auth ? 1 : spec.batch;
  const std::string what = std::string(auth ? "raw+auth " : "raw ") + (put ? "put " : "get ") +
                           FormatSize(payloads.size_bytes()) + " x" + std::to_string(conns) +
                           (batch > 1 ? " batch " + std::to_string(batch) : "");
  std::vector<UniqueFd> fds;
  for (uint32_t t = 0; t < conns; ++t) {
    Result<UniqueFd> fd = ConnectRaw(port, op, batch > 1);
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
  std::vector<RawScratch> scratch(conns);
  std::atomic<uint64_t> next{0};
  DriveSpec drive{conns, spec.seconds, payloads.size_bytes() * batch, what};
  drive.server_pid = spec.server_pid;
  return Drive(drive, nullptr, [&](uint32_t t) {
    const int fd = fds[t].get();
    if (!put) {
      return auth ? RawGetAuth(fd, *macs[t], sums, payloads.Buffer(t)) : RawGet(fd, payloads, t, batch, &scratch[t]);
    }
    const uint64_t i = next.fetch_add(batch, std::memory_order_relaxed) % payloads.keys();
    return auth ? RawPutAuth(fd, *macs[t], sums, payloads.Value(i)) : RawPut(fd, payloads, i, batch, &scratch[t]);
  });
}

}  // namespace memkv::bench
