// The memkv side of a cell: one memkv::Client shared by N threads, with
// num_connections = N + 1 so that all N can put at once (the client keeps one
// connection per server that stores cannot take: docs/client-library.md,
// "Loads before stores"), each doing synchronous Put, then GetInto into its own
// preallocated buffer; with a batch of B > 1, BatchPut and BatchGetInto of B
// distinct keys per call instead (thread t's buffers are
// payloads.Buffer(t * B + j)).
//
// One size x connections cell runs, in order:
//   put   timed; thread keys cycle over the working set (Payloads::keys())
//         (with --ops get only: an untimed fill of the whole working set)
//   verify untimed; the first get of every key written, compared byte-exact
//   get   timed; every value's length and edges checked
//   delete untimed; frees the pool for the next cell
// Keys are unique per run, size and connection count, so every timed put is
// a fresh insert rather than an overwrite of another cell's key (until the
// put cycles round its working set).
//
// Thread-safety: Run() is called by one thread at a time; it starts its own.
#ifndef MEMKV_BENCH_MEMKV_TARGET_H_
#define MEMKV_BENCH_MEMKV_TARGET_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/measure.h"
#include "bench/payload.h"
#include "memkv/client.h"

namespace memkv::bench {

struct MemkvCells {
  std::optional<CellResult> put;  // absent when put was not asked for
  std::optional<CellResult> get;  // absent when get was not asked for
  uint64_t keys_verified = 0;     // keys whose first get was compared byte-exact
  uint64_t verify_errors = 0;     // misses, failures and wrong bytes in that pass
  uint64_t other_errors = 0;      // fill and delete failures
  uint64_t connections_opened = 0;
};

struct CellPlan {
  uint32_t conns = 1;
  double seconds = 1.0;
  bool put = true;
  bool get = true;
  uint32_t batch = 1;    // keys per call; at most payloads.keys()
  pid_t server_pid = 0;  // the spawned server, for its CPU time; 0: unknown
};

// The name of a cell in progress lines and errors: "2 MiB x4", "4 KiB x16 batch 16".
std::string CellName(const CellPlan& plan, const Payloads& payloads);

// One thread's arguments of a batch call (memkv's BatchPut / BatchGetInto,
// Redis's pipelines), reused call after call so a timed call allocates
// nothing once the vectors have grown.
struct BatchArgs {
  std::vector<std::string_view> keys;
  std::vector<std::span<const uint8_t>> values;
  std::vector<std::span<uint8_t>> buffers;
  std::vector<size_t> sizes;

  // keys[first + j] (round the working set), j < batch, with their values.
  void ForPut(const std::vector<std::string>& names, const Payloads& payloads, uint64_t first, uint32_t batch);
  // keys[first + j] (round the `written` keys), j < batch, each read into
  // thread `thread`'s buffer payloads.Buffer(thread * batch + j).
  void ForGet(const std::vector<std::string>& names, const Payloads& payloads, uint64_t first, uint32_t batch,
              uint64_t written, uint32_t thread);
  // After a get filled buffers[j] with sizes[j] bytes: the first j whose
  // bytes fail Payloads::QuickCheck, or nullopt.
  std::optional<size_t> FirstBadValue(const Payloads& payloads, uint64_t first, uint64_t written) const;
};

class MemkvTarget {
 public:
  // `run_tag` makes this run's keys distinct from any other run's on shared servers.
  MemkvTarget(std::vector<std::string> servers, std::string auth_key_hex, std::string run_tag);

  // Touches every block of a fresh server's pool once, untimed: fills
  // `pool_bytes` with 2 MiB values (the oldest are evicted as it fills) and
  // deletes them. A server that has been serving for a while has touched its
  // pool; without this the first pass over each block pays the kernel's
  // first-touch page faults inside the timed puts (see --cold).
  Status WarmPool(uint64_t pool_bytes, uint32_t threads) const;

  // Runs one cell against `payloads` (whose buffers cover plan.conns threads
  // of plan.batch buffers each).
  Result<MemkvCells> Run(const CellPlan& plan, const Payloads& payloads) const;

  // A client of the servers with `conns` connections each and the bench's
  // timeouts (--fill and --fresh drive their own passes with it).
  Result<std::unique_ptr<Client>> Connect(uint32_t conns) const;
  // "memkv-bench/<run tag>/<cell>/<i>" for i in [0, count): unique per run and cell.
  std::vector<std::string> MakeKeys(const std::string& cell, uint64_t count) const;
  // The keys of the sweep's cell of `payloads` at `conns` connections (the
  // Redis cells use the same names).
  std::vector<std::string> CellKeys(const Payloads& payloads, uint32_t conns) const;

 private:

  std::vector<std::string> servers_;
  std::string auth_key_hex_;
  std::string run_tag_;
};

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_MEMKV_TARGET_H_
