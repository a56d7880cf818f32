#include "http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <system_error>

#include "base/errno_text.h"
#include "base/log.h"
#include "base/thread_name.h"
#include "http/http_connection.h"
#include "io/socket.h"

namespace memkv::http {
namespace {

constexpr size_t kMinHeaderBytes = 64;
constexpr size_t kMaxHeaderBytes = 1 << 20;
constexpr int kMaxConnections = 4096;
// Bounds the accept work per wakeup, so a connection flood cannot starve the
// connections already open.
constexpr int kMaxAcceptsPerWakeup = 64;
constexpr Nanos kAcceptPauseNs = 100'000'000;
constexpr Nanos kAcceptWarnIntervalNs = 10'000'000'000;
constexpr Nanos kNoDeadline = INT64_MAX;

// The server whose loop runs on this thread, so Stop() from a handler can
// tell that it must not join itself.
thread_local const HttpServer* running_here = nullptr;

std::string PeerName(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "?";
}

void Wake(int event_fd) {
  uint64_t one = 1;
  ssize_t ignored = ::write(event_fd, &one, sizeof(one));
  (void)ignored;
}

Status ValidateOptions(const HttpServerOptions& o) {
  if (o.host.empty()) return InvalidArgument("http server host is empty");
  if (!o.tls_cert_path.empty() && o.tls_key_path.empty()) {
    return InvalidArgument("tls_cert_path is set (" + o.tls_cert_path +
                           ") but tls_key_path is missing; HTTPS needs both");
  }
  if (o.tls_cert_path.empty() && !o.tls_key_path.empty()) {
    return InvalidArgument("tls_key_path is set (" + o.tls_key_path +
                           ") but tls_cert_path is missing; HTTPS needs both");
  }
  if (o.max_header_bytes < kMinHeaderBytes || o.max_header_bytes > kMaxHeaderBytes) {
    return InvalidArgument("http max_header_bytes " + std::to_string(o.max_header_bytes) + " outside " +
                           std::to_string(kMinHeaderBytes) + ".." + std::to_string(kMaxHeaderBytes));
  }
  if (o.max_body_bytes > kMaxHeaderBytes) {
    return InvalidArgument("http max_body_bytes " + std::to_string(o.max_body_bytes) + " over " +
                           std::to_string(kMaxHeaderBytes));
  }
  if (o.read_timeout_ms == 0) return InvalidArgument("http read_timeout_ms is 0");
  if (o.write_timeout_ms == 0) return InvalidArgument("http write_timeout_ms is 0");
  if (o.max_connections < 1 || o.max_connections > kMaxConnections) {
    return InvalidArgument("http max_connections " + std::to_string(o.max_connections) + " outside 1.." +
                           std::to_string(kMaxConnections));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Create(const HttpServerOptions& options) {
  MEMKV_RETURN_IF_ERROR(ValidateOptions(options));
  std::unique_ptr<TlsServer> tls;
  if (!options.tls_cert_path.empty()) {
    if (!options.tls) {
      return InvalidArgument("tls_cert_path is set (" + options.tls_cert_path +
                             ") but this program's HTTP server has no TLS; HTTPS is served by the memkv server");
    }
    MEMKV_ASSIGN_OR_RETURN(tls, options.tls(options.tls_cert_path, options.tls_key_path));
  }
  const int backlog = std::clamp(options.max_connections * 2, 16, 1024);
  Result<UniqueFd> listener = io::ListenTcp(options.host, options.port, backlog);
  if (!listener.ok()) return listener.status().WithContext("http server");
  MEMKV_ASSIGN_OR_RETURN(uint16_t port, io::LocalPort(listener->get()));
  UniqueFd wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake.valid()) return Internal("http server: eventfd: " + ErrnoText(errno));
  return std::unique_ptr<HttpServer>(
      new HttpServer(options, std::move(listener).value(), std::move(wake), port, std::move(tls)));
}

HttpServer::HttpServer(const HttpServerOptions& options, UniqueFd listener, UniqueFd wake, uint16_t port,
                       std::unique_ptr<TlsServer> tls)
    : options_(options), listener_(std::move(listener)), wake_(std::move(wake)), port_(port), tls_(std::move(tls)) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Handle(const std::string& method, const std::string& path, HttpHandler handler) {
  if (started_.load(std::memory_order_acquire)) {
    return FailedPrecondition("HttpServer::Handle(" + method + " " + path + ") after Start");
  }
  return router_.Add(method, path, std::move(handler));
}

Status HttpServer::Start() {
  MutexLock lock(mu_);
  if (stopping_.load(std::memory_order_acquire)) return FailedPrecondition("HttpServer::Start after Stop");
  if (started_.exchange(true, std::memory_order_acq_rel)) return FailedPrecondition("HttpServer::Start called twice");
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error& e) {
    started_.store(false, std::memory_order_release);
    return Internal(std::string("http server: cannot start its thread: ") + e.what());
  }
  return Status::Ok();
}

void HttpServer::Stop() {
  stopping_.store(true, std::memory_order_release);
  Wake(wake_.get());
  if (running_here == this) return;  // a handler: the loop ends after it returns
  MutexLock lock(mu_);
  if (thread_.joinable()) thread_.join();
}

void HttpServer::Run() {
  SetThreadName("memkv-http");
  running_here = this;
  ScopedLogTarget log_scope(options_.log_target);
  // Writes to a peer that went away raise SIGPIPE; OpenSSL writes with
  // write(2), which cannot say MSG_NOSIGNAL. Blocked here, it stays pending on
  // this thread and never reaches the process.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);

  std::vector<pollfd> fds;
  while (!stopping_.load(std::memory_order_acquire)) {
    Nanos now = MonotonicNanos();
    const bool accepting = now >= accept_paused_until_;
    Nanos next = accepting ? kNoDeadline : accept_paused_until_;
    fds.clear();
    fds.push_back({wake_.get(), POLLIN, 0});
    fds.push_back({listener_.get(), static_cast<short>(accepting ? POLLIN : 0), 0});
    for (const auto& c : connections_) {
      fds.push_back({c->fd(), c->events(), 0});
      next = std::min(next, c->deadline());
    }
    int timeout_ms = -1;
    if (next != kNoDeadline) {
      timeout_ms = static_cast<int>(std::clamp<Nanos>((next - now + 999'999) / 1'000'000, 0, INT_MAX));
    }
    int rc = ::poll(fds.data(), fds.size(), timeout_ms);
    if (rc < 0 && errno != EINTR) {
      LOG_ERROR << "http server: poll over " << fds.size() << " descriptors: " << ErrnoText(errno)
                << "; retrying in 100 ms";
      ::poll(nullptr, 0, 100);  // back off rather than spin on a persistent failure
    }
    now = MonotonicNanos();
    for (size_t i = 0; i < connections_.size(); ++i) {
      HttpConnection& c = *connections_[i];
      if (fds[i + 2].revents != 0 || now >= c.deadline()) c.Step(now, router_, counters_);
    }
    if (rc > 0 && (fds[1].revents & POLLIN) != 0) AcceptSome(now);
    if (rc > 0 && fds[0].revents != 0) {
      uint64_t drained;
      ssize_t ignored = ::read(wake_.get(), &drained, sizeof(drained));
      (void)ignored;
    }
    Reap();
  }
  connections_.clear();
  listener_.Reset();  // new clients are refused now, not left in the backlog
  serving_ = rejecting_ = 0;
  counters_.connections_open.store(0, std::memory_order_relaxed);
  running_here = nullptr;
}

void HttpServer::AcceptSome(Nanos now) {
  for (int i = 0; i < kMaxAcceptsPerWakeup; ++i) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    int raw = ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (raw >= 0) {
      Admit(UniqueFd(raw), PeerName(ss), now);
      continue;
    }
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) return;
    // A connection that died in the backlog, or a network error Linux passes on: try the next.
    if (err == EINTR || err == ECONNABORTED || err == EPROTO || err == ENETDOWN || err == ENOPROTOOPT ||
        err == EHOSTDOWN || err == ENONET || err == EHOSTUNREACH || err == ENETUNREACH) {
      continue;
    }
    // Out of descriptors or memory: the listener stays readable, so back off
    // instead of spinning; open connections are still served meanwhile.
    accept_paused_until_ = now + kAcceptPauseNs;
    if (accept_warnings_.Allow(now, kAcceptWarnIntervalNs) != LogRateLimiter::kNotAllowed) {
      LOG_WARN << "http server: accept on port " << port_ << ": " << ErrnoText(err)
               << "; pausing accepts for 100 ms at a time";
    }
    return;
  }
}

void HttpServer::Admit(UniqueFd fd, std::string peer, Nanos now) {
  HttpCounters::Bump(counters_.connections_accepted);
  HttpConnection::Mode mode = HttpConnection::Mode::kServe;
  if (serving_ >= options_.max_connections) {
    // Slots may be held by connections whose clients already left: during a
    // burst of accepts their FINs wait unread. Look before refusing.
    for (auto& c : connections_) c->Step(now, router_, counters_);
    Reap();
  }
  if (serving_ >= options_.max_connections) ShedOldest(now, peer);
  if (serving_ >= options_.max_connections) {
    HttpCounters::Bump(counters_.rejected_busy);
    if (rejecting_ >= options_.max_connections) return;  // closed unanswered
    mode = HttpConnection::Mode::kRejectBusy;
  }
  std::unique_ptr<TlsSession> session;
  if (tls_) {
    Result<std::unique_ptr<TlsSession>> made = tls_->NewSession(fd.get());
    if (!made.ok()) {
      LOG_WARN << "http server: connection from " << peer << ": " << made.status().ToString();
      return;
    }
    session = std::move(made).value();
  }
  HttpConnectionLimits limits;
  limits.max_header_bytes = options_.max_header_bytes;
  limits.max_body_bytes = options_.max_body_bytes;
  limits.read_timeout_ns = Nanos(options_.read_timeout_ms) * 1'000'000;
  limits.write_timeout_ns = Nanos(options_.write_timeout_ms) * 1'000'000;
  auto connection = std::make_unique<HttpConnection>(std::move(fd), std::move(session), std::move(peer), mode, limits, now);
  ++(mode == HttpConnection::Mode::kServe ? serving_ : rejecting_);
  counters_.connections_open.store(static_cast<uint64_t>(serving_ + rejecting_), std::memory_order_relaxed);
  // The request is often in already: answer without another trip through poll.
  connection->Step(now, router_, counters_);
  connections_.push_back(std::move(connection));
}

void HttpServer::ShedOldest(Nanos now, const std::string& for_peer) {
  HttpConnection* oldest = nullptr;
  for (auto& c : connections_) {
    if (c->mode() != HttpConnection::Mode::kServe || !c->Sheddable()) continue;
    if (oldest == nullptr || c->accepted_at() < oldest->accepted_at()) oldest = c.get();
  }
  if (oldest == nullptr) return;  // every slot is writing a response: the newcomer is refused
  HttpCounters::Bump(counters_.shed);
  const int64_t suppressed = shed_warnings_.Allow(now, kAcceptWarnIntervalNs);
  if (suppressed != LogRateLimiter::kNotAllowed && GetLogLevel() <= LogLevel::kWarn) {
    internal::LogMessage(LogLevel::kWarn, {}, suppressed).stream()
        << "http server on port " << port_ << ": " << options_.max_connections
        << " connections open, the most allowed; closing the oldest one without a complete request (from "
        << oldest->peer() << ", open " << (now - oldest->accepted_at()) / 1'000'000 << " ms) to admit " << for_peer;
  }
  oldest->Shed();
  Reap();
}

void HttpServer::Reap() {
  auto finished = std::remove_if(connections_.begin(), connections_.end(), [this](const auto& c) {
    if (!c->done()) return false;
    --(c->mode() == HttpConnection::Mode::kServe ? serving_ : rejecting_);
    return true;
  });
  connections_.erase(finished, connections_.end());
  counters_.connections_open.store(static_cast<uint64_t>(serving_ + rejecting_), std::memory_order_relaxed);
}

}  // namespace memkv::http
