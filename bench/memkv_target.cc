#include "bench/memkv_target.h"

#include <algorithm>
#include <atomic>

#include "base/units.h"

namespace memkv::bench {
namespace {

// Generous: 64 connections of 16 MiB each queue a GiB on loopback.
constexpr uint32_t kOpTimeoutMs = 30000;
constexpr uint32_t kConnectTimeoutMs = 5000;
constexpr uint64_t kWarmValueBytes = 2ULL << 20;  // one pool block

// Everything the passes of one cell share.
struct CellContext {
  Client* client;
  const std::vector<std::string>* keys;
  const Payloads* payloads;
  CellPlan plan;
  std::string name;  // "2 MiB x4"
};

std::string ByteMismatch(const std::string& key, uint64_t want, uint64_t got) {
  return "GetInto '" + key + "' returned " + std::to_string(got) + " bytes that differ from the " +
         std::to_string(want) + " put";
}

DriveSpec SpecFor(const CellContext& c, const char* op) {
  return DriveSpec{c.plan.conns, c.plan.seconds, c.payloads->size_bytes(),
                   std::string("memkv ") + op + " " + c.name};
}

// Timed puts; returns the result and how many distinct keys were written.
CellResult TimedPut(const CellContext& c, uint64_t* written) {
  std::atomic<uint64_t> next{0};
  const uint64_t keys = c.payloads->keys();
  CellResult r = Drive(
      SpecFor(c, "put"), [&](uint32_t) { (void)c.client->Exists("memkv-bench/warmup"); },
      [&](uint32_t) {
        const uint64_t i = next.fetch_add(1, std::memory_order_relaxed) % keys;
        return c.client->Put((*c.keys)[i], c.payloads->Value(i));
      });
  *written = std::min(next.load(), keys);
  return r;
}

uint64_t Fill(const CellContext& c) {
  return ForEachItem(c.plan.conns, c.payloads->keys(), "memkv fill " + c.name,
                     [&](uint32_t, uint64_t i) { return c.client->Put((*c.keys)[i], c.payloads->Value(i)); });
}

// The first get of every written key, compared byte-exact.
uint64_t Verify(const CellContext& c, uint64_t written) {
  return ForEachItem(c.plan.conns, written, "memkv verify " + c.name, [&](uint32_t t, uint64_t i) {
    std::span<uint8_t> buffer = c.payloads->Buffer(t);
    Result<size_t> got = c.client->GetInto((*c.keys)[i], buffer);
    if (!got.ok()) return got.status();
    if (!c.payloads->FullCheck(i, buffer.first(*got))) {
      return Corruption(ByteMismatch((*c.keys)[i], c.payloads->size_bytes(), *got));
    }
    return Status::Ok();
  });
}

CellResult TimedGet(const CellContext& c, uint64_t written) {
  std::atomic<uint64_t> next{0};
  return Drive(SpecFor(c, "get"), nullptr, [&](uint32_t t) {
    const uint64_t i = next.fetch_add(1, std::memory_order_relaxed) % written;
    std::span<uint8_t> buffer = c.payloads->Buffer(t);
    Result<size_t> got = c.client->GetInto((*c.keys)[i], buffer);
    if (!got.ok()) return got.status();
    if (!c.payloads->QuickCheck(i, buffer.first(*got))) {
      return Corruption(ByteMismatch((*c.keys)[i], c.payloads->size_bytes(), *got));
    }
    return Status::Ok();
  });
}

uint64_t DeleteAll(const CellContext& c, uint64_t written) {
  return ForEachItem(c.plan.conns, written, "memkv delete " + c.name,
                     [&](uint32_t, uint64_t i) { return c.client->Delete((*c.keys)[i]); });
}

}  // namespace

MemkvTarget::MemkvTarget(std::vector<std::string> servers, std::string auth_key_hex, std::string run_tag)
    : servers_(std::move(servers)), auth_key_hex_(std::move(auth_key_hex)), run_tag_(std::move(run_tag)) {}

std::vector<std::string> MemkvTarget::MakeKeys(const std::string& cell, uint64_t count) const {
  std::vector<std::string> keys;
  keys.reserve(count);
  const std::string prefix = "memkv-bench/" + run_tag_ + "/" + cell + "/";
  for (uint64_t i = 0; i < count; ++i) keys.push_back(prefix + std::to_string(i));
  return keys;
}

Result<std::unique_ptr<Client>> MemkvTarget::Connect(uint32_t conns) const {
  ClientOptions options;
  options.servers = servers_;
  options.auth_key_hex = auth_key_hex_;
  options.transport = "tcp";
  options.num_connections = conns;
  options.timeout_ms = kOpTimeoutMs;
  options.connect_timeout_ms = kConnectTimeoutMs;
  return Client::Create(options);
}

Status MemkvTarget::WarmPool(uint64_t pool_bytes, uint32_t threads) const {
  MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Connect(threads));
  const Payloads value(kWarmValueBytes, 1, 0);
  const std::vector<std::string> keys = MakeKeys("warm", pool_bytes / kWarmValueBytes);
  const uint64_t failed = ForEachItem(threads, keys.size(), "memkv warm-up put", [&](uint32_t, uint64_t i) {
    return client->Put(keys[i], value.Value(0));
  });
  // The earliest keys were evicted to make room: NotFound is expected here.
  ForEachItem(threads, keys.size(), "memkv warm-up delete", [&](uint32_t, uint64_t i) {
    Status s = client->Delete(keys[i]);
    return s.code() == StatusCode::kNotFound ? Status::Ok() : s;
  });
  if (failed > 0) return Unavailable("warm-up: " + std::to_string(failed) + " puts failed");
  return Status::Ok();
}

Result<MemkvCells> MemkvTarget::Run(const CellPlan& plan, const Payloads& payloads) const {
  MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Connect(plan.conns));
  const std::vector<std::string> keys =
      MakeKeys(std::to_string(payloads.size_bytes()) + "/" + std::to_string(plan.conns), payloads.keys());
  const CellContext c{client.get(), &keys, &payloads, plan,
                      FormatSize(payloads.size_bytes()) + " x" + std::to_string(plan.conns)};

  MemkvCells cells;
  uint64_t written = payloads.keys();
  if (plan.put) {
    cells.put = TimedPut(c, &written);
  } else {
    cells.other_errors += Fill(c);
  }
  cells.keys_verified = written;
  cells.verify_errors = Verify(c, written);
  if (plan.get && written > 0) cells.get = TimedGet(c, written);
  cells.other_errors += DeleteAll(c, written);
  cells.connections_opened = client->Stats().connections_opened;
  return cells;
}

}  // namespace memkv::bench
