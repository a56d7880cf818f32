// TransferEngine: everything the MEMKV NIXL backend does, behind an interface
// that knows nothing of NIXL (descriptor lists in, MemKV batches out,
// completion polled). The NIXL glue (nixl_plugin.cc) only translates NIXL's
// types to these and statuses back; this part is tested without NIXL.
//
// Objects. NIXL names storage by OBJ_SEG descriptors: a device id and, when
// given, a string (metaInfo). RegisterObject maps the pair to a MemKV key:
// key_prefix + metaInfo, or key_prefix + the device id in decimal when
// metaInfo is empty. A transfer descriptor on an object carries an offset
// (NIXL's addr) and a length: the bytes at offset 0 are the value under the
// object's key; those at another offset are the value under
// "<object key>@<offset>". Each (object, offset) is one MemKV value, written
// whole and atomically and read back whole: a read's length must equal the
// stored value's, or the transfer fails naming both, and no byte of a value
// that fails its checksum reaches the buffer's owner as data.
//
// Transfers. Prepare checks a request (matching descriptor counts and
// lengths, registered objects, no two writes to one value) and fixes its
// plan; Post submits it as batches of at most batch_size descriptors to the
// client's AsyncQueue (memkv/async.h; the client's driver threads, at most
// `workers` of them for the engine's own client, carry them) and returns at
// once; Poll takes the completions that arrived (of any transfer) into their
// transfers and never blocks; a transfer may be posted again once it ended.
// Dropping a Transfer while it is in flight cancels the batches not yet
// started, never waits: a batch already on the wire finishes within the
// client's deadline (timeout_ms), and until then may still write into the
// local buffers of a read.
//
// Thread-safety: every method may be called from any thread; one Transfer
// is posted and polled by one thread at a time.
#ifndef MEMKV_NIXL_TRANSFER_ENGINE_H_
#define MEMKV_NIXL_TRANSFER_ENGINE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "memkv/client.h"
#include "memkv/status.h"
#include "nixl/settings.h"

namespace memkv::nixl {

enum class Direction {
  kWrite,  // local buffers -> MemKV (NIXL_WRITE)
  kRead,   // MemKV -> local buffers (NIXL_READ)
};

// A local (DRAM) descriptor: the bytes at [addr, addr + len).
struct LocalSpan {
  uintptr_t addr = 0;
  size_t len = 0;
};

// An object descriptor: `len` bytes at `offset` of the object registered
// under `dev_id`.
struct ObjectSpan {
  uint64_t dev_id = 0;
  uint64_t offset = 0;
  size_t len = 0;
};

enum class TransferState { kIdle, kInProgress, kDone, kFailed };

class TransferEngine;

// A prepared request. Owned by the caller (NIXL's request handle).
class Transfer {
 public:
  ~Transfer();  // cancels what has not started; never blocks
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  size_t size() const;                      // descriptors
  const std::string& key(size_t i) const;   // the MemKV key of descriptor i

 private:
  friend class TransferEngine;
  struct Job;
  explicit Transfer(std::shared_ptr<Job> job);
  std::shared_ptr<Job> job_;
};

struct TransferStatus {
  TransferState state = TransferState::kIdle;
  Status error;  // the first descriptor's error when kFailed, naming it
};

struct EngineStats {
  uint64_t transfers_posted = 0;
  uint64_t transfers_failed = 0;
  uint64_t batches = 0;
  uint64_t bytes_written = 0;  // value bytes of descriptors written
  uint64_t bytes_read = 0;
};

class TransferEngine {
 public:
  struct CancelHub;  // shared with the Transfers' jobs (transfer_engine.cc)

  // A client for settings.client (Client::Create) with settings.workers as
  // its async_threads.
  static Result<std::unique_ptr<TransferEngine>> Create(const EngineSettings& settings);
  // The same around a client the caller made (its own async_threads apply).
  static Result<std::unique_ptr<TransferEngine>> Create(const EngineSettings& settings,
                                                        std::unique_ptr<Client> client);
  // Batches not started are cancelled (their transfers end failed); waits for
  // those in flight, which end within the client's deadline.
  ~TransferEngine();
  TransferEngine(const TransferEngine&) = delete;
  TransferEngine& operator=(const TransferEngine&) = delete;

  // The MemKV key of an object, as RegisterObject would map it.
  std::string ObjectKey(uint64_t dev_id, std::string_view meta_info) const;
  // The MemKV key of the bytes at `offset` of the object under `object_key`.
  static std::string ValueKey(const std::string& object_key, uint64_t offset);

  // Maps `dev_id` to its object key (replacing an earlier mapping); returns
  // the key. InvalidArgument when the key is longer than MemKV allows.
  Result<std::string> RegisterObject(uint64_t dev_id, std::string_view meta_info);
  // NotFound when `dev_id` is not registered.
  Status UnregisterObject(uint64_t dev_id);

  // Registers local memory with the client (RDMA: zero-copy puts and gets
  // from and into it; TCP: nothing to do).
  Status RegisterBuffer(std::span<uint8_t> region);
  Status UnregisterBuffer(void* base);

  // Checks the request and fixes its plan (see the file comment).
  // InvalidArgument naming the first bad descriptor.
  Result<std::unique_ptr<Transfer>> Prepare(Direction direction, std::span<const LocalSpan> local,
                                            std::span<const ObjectSpan> remote) const;
  // Queues the transfer's batches and returns. FailedPrecondition when it
  // is still in progress from an earlier Post.
  Status Post(Transfer& transfer);
  // Where it stands; never blocks.
  TransferStatus Poll(const Transfer& transfer) const;

  // Whether each key holds a value: one batch. A key that cannot be asked
  // (server unreachable) fails the call, naming it.
  Result<std::vector<bool>> Exists(std::span<const std::string> keys) const;

  EngineStats Stats() const;
  Client& client() { return *client_; }
  const EngineSettings& settings() const { return settings_; }

 private:
  TransferEngine(const EngineSettings& settings, std::unique_ptr<Client> client, std::unique_ptr<AsyncQueue> queue);
  class Batches;

  EngineSettings settings_;
  std::unique_ptr<Client> client_;
  std::shared_ptr<CancelHub> hub_;
  std::unique_ptr<Batches> batches_;  // destroyed before client_ (the destructor resets it first)
  mutable Mutex objects_mu_;
  std::unordered_map<uint64_t, std::string> objects_ MEMKV_GUARDED_BY(objects_mu_);  // dev_id -> object key
};

}  // namespace memkv::nixl

#endif  // MEMKV_NIXL_TRANSFER_ENGINE_H_
