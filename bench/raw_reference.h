// The reference: the plainest request/response stream TCP allows, in the
// same shape as memkv's synchronous ops, so the ratio memkv/raw says what
// memkv's framing, authentication, checksums, event loop and store cost over
// the kernel's own loopback TCP path.
//
// Protocol, per connection: the client first sends one mode byte ('P', 'G';
// 'p', 'g' tag only; 's', 'h' tag and payload checksums, see RawOp; 'B', 'D'
// pipelined put and get).
//   put: client sends an 8-byte length L and L bytes; the server reads them
//        into a per-connection buffer and answers 1 byte.
//   get: client sends an 8-byte length L; the server answers L bytes from a
//        buffer.
// Both ends: blocking sockets, TCP_NODELAY, one thread per connection.
// Pipelined ('B' put, 'D' get; --batch): the same requests and answers, but
// the client sends N requests before reading N answers, and the server reads
// into one buffer whatever has arrived and sends the answers it owes in one
// write once nothing more waits to be read.
//
// The server is a forked child process (a separate process, as memkv is):
// RawReferenceServer::Start must run before the benchmark starts any thread,
// because only the forking thread exists in the child.
#ifndef MEMKV_BENCH_RAW_REFERENCE_H_
#define MEMKV_BENCH_RAW_REFERENCE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "bench/measure.h"
#include "bench/payload.h"
#include "memkv/status.h"

namespace memkv::bench {

class RawReferenceServer {
 public:
  // Forks the server, listening on 127.0.0.1 port 0; requests longer than
  // `max_value_bytes` close the connection.
  static Result<std::unique_ptr<RawReferenceServer>> Start(uint64_t max_value_bytes);
  ~RawReferenceServer();  // SIGTERM and wait
  RawReferenceServer(const RawReferenceServer&) = delete;
  RawReferenceServer& operator=(const RawReferenceServer&) = delete;

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

 private:
  RawReferenceServer(pid_t pid, uint16_t port) : pid_(pid), port_(port) {}
  pid_t pid_;
  uint16_t port_;
};

// The authenticated variants do memkv's per-request authentication work and
// nothing else: every message starts with a 40-byte header (length and the
// payload's XXH3-64) and an HMAC-SHA256 tag over it, which the receiver
// checks. kPutTag / kGetTag stop there (the tag alone); kPutTagSum /
// kGetTagSum also hash the payload on both ends, as memkv does to bind the
// payload to the tag. Run beside kPut / kGet they measure what each costs.
enum class RawOp { kPut, kGet, kPutTag, kGetTag, kPutTagSum, kGetTagSum };

struct RawCellSpec {
  uint32_t conns = 1;
  double seconds = 1.0;
  // Requests per call, sent back to back before their answers are read
  // (kPut and kGet only, on a pipelined connection when > 1; the
  // authenticated variants take 1). Thread t receives into
  // payloads.Buffer(t * batch + j).
  uint32_t batch = 1;
  pid_t server_pid = 0;  // RawReferenceServer::pid(), for its CPU time; 0: not sampled
};

// One timed cell against the reference on `port`, measured by Drive() like
// the memkv cells: `conns` threads, one connection each (opened before the
// clock starts), values from and into `payloads`.
CellResult RunRawCell(uint16_t port, RawOp op, const RawCellSpec& spec, const Payloads& payloads);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_RAW_REFERENCE_H_
