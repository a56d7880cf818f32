#include "doctor/path_probe.h"

#include <unistd.h>

#include <chrono>

#include "client/client_from_config.h"
#include "memkv/client.h"

namespace memkv::doctor {
namespace {

using SteadyClock = std::chrono::steady_clock;

double Seconds(SteadyClock::time_point since) {
  return std::chrono::duration<double>(SteadyClock::now() - since).count();
}

std::vector<uint8_t> Block(uint64_t size, uint32_t seed) {
  std::vector<uint8_t> v(size);
  uint32_t x = seed * 2654435761u + 7;
  for (uint64_t i = 0; i < size; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

ClientOptions BaseOptions(const PathProbeOptions& o, const char* transport) {
  ClientOptions c;
  c.servers = {o.peer};
  c.auth_key_hex = o.auth_key_hex;
  c.transport = transport;
  c.num_connections = 1;
  c.timeout_ms = o.timeout_ms;
  c.connect_timeout_ms = std::min<uint32_t>(o.timeout_ms, 5000);
  c.rdma_devices = o.devices;
  c.rdma_mtu = o.mtu;
  c.rdma_retry_count = o.retry_count;
  c.rdma_timeout = o.rdma_timeout;
  return c;
}

}  // namespace

double PathProbeResult::WriteGbps() const {
  return write_seconds > 0 ? static_cast<double>(bytes / 2) * 8 / write_seconds / 1e9 : 0;
}

double PathProbeResult::ReadGbps() const {
  return read_seconds > 0 ? static_cast<double>(bytes / 2) * 8 / read_seconds / 1e9 : 0;
}

PathProbeResult RunPathProbe(const PathProbeOptions& o, verbs::Provider& provider) {
  PathProbeResult r;
  // TCP first: is the server there at all, and does it take our key?
  Result<std::unique_ptr<Client>> tcp = client::CreateClientWithVerbs(BaseOptions(o, "tcp"), provider);
  if (!tcp.ok()) {
    r.tcp = tcp.status();
  } else {
    Result<bool> present = (*tcp)->Exists("memkv-doctor/probe");
    r.tcp = present.ok() ? Status::Ok() : present.status();
  }

  Result<std::unique_ptr<Client>> rdma = client::CreateClientWithVerbs(BaseOptions(o, "rdma"), provider);
  if (!rdma.ok()) {
    r.rdma = rdma.status();
    return r;
  }
  Client& client = **rdma;
  const std::string prefix = "memkv-doctor/" + std::to_string(::getpid()) + "/";
  std::vector<std::vector<uint8_t>> blocks;
  for (uint32_t i = 0; i < o.blocks; ++i) blocks.push_back(Block(o.block_bytes, i));

  auto note_failure = [&](const Status& s) {
    if (r.rdma.ok()) r.rdma = s;
    if (s.message().find("IBV_WC_RETRY_EXC_ERR") != std::string::npos) r.retry_exhausted = true;
  };
  std::vector<bool> written(o.blocks, false);
  auto start = SteadyClock::now();
  for (uint32_t i = 0; i < o.blocks; ++i) {
    Status s = client.Put(prefix + std::to_string(i), blocks[i]);
    if (s.ok()) {
      written[i] = true;
    } else {
      note_failure(s);
      // A refused Connect or a dead path fails every block alike: stop early.
      if (s.code() == StatusCode::kFailedPrecondition || r.retry_exhausted) break;
    }
  }
  r.write_seconds = Seconds(start);
  std::vector<uint8_t> buffer(o.block_bytes);
  start = SteadyClock::now();
  for (uint32_t i = 0; i < o.blocks; ++i) {
    if (!written[i]) {
      ++r.blocks_failed;
      continue;
    }
    Result<size_t> n = client.GetInto(prefix + std::to_string(i), buffer);
    if (n.ok() && *n == blocks[i].size() && buffer == blocks[i]) {
      ++r.blocks_ok;
    } else {
      ++r.blocks_failed;
      note_failure(n.ok() ? Corruption("block " + std::to_string(i) + " came back different") : n.status());
    }
  }
  r.read_seconds = Seconds(start);
  for (uint32_t i = 0; i < o.blocks; ++i) {
    if (written[i]) (void)client.Delete(prefix + std::to_string(i));
  }
  ClientStats stats = client.Stats();
  r.bytes = stats.rdma_bytes;
  r.rdma_path = stats.rdma_path;
  r.rdma_accepted = !stats.rdma_path.empty();
  r.completion_errors = stats.completion_errors;
  if (r.rdma.ok() && stats.rdma_ops == 0 && o.blocks > 0) {
    r.rdma = Internal("no block moved by RDMA although no operation failed");
  }
  return r;
}

}  // namespace memkv::doctor
