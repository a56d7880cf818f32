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
  DriveSpec spec{c.plan.conns, c.plan.seconds, c.payloads->size_bytes() * c.plan.batch,
                 std::string("memkv ") + op + " " + c.name};
  spec.server_pid = c.plan.server_pid;
  return spec;
}

// The first failed item of a batch call, naming its key.
Status FirstFailure(const std::string& call, const BatchResult& r, const std::vector<std::string_view>& keys) {
  if (r.statuses.size() != keys.size()) {
    return Internal(call + " answered " + std::to_string(r.statuses.size()) + " statuses for " +
                    std::to_string(keys.size()) + " keys");
  }
  for (size_t j = 0; j < keys.size(); ++j) {
    if (!r.statuses[j].ok()) return r.statuses[j].WithContext(call + " '" + std::string(keys[j]) + "'");
  }
  return Status::Ok();
}

// Timed puts; returns the result and how many distinct keys were written.
CellResult TimedPut(const CellContext& c, uint64_t* written) {
  std::atomic<uint64_t> next{0};
  const uint64_t keys = c.payloads->keys();
  const uint32_t batch = c.plan.batch;
  std::vector<BatchArgs> args(c.plan.conns);
  CellResult r = Drive(
      SpecFor(c, "put"), [&](uint32_t) { (void)c.client->Exists("memkv-bench/warmup"); },
      [&](uint32_t t) {
        const uint64_t first = next.fetch_add(batch, std::memory_order_relaxed);
        if (batch == 1) return c.client->Put((*c.keys)[first % keys], c.payloads->Value(first % keys));
        BatchArgs& a = args[t];
        a.ForPut(*c.keys, *c.payloads, first, batch);
        return FirstFailure("BatchPut", c.client->BatchPut(a.keys, a.values), a.keys);
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
  const uint32_t batch = c.plan.batch;
  std::vector<BatchArgs> args(c.plan.conns);
  return Drive(SpecFor(c, "get"), nullptr, [&](uint32_t t) {
    const uint64_t first = next.fetch_add(batch, std::memory_order_relaxed);
    if (batch == 1) {
      const uint64_t i = first % written;
      std::span<uint8_t> buffer = c.payloads->Buffer(t);
      Result<size_t> got = c.client->GetInto((*c.keys)[i], buffer);
      if (!got.ok()) return got.status();
      if (!c.payloads->QuickCheck(i, buffer.first(*got))) {
        return Corruption(ByteMismatch((*c.keys)[i], c.payloads->size_bytes(), *got));
      }
      return Status::Ok();
    }
    BatchArgs& a = args[t];
    a.ForGet(*c.keys, *c.payloads, first, batch, written, t);
    MEMKV_RETURN_IF_ERROR(FirstFailure("BatchGetInto", c.client->BatchGetInto(a.keys, a.buffers, &a.sizes), a.keys));
    if (std::optional<size_t> j = a.FirstBadValue(*c.payloads, first, written)) {
      return Corruption(ByteMismatch(std::string(a.keys[*j]), c.payloads->size_bytes(), a.sizes[*j]));
    }
    return Status::Ok();
  });
}

uint64_t DeleteAll(const CellContext& c, uint64_t written) {
  return ForEachItem(c.plan.conns, written, "memkv delete " + c.name,
                     [&](uint32_t, uint64_t i) { return c.client->Delete((*c.keys)[i]); });
}

}  // namespace

std::string CellName(const CellPlan& plan, const Payloads& payloads) {
  return FormatSize(payloads.size_bytes()) + " x" + std::to_string(plan.conns) +
         (plan.batch > 1 ? " batch " + std::to_string(plan.batch) : "");
}

void BatchArgs::ForPut(const std::vector<std::string>& names, const Payloads& payloads, uint64_t first,
                       uint32_t batch) {
  keys.clear();
  values.clear();
  for (uint32_t j = 0; j < batch; ++j) {
    const uint64_t i = (first + j) % payloads.keys();
    keys.push_back(names[i]);
    values.push_back(payloads.Value(i));
  }
}

void BatchArgs::ForGet(const std::vector<std::string>& names, const Payloads& payloads, uint64_t first,
                       uint32_t batch, uint64_t written, uint32_t thread) {
  keys.clear();
  buffers.clear();
  for (uint32_t j = 0; j < batch; ++j) {
    keys.push_back(names[(first + j) % written]);
    buffers.push_back(payloads.Buffer(thread * batch + j));
  }
}

std::optional<size_t> BatchArgs::FirstBadValue(const Payloads& payloads, uint64_t first, uint64_t written) const {
  for (size_t j = 0; j < keys.size(); ++j) {
    if (!payloads.QuickCheck((first + j) % written, buffers[j].first(sizes[j]))) return j;
  }
  return std::nullopt;
}

MemkvTarget::MemkvTarget(std::vector<std::string> servers, std::string auth_key_hex, std::string run_tag)
    : servers_(std::move(servers)), auth_key_hex_(std::move(auth_key_hex)), run_tag_(std::move(run_tag)) {}

std::vector<std::string> MemkvTarget::MakeKeys(const std::string& cell, uint64_t count) const {
  std::vector<std::string> keys;
  keys.reserve(count);
  const std::string prefix = "memkv-bench/" + run_tag_ + "/" + cell + "/";
  for (uint64_t i = 0; i < count; ++i) keys.push_back(prefix + std::to_string(i));
  return keys;
}

std::vector<std::string> MemkvTarget::CellKeys(const Payloads& payloads, uint32_t conns) const {
  return MakeKeys(std::to_string(payloads.size_bytes()) + "/" + std::to_string(conns), payloads.keys());
}

Result<std::unique_ptr<Client>> MemkvTarget::Connect(uint32_t conns) const {
  ClientOptions options;
  options.servers = servers_;
  options.auth_key_hex = auth_key_hex_;
  options.transport = "tcp";
  // N threads on N connections: stores may hold num_connections - 1 of them,
  // and N put threads on N - 1 connections would take turns (each release
  // waking a waiter) where Redis's N threads each have their own.
  options.num_connections = conns + 1;
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
  const std::vector<std::string> keys = CellKeys(payloads, plan.conns);
  const CellContext c{client.get(), &keys, &payloads, plan, CellName(plan, payloads)};

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
