// memkv-verbs-smoke: proves the libibverbs implementation of the verbs seam
// on a real device (a NIC, or rxe in the Soft-RoCE guests of tests/rdma).
//
//   memkv-verbs-smoke info [--device D] [--ib-port P]
//       devices, PortInfo, the GID table, the DCB configuration and what
//       auto-detect resolves from them
//   memkv-verbs-smoke server --device D --port N [path options]
//   memkv-verbs-smoke client --device D --peer IP:N [path options] [--size BYTES]
//       the two sides swap QpAddress + (addr, rkey) over TCP; the client
//       WRITEs a pattern into the server's registered buffer, READs it back
//       and verifies it, and the server checks its buffer too
//   path options: --mtu M --tclass T --sl S --gid-index G --retry-count R
//                 --timeout-exp E (0 = auto for tclass / sl / gid-index)
//
// Exit status 0 only when everything checked out; every step prints one line.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/bytes.h"
#include "base/unique_fd.h"
#include "verbs/detect.h"
#include "verbs/verbs.h"

namespace memkv::verbs {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMagic = 0x53564b4d;  // "MKVS"
constexpr size_t kMsgBytes = 48;
constexpr auto kPeerDeadline = std::chrono::seconds(180);
constexpr auto kCompletionDeadline = std::chrono::seconds(120);

struct Flags {
  std::string mode;
  std::string device;
  uint8_t ib_port = 1;
  int tcp_port = 0;
  std::string peer;
  uint32_t mtu = 4096;
  uint32_t tclass = 0;
  uint32_t sl = 0;
  uint32_t gid_index = 0;
  uint8_t retry_count = 6;
  uint8_t timeout_exp = 14;
  uint64_t size = 1 << 20;
};

int Usage() {
  std::fprintf(stderr,
               "usage: memkv-verbs-smoke info [--device D] [--ib-port P]\n"
               "       memkv-verbs-smoke server --device D --port N [options]\n"
               "       memkv-verbs-smoke client --device D --peer IP:N [options]\n"
               "options: --mtu M (4096) --tclass T --sl S --gid-index G (0 = auto) --retry-count R (6)\n"
               "         --timeout-exp E (14) --size BYTES (1048576) --ib-port P (1)\n");
  return 2;
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  if (argc < 2) return false;
  f->mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return false;
    std::string v = argv[++i];
    unsigned long long n = std::strtoull(v.c_str(), nullptr, 0);
    if (a == "--device") f->device = v;
    else if (a == "--peer") f->peer = v;
    else if (a == "--port") f->tcp_port = static_cast<int>(n);
    else if (a == "--ib-port") f->ib_port = static_cast<uint8_t>(n);
    else if (a == "--mtu") f->mtu = static_cast<uint32_t>(n);
    else if (a == "--tclass") f->tclass = static_cast<uint32_t>(n);
    else if (a == "--sl") f->sl = static_cast<uint32_t>(n);
    else if (a == "--gid-index") f->gid_index = static_cast<uint32_t>(n);
    else if (a == "--retry-count") f->retry_count = static_cast<uint8_t>(n);
    else if (a == "--timeout-exp") f->timeout_exp = static_cast<uint8_t>(n);
    else if (a == "--size") f->size = n;
    else return false;
  }
  return true;
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void PrintPort(const PortInfo& p) {
  std::printf("device %s port %u: %s, link %s, active_mtu %u, max_mtu %u, netdev %s\n", p.device.c_str(), p.port_num,
              p.state.c_str(), p.ethernet ? "Ethernet" : "InfiniBand", p.active_mtu, p.max_mtu,
              p.netdev.empty() ? "(none)" : p.netdev.c_str());
  std::printf("  max_mr_size %llu, max_qp_rd_atom %u, max_qp_init_rd_atom %u, %zu GIDs\n",
              static_cast<unsigned long long>(p.max_mr_size), p.max_qp_rd_atom, p.max_qp_init_rd_atom, p.gids.size());
  for (const GidEntry& e : p.gids) {
    std::string ip = GidIpv4(e.gid);
    std::printf("  gid[%u] %s %-7s %s%s\n", e.index, GidToString(e.gid).c_str(), GidTypeName(e.type),
                e.netdev.empty() ? "-" : e.netdev.c_str(), ip.empty() ? "" : (" (" + ip + ")").c_str());
  }
}

void PrintDcb(const std::string& netdev, const Result<DcbConfig>& dcb) {
  if (!dcb.ok()) {
    std::printf("dcb %s: %s\n", netdev.c_str(), dcb.status().ToString().c_str());
    return;
  }
  std::string map;
  for (const auto& [dscp, prio] : dcb->dscp_to_priority) {
    map += (map.empty() ? "" : " ") + std::to_string(dscp) + "->" + std::to_string(prio);
  }
  std::printf("dcb %s: %s PFC mask 0x%02x, DSCP map: %s\n", netdev.c_str(), dcb->has_pfc ? "" : "no PFC config,",
              dcb->pfc_enabled, map.empty() ? "(empty)" : map.c_str());
}

ResolvedPath Resolve(const PortInfo& port, const Flags& f, const char* who) {
  Result<DcbConfig> dcb = ReadDcb(port.netdev);
  PrintDcb(port.netdev, dcb);
  ResolvedPath r = ResolvePath(port, dcb, f.gid_index, f.tclass, f.sl);
  std::printf("%s: resolved gid_index %u traffic_class %u service_level %u (dscp %u)\n", who, r.gid_index,
              r.traffic_class, r.service_level, r.dscp);
  for (const auto& n : r.notes) std::printf("  note: %s\n", n.c_str());
  for (const auto& w : r.warnings) std::printf("  warning: %s\n", w.c_str());
  return r;
}

int Info(const Flags& f) {
  Provider& provider = SystemProvider();
  Result<std::vector<std::string>> devs = provider.Devices();
  if (!devs.ok()) {
    std::printf("devices: %s\n", devs.status().ToString().c_str());
    return 1;
  }
  std::string list;
  for (const auto& d : *devs) list += (list.empty() ? "" : ", ") + d;
  std::printf("devices: %s\n", list.empty() ? "(none)" : list.c_str());
  std::vector<std::string> targets = f.device.empty() ? *devs : std::vector<std::string>{f.device};
  if (targets.empty()) return 1;
  int rc = 0;
  for (const auto& d : targets) {
    Result<std::unique_ptr<Context>> ctx = provider.Open(d, f.ib_port);
    if (!ctx.ok()) {
      std::printf("open %s: %s\n", d.c_str(), ctx.status().ToString().c_str());
      rc = 1;
      continue;
    }
    const PortInfo& port = (*ctx)->port();
    PrintPort(port);
    Resolve(port, f, "info");
    Status mtu = CheckMtu(f.mtu, port, "rdma.mtu");
    std::printf("mtu check %u: %s\n", f.mtu, mtu.ok() ? "ok" : mtu.ToString().c_str());
  }
  return rc;
}

// ------------------------------------------------------------- TCP exchange

struct Hello {
  QpAddress qp;
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint64_t size = 0;
};

void Encode(const Hello& h, uint8_t* out) {
  StoreLe32(out, kMagic);
  StoreLe32(out + 4, h.qp.qpn);
  StoreLe32(out + 8, h.qp.psn);
  std::memcpy(out + 12, h.qp.gid.data(), 16);
  StoreLe64(out + 28, h.addr);
  StoreLe32(out + 36, h.rkey);
  StoreLe64(out + 40, h.size);
}

bool Decode(const uint8_t* in, Hello* h) {
  if (LoadLe32(in) != kMagic) return false;
  h->qp.qpn = LoadLe32(in + 4);
  h->qp.psn = LoadLe32(in + 8);
  std::memcpy(h->qp.gid.data(), in + 12, 16);
  h->addr = LoadLe64(in + 28);
  h->rkey = LoadLe32(in + 36);
  h->size = LoadLe64(in + 40);
  return true;
}

bool WriteAll(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    ssize_t w = ::send(fd, b, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    b += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Reads exactly n bytes before `deadline`.
bool ReadAll(int fd, void* p, size_t n, Clock::time_point deadline) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    int pr = ::poll(&pfd, 1, static_cast<int>(left));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) return false;
    ssize_t r = ::recv(fd, b, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    b += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

uint8_t PatternByte(uint64_t i) { return static_cast<uint8_t>((i * 131 + 7) ^ (i >> 9)); }

// ------------------------------------------------------------ RDMA helpers

struct Endpoint {
  std::unique_ptr<Context> ctx;
  std::unique_ptr<CompletionQueue> cq;  // declared before qp: destroyed after it
  std::unique_ptr<QueuePair> qp;
  PathOptions path;
  QpAddress local;
};

bool Setup(const Flags& f, const char* who, Endpoint* ep) {
  Result<std::unique_ptr<Context>> ctx = SystemProvider().Open(f.device, f.ib_port);
  if (!ctx.ok()) {
    std::printf("%s: open: %s\n", who, ctx.status().ToString().c_str());
    return false;
  }
  ep->ctx = std::move(*ctx);
  const PortInfo& port = ep->ctx->port();
  PrintPort(port);
  ResolvedPath r = Resolve(port, f, who);
  Status mtu = CheckMtu(f.mtu, port, "--mtu");
  if (!mtu.ok()) {
    std::printf("%s: %s\n", who, mtu.ToString().c_str());
    return false;
  }
  ep->path.mtu = f.mtu;
  ep->path.gid_index = r.gid_index;
  ep->path.traffic_class = r.traffic_class;
  ep->path.service_level = r.service_level;
  ep->path.retry_count = f.retry_count;
  ep->path.timeout = f.timeout_exp;
  const GidEntry* gid = nullptr;
  for (const GidEntry& e : port.gids) {
    if (e.index == r.gid_index) gid = &e;
  }
  if (gid == nullptr) {
    std::printf("%s: gid_index %u is not in the GID table\n", who, r.gid_index);
    return false;
  }
  Result<std::unique_ptr<CompletionQueue>> cq = ep->ctx->CreateCq(64);
  if (!cq.ok()) {
    std::printf("%s: %s\n", who, cq.status().ToString().c_str());
    return false;
  }
  ep->cq = std::move(*cq);
  Result<std::unique_ptr<QueuePair>> qp = ep->ctx->CreateQp(ep->cq.get(), 16);
  if (!qp.ok()) {
    std::printf("%s: %s\n", who, qp.status().ToString().c_str());
    return false;
  }
  ep->qp = std::move(*qp);
  ep->local = ep->qp->local();
  ep->local.gid = gid->gid;
  std::printf("%s: qp %s psn %s gid[%u] %s; path mtu %u traffic_class %u service_level %u retry_count %u timeout %u\n",
              who, Hex(ep->local.qpn).c_str(), Hex(ep->local.psn).c_str(), r.gid_index,
              GidToString(ep->local.gid).c_str(), ep->path.mtu, ep->path.traffic_class, ep->path.service_level,
              ep->path.retry_count, ep->path.timeout);
  return true;
}

// Waits for one completion: poll, arm, poll again, sleep on the channel fd.
bool WaitCompletion(CompletionQueue* cq, Completion* out) {
  auto deadline = Clock::now() + kCompletionDeadline;
  for (;;) {
    Result<size_t> n = cq->Poll(std::span<Completion>(out, 1));
    if (!n.ok()) {
      std::printf("poll: %s\n", n.status().ToString().c_str());
      return false;
    }
    if (*n == 1) return true;
    Status armed = cq->Arm();
    if (!armed.ok()) {
      std::printf("arm: %s\n", armed.ToString().c_str());
      return false;
    }
    n = cq->Poll(std::span<Completion>(out, 1));
    if (n.ok() && *n == 1) return true;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      std::printf("no completion within %lld s\n", static_cast<long long>(kCompletionDeadline.count()));
      return false;
    }
    pollfd pfd{cq->fd(), POLLIN, 0};
    ::poll(&pfd, 1, static_cast<int>(left));
    cq->DrainEvents();
  }
}

bool RunOne(Endpoint* ep, const WorkRequest& wr, const char* what) {
  auto t0 = Clock::now();
  Status posted = ep->qp->Post(wr);
  if (!posted.ok()) {
    std::printf("client: %s post: %s\n", what, posted.ToString().c_str());
    return false;
  }
  Completion c;
  if (!WaitCompletion(ep->cq.get(), &c)) return false;
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("client: %s %u bytes -> %s in %.1f ms (wr_id %llu, vendor_err %s)\n", what, wr.length,
              WcStatusName(c.status).c_str(), ms, static_cast<unsigned long long>(c.wr_id), Hex(c.vendor_err).c_str());
  return c.status == kWcSuccess && c.wr_id == wr.wr_id;
}

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
// Page-aligned and zeroed. Declared before the Endpoint and the Registration
// so the QP is gone and the memory deregistered before it is freed.
using Buffer = std::unique_ptr<uint8_t[], FreeDeleter>;

Buffer AllocBuffer(uint64_t size) {
  void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  if (p == nullptr) {
    std::printf("out of memory for a %llu-byte buffer\n", static_cast<unsigned long long>(size));
    std::exit(1);
  }
  std::memset(p, 0, size);
  return Buffer(static_cast<uint8_t*>(p));
}

int Server(const Flags& f) {
  Buffer owned = AllocBuffer(f.size);  // outlives the QP and the registration
  uint8_t* buf = owned.get();
  Endpoint ep;
  if (!Setup(f, "server", &ep)) return 1;
  Result<std::unique_ptr<Registration>> reg = ep.ctx->Register(buf, f.size, true);
  if (!reg.ok()) {
    std::printf("server: %s\n", reg.status().ToString().c_str());
    return 1;
  }

  UniqueFd lfd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  ::setsockopt(lfd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(f.tcp_port));
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(lfd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || ::listen(lfd.get(), 1) != 0) {
    std::printf("server: bind/listen port %d: %s\n", f.tcp_port, std::strerror(errno));
    return 1;
  }
  std::printf("server: registered %llu bytes at %s rkey %s; listening on tcp %d\n",
              static_cast<unsigned long long>(f.size), Hex(reinterpret_cast<uintptr_t>(buf)).c_str(),
              Hex((*reg)->rkey()).c_str(), f.tcp_port);
  std::fflush(stdout);
  pollfd pfd{lfd.get(), POLLIN, 0};
  if (::poll(&pfd, 1, static_cast<int>(std::chrono::milliseconds(kPeerDeadline).count())) <= 0) {
    std::printf("server: no client within %lld s\n", static_cast<long long>(kPeerDeadline.count()));
    return 1;
  }
  UniqueFd cfd(::accept4(lfd.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!cfd.valid()) {
    std::printf("server: accept: %s\n", std::strerror(errno));
    return 1;
  }
  auto deadline = Clock::now() + kPeerDeadline;
  Hello mine{ep.local, reinterpret_cast<uintptr_t>(buf), (*reg)->rkey(), f.size};
  uint8_t msg[kMsgBytes];
  Encode(mine, msg);
  Hello peer;
  if (!WriteAll(cfd.get(), msg, sizeof(msg)) || !ReadAll(cfd.get(), msg, sizeof(msg), deadline) ||
      !Decode(msg, &peer)) {
    std::printf("server: exchange with the client failed\n");
    return 1;
  }
  std::printf("server: peer qp %s psn %s gid %s\n", Hex(peer.qp.qpn).c_str(), Hex(peer.qp.psn).c_str(),
              GidToString(peer.qp.gid).c_str());
  Status st = ep.qp->Connect(peer.qp, ep.path);
  if (!st.ok()) {
    std::printf("server: connect: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("server: connected (RTS)\n");
  char ready = 'R';
  char result = 0;
  if (!WriteAll(cfd.get(), &ready, 1) || !ReadAll(cfd.get(), &result, 1, deadline)) {
    std::printf("server: lost the client before it reported\n");
    return 1;
  }
  if (result != 'O') {
    std::printf("server: client reported failure\n");
    return 1;
  }
  // The client wrote peer.size bytes (it checked they fit).
  for (uint64_t i = 0; i < peer.size; ++i) {
    if (buf[i] != PatternByte(i)) {
      std::printf("server: byte %llu of the registered buffer is %u, want %u\n", static_cast<unsigned long long>(i),
                  buf[i], PatternByte(i));
      return 1;
    }
  }
  std::printf("server: OK, the registered buffer holds the client's %llu-byte pattern\n",
              static_cast<unsigned long long>(peer.size));
  return 0;
}

int Client(const Flags& f) {
  size_t colon = f.peer.rfind(':');
  if (colon == std::string::npos) return Usage();
  std::string host = f.peer.substr(0, colon);
  int port = std::atoi(f.peer.c_str() + colon + 1);
  if (f.size == 0 || f.size > UINT32_MAX) {
    std::printf("client: --size must be 1..%u for one WR\n", UINT32_MAX);
    return 2;
  }
  Buffer src_owned = AllocBuffer(f.size);  // outlive the QP and the registrations
  Buffer dst_owned = AllocBuffer(f.size);
  uint8_t* src = src_owned.get();
  uint8_t* dst = dst_owned.get();
  Endpoint ep;
  if (!Setup(f, "client", &ep)) return 1;
  for (uint64_t i = 0; i < f.size; ++i) src[i] = PatternByte(i);
  Result<std::unique_ptr<Registration>> src_reg = ep.ctx->Register(src, f.size, false);
  Result<std::unique_ptr<Registration>> dst_reg = ep.ctx->Register(dst, f.size, false);
  if (!src_reg.ok() || !dst_reg.ok()) {
    std::printf("client: %s\n", (src_reg.ok() ? dst_reg.status() : src_reg.status()).ToString().c_str());
    return 1;
  }

  // The server may still be booting: retry the TCP connect until the deadline.
  auto deadline = Clock::now() + kPeerDeadline;
  UniqueFd fd;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1) return Usage();
  for (;;) {
    fd.Reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0) break;
    if (Clock::now() > deadline) {
      std::printf("client: connect %s: %s\n", f.peer.c_str(), std::strerror(errno));
      return 1;
    }
    ::poll(nullptr, 0, 250);
  }
  uint8_t msg[kMsgBytes];
  Hello mine{ep.local, 0, 0, f.size};
  Encode(mine, msg);
  Hello peer;
  if (!WriteAll(fd.get(), msg, sizeof(msg)) || !ReadAll(fd.get(), msg, sizeof(msg), deadline) ||
      !Decode(msg, &peer)) {
    std::printf("client: exchange with the server failed\n");
    return 1;
  }
  std::printf("client: peer qp %s psn %s gid %s buffer %s rkey %s (%llu bytes)\n", Hex(peer.qp.qpn).c_str(),
              Hex(peer.qp.psn).c_str(), GidToString(peer.qp.gid).c_str(), Hex(peer.addr).c_str(),
              Hex(peer.rkey).c_str(), static_cast<unsigned long long>(peer.size));
  if (peer.size < f.size) {
    std::printf("client: the server registered only %llu bytes\n", static_cast<unsigned long long>(peer.size));
    return 1;
  }
  Status st = ep.qp->Connect(peer.qp, ep.path);
  if (!st.ok()) {
    std::printf("client: connect: %s\n", st.ToString().c_str());
    return 1;
  }
  char ready = 0;
  if (!ReadAll(fd.get(), &ready, 1, deadline) || ready != 'R') {
    std::printf("client: the server did not get to RTR\n");
    return 1;
  }
  std::printf("client: connected (RTS)\n");

  uint32_t len = static_cast<uint32_t>(f.size);
  WorkRequest write{1, WrOpcode::kWrite, src, len, (*src_reg)->lkey(), peer.addr, peer.rkey};
  WorkRequest read{2, WrOpcode::kRead, dst, len, (*dst_reg)->lkey(), peer.addr, peer.rkey};
  bool ok = RunOne(&ep, write, "RDMA_WRITE") && RunOne(&ep, read, "RDMA_READ");
  if (ok) {
    if (std::memcmp(src, dst, f.size) != 0) {
      std::printf("client: READ returned different bytes than were written\n");
      ok = false;
    } else {
      std::printf("client: OK, %u bytes written and read back intact\n", len);
    }
  }
  char result = ok ? 'O' : 'F';
  WriteAll(fd.get(), &result, 1);
  if (ok) {
    // The seam promises that a QP in error accepts posts and flushes them
    // (verbs.h SetError); show what this device does. Informational only.
    Status err = ep.qp->SetError();
    WorkRequest late{3, WrOpcode::kWrite, src, len, (*src_reg)->lkey(), peer.addr, peer.rkey};
    Status posted = err.ok() ? ep.qp->Post(late) : err;
    Completion c;
    if (!posted.ok()) {
      std::printf("client: after SetError: %s\n", posted.ToString().c_str());
    } else if (WaitCompletion(ep.cq.get(), &c)) {
      std::printf("client: after SetError, RDMA_WRITE -> %s (wr_id %llu)\n", WcStatusName(c.status).c_str(),
                  static_cast<unsigned long long>(c.wr_id));
    }
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace memkv::verbs

int main(int argc, char** argv) {
  using namespace memkv::verbs;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Flags f;
  if (!ParseFlags(argc, argv, &f)) return Usage();
  if (f.mode == "info") return Info(f);
  if (f.mode == "server" && !f.device.empty() && f.tcp_port > 0) return Server(f);
  if (f.mode == "client" && !f.device.empty() && !f.peer.empty()) return Client(f);
  return Usage();
}
