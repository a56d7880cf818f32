// The path check of `memkv doctor --peer HOST:PORT`: connect to a running
// MemKV server exactly as a client would (MEMKV_TRANSPORT=rdma, the
// client's RDMA settings, the server's marking from its Connect answer), move
// a short series of blocks by RDMA WRITE and READ, and report what happened:
// whether RDMA was accepted, the attributes it ran with, throughput, and the
// first failure by verbs status (an MTU hop drop shows as retry exhaustion,
// IBV_WC_RETRY_EXC_ERR). A TCP session to the same server tells a dead
// server from a broken RDMA path.
#ifndef MEMKV_DOCTOR_PATH_PROBE_H_
#define MEMKV_DOCTOR_PATH_PROBE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "memkv/status.h"
#include "verbs/verbs.h"

namespace memkv::doctor {

struct PathProbeOptions {
  std::string peer;          // host:port of the server's data listener
  std::string auth_key_hex;  // the server's key
  std::vector<std::string> devices;  // local HCAs (MEMKV_RDMA_DEVICES); empty: the first present
  uint32_t mtu = 4096;               // MEMKV_RDMA_MTU
  uint32_t retry_count = 6;
  uint32_t rdma_timeout = 14;
  uint64_t block_bytes = 1 << 20;
  uint32_t blocks = 16;
  uint32_t timeout_ms = 10000;       // per operation
};

struct PathProbeResult {
  Status tcp;                  // a TCP session to the server (Ok: reachable, key accepted)
  Status rdma;                 // Ok, or why RDMA did not carry the transfer
  bool rdma_accepted = false;  // the server accepted the RDMA offer
  bool retry_exhausted = false;  // IBV_WC_RETRY_EXC_ERR was seen
  std::string rdma_path;       // device, GID index, traffic class, SL, MTU, QPs
  uint32_t blocks_ok = 0;      // written and read back byte-exact over RDMA
  uint32_t blocks_failed = 0;
  uint64_t bytes = 0;          // moved by RDMA (both directions)
  double write_seconds = 0;
  double read_seconds = 0;
  std::map<int, uint64_t> completion_errors;  // by ibv_wc_status

  double WriteGbps() const;
  double ReadGbps() const;
};

PathProbeResult RunPathProbe(const PathProbeOptions& options, verbs::Provider& provider);

}  // namespace memkv::doctor

#endif  // MEMKV_DOCTOR_PATH_PROBE_H_
