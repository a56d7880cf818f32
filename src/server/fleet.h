// FleetState: this server as one of a fleet (docs/fleet.md): its id, the
// capacity and placement weight it offers, and whether it takes new keys.
//
// Identity. In file and direct mode the id is the drives' store UUID (kept
// in every drive's superblock, so a server that moves to another address
// with its volume keeps its id). In memory mode it is fleet.id, else the
// data directory's `server-id` file (made on the first start, read after),
// else a random UUID made at start (it changes at every restart).
//
// Draining: set and cleared by the admin routes (POST /v1/admin/drain,
// /v1/admin/undrain), held here only (a restart comes back serving). While
// draining every put is answered Draining; reads and deletes are served.
//
// Busy: the bytes of puts accepted and waiting for the drives (QueuedPut
// tokens, held from a put's commit until its completion has run or been
// dropped). While they are at or above storage.busy_queue_size, new puts are
// answered Busy; gets are never shed.
//
// Thread-safety: every method may be called from any thread (atomics; the
// identity is immutable after construction, the address set before serving).
#ifndef MEMKV_SERVER_FLEET_H_
#define MEMKV_SERVER_FLEET_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "config/server_config.h"
#include "memkv/status.h"
#include "proto/messages.h"

namespace memkv::server {

struct FleetIdentity {
  std::string id;
  uint64_t capacity_bytes = 0;  // the DRAM pool plus the drives' usable bytes
  uint64_t weight = 0;          // fleet.weight; 0: capacity_bytes
  // Where the id came from, for the start-up log: "the drives' store UUID",
  // "fleet.id", "<dir>/server-id", "made at start (changes at every restart)".
  std::string source;
};

// The server id of memory mode: fleet.id when set; else, with a data
// directory, its `server-id` file (created with a new random UUID when
// missing); else a random UUID. `source` says which (FleetIdentity::source).
Result<std::string> MemoryModeServerId(const config::FleetConfig& fleet, const std::string& data_dir,
                                       std::string* source);

class FleetState {
 public:
  // `busy_queue_bytes`: 0 never Busy.
  FleetState(FleetIdentity identity, uint64_t busy_queue_bytes);
  FleetState(const FleetState&) = delete;
  FleetState& operator=(const FleetState&) = delete;

  const FleetIdentity& identity() const { return identity_; }
  const std::string& id() const { return identity_.id; }
  // The placement weight clients use: fleet.weight, else the capacity.
  uint64_t effective_weight() const { return identity_.weight != 0 ? identity_.weight : identity_.capacity_bytes; }
  // "HOST:PORT" of the data listener, named in the Draining message. Before serving.
  void set_address(std::string address) { address_ = std::move(address); }
  const std::string& address() const { return address_; }

  bool draining() const { return draining_.load(std::memory_order_acquire); }
  // Returns the previous state.
  bool SetDraining(bool draining) { return draining_.exchange(draining, std::memory_order_acq_rel); }

  uint64_t busy_queue_bytes() const { return busy_queue_bytes_; }
  uint64_t queued_bytes() const { return queued_bytes_.load(std::memory_order_acquire); }
  bool busy() const { return busy_queue_bytes_ != 0 && queued_bytes() >= busy_queue_bytes_; }

  // Ok, or the status a put is answered with now: Draining (checked first),
  // else Busy. Counts what it sheds.
  Status AdmitPut();
  uint64_t shed_draining() const { return shed_draining_.load(std::memory_order_relaxed); }
  uint64_t shed_busy() const { return shed_busy_.load(std::memory_order_relaxed); }

  // The ServerInfo answer (proto/messages.h).
  proto::ServerInfo Info() const;

  // Bytes of a put waiting for the drives, counted while it lives.
  class QueuedPut {
   public:
    QueuedPut() = default;
    QueuedPut(FleetState* fleet, uint64_t bytes) : fleet_(fleet), bytes_(bytes) {
      if (fleet_ != nullptr) fleet_->queued_bytes_.fetch_add(bytes_, std::memory_order_acq_rel);
    }
    QueuedPut(QueuedPut&& o) noexcept : fleet_(o.fleet_), bytes_(o.bytes_) { o.fleet_ = nullptr; }
    QueuedPut& operator=(QueuedPut&& o) noexcept {
      if (this != &o) {
        Release();
        fleet_ = o.fleet_;
        bytes_ = o.bytes_;
        o.fleet_ = nullptr;
      }
      return *this;
    }
    ~QueuedPut() { Release(); }
    void Release() {
      if (fleet_ != nullptr) fleet_->queued_bytes_.fetch_sub(bytes_, std::memory_order_acq_rel);
      fleet_ = nullptr;
    }

   private:
    FleetState* fleet_ = nullptr;
    uint64_t bytes_ = 0;
  };

 private:
  const FleetIdentity identity_;
  const uint64_t busy_queue_bytes_;
  std::string address_;
  std::atomic<bool> draining_{false};
  std::atomic<uint64_t> queued_bytes_{0};
  std::atomic<uint64_t> shed_draining_{0};
  std::atomic<uint64_t> shed_busy_{0};
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_FLEET_H_
