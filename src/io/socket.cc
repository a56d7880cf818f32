#include "io/socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <climits>
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/errno_text.h"

namespace memkv::io {
namespace {

// Waits for `events` on fd until the deadline. Ok, or DeadlineExceeded.
Status WaitFor(int fd, short events, Nanos deadline_ns, const char* what) {
  for (;;) {
    Nanos left = deadline_ns - MonotonicNanos();
    if (left <= 0) return DeadlineExceeded(std::string(what) + " did not complete before the deadline");
    pollfd p{fd, events, 0};
    int ms = static_cast<int>(std::min<Nanos>((left + 999'999) / 1'000'000, 1'000'000));
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return Status::Ok();
    if (rc < 0 && errno != EINTR) return Internal(std::string("poll: ") + ErrnoMessage(errno));
  }
}

}  // namespace

Status SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Internal(std::string("fcntl(O_NONBLOCK): ") + ErrnoMessage(errno));
  }
  return Status::Ok();
}

Status SetNoDelay(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
    return Internal(std::string("setsockopt(TCP_NODELAY): ") + ErrnoMessage(errno));
  }
  return Status::Ok();
}

Result<UniqueFd> ConnectTcp(const std::string& host, uint16_t port, Nanos deadline_ns) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gai != 0) return Unavailable("cannot resolve " + where + ": " + gai_strerror(gai));
  Status last = Unavailable("no address for " + where);
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last = Unavailable("socket() for " + where + ": " + ErrnoMessage(errno));
      continue;
    }
    int rc = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
    if (rc < 0 && errno != EINPROGRESS) {
      last = Unavailable("connect to " + where + ": " + ErrnoMessage(errno));
      continue;
    }
    if (rc < 0) {
      Status waited = WaitFor(fd.get(), POLLOUT, deadline_ns, ("connect to " + where).c_str());
      if (!waited.ok()) {
        last = waited;
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        last = Unavailable("connect to " + where + ": " + ErrnoMessage(err));
        continue;
      }
    }
    ::freeaddrinfo(res);
    MEMKV_RETURN_IF_ERROR(SetNoDelay(fd.get()));
    return fd;
  }
  ::freeaddrinfo(res);
  return last;
}

Result<UniqueFd> ListenTcp(const std::string& host, uint16_t port, int backlog) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gai != 0) return InvalidArgument("cannot resolve listen address " + where + ": " + gai_strerror(gai));
  UniqueFd fd(::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    ::freeaddrinfo(res);
    return Internal("socket(): " + ErrnoMessage(errno));
  }
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), res->ai_addr, res->ai_addrlen) < 0) {
    int err = errno;
    ::freeaddrinfo(res);
    return Unavailable("bind " + where + ": " + ErrnoMessage(err) +
                       (err == EADDRINUSE ? " (another process listens there; stop it or pick another port)" : ""));
  }
  ::freeaddrinfo(res);
  if (::listen(fd.get(), backlog) < 0) return Internal("listen " + where + ": " + ErrnoMessage(errno));
  return fd;
}

Result<uint16_t> LocalPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) < 0) {
    return Internal("getsockname: " + ErrnoMessage(errno));
  }
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

size_t AdvanceIov(std::span<iovec> iov, size_t first, size_t n) {
  while (first < iov.size() && n > 0) {
    size_t take = std::min(n, iov[first].iov_len);
    iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + take;
    iov[first].iov_len -= take;
    n -= take;
    if (iov[first].iov_len == 0) ++first;
  }
  while (first < iov.size() && iov[first].iov_len == 0) ++first;
  return first;
}

Status SendAll(int fd, std::span<iovec> iov, Nanos deadline_ns) {
  size_t first = AdvanceIov(iov, 0, 0);
  while (first < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n >= 0) {
      first = AdvanceIov(iov, first, static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      MEMKV_RETURN_IF_ERROR(WaitFor(fd, POLLOUT, deadline_ns, "send"));
      continue;
    }
    return Unavailable("send: " + ErrnoMessage(errno));
  }
  return Status::Ok();
}

Status RecvAll(int fd, std::span<iovec> iov, Nanos deadline_ns) {
  size_t first = AdvanceIov(iov, 0, 0);
  while (first < iov.size()) {
    ssize_t n = ::readv(fd, iov.data() + first, static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX)));
    if (n > 0) {
      first = AdvanceIov(iov, first, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return Unavailable("connection closed by peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      MEMKV_RETURN_IF_ERROR(WaitFor(fd, POLLIN, deadline_ns, "receive"));
      continue;
    }
    return Unavailable("receive: " + ErrnoMessage(errno));
  }
  return Status::Ok();
}

}  // namespace memkv::io
