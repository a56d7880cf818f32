// TCP socket helpers shared by the client and the server. Every blocking-style
// call takes an absolute deadline (MonotonicNanos() clock) and waits with
// poll(2), so no call can hang past it. Sockets are always non-blocking.
// Free functions; thread-safe as far as the fd is used by one thread.
#ifndef MEMKV_IO_SOCKET_H_
#define MEMKV_IO_SOCKET_H_

#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <string>

#include "base/clock.h"
#include "base/unique_fd.h"
#include "memkv/status.h"

namespace memkv::io {

// Resolves host (numeric or name) and connects; TCP_NODELAY on. DeadlineExceeded
// or Unavailable (naming host:port and the errno text) on failure.
Result<UniqueFd> ConnectTcp(const std::string& host, uint16_t port, Nanos deadline_ns);

// Binds and listens (SO_REUSEADDR); port 0 picks a free port.
Result<UniqueFd> ListenTcp(const std::string& host, uint16_t port, int backlog);
Result<uint16_t> LocalPort(int fd);

Status SetNonBlocking(int fd);
Status SetNoDelay(int fd);

// Writes every byte of the iovecs (the array is modified to track progress).
// Unavailable if the peer goes away, DeadlineExceeded past the deadline.
Status SendAll(int fd, std::span<iovec> iov, Nanos deadline_ns);
// Reads exactly the iovecs' total length. Unavailable on EOF or reset.
Status RecvAll(int fd, std::span<iovec> iov, Nanos deadline_ns);
inline Status RecvAll(int fd, void* data, size_t size, Nanos deadline_ns) {
  iovec v{data, size};
  return RecvAll(fd, std::span<iovec>(&v, 1), deadline_ns);
}

// Advances an iovec array past `n` consumed bytes; returns the first
// unfinished element's index (== iov.size() when all are done).
size_t AdvanceIov(std::span<iovec> iov, size_t first, size_t n);

}  // namespace memkv::io

#endif  // MEMKV_IO_SOCKET_H_
