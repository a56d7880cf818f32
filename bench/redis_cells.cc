#include "bench/redis_cells.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <span>
#include <string_view>

#include "bench/redis_reference.h"

namespace memkv::bench {
namespace {

// Everything the passes of one cell share.
struct RedisCellContext {
  std::vector<RespConnection>* conns;
  const std::vector<std::string>* keys;
  const Payloads* payloads;
  CellPlan plan;
  std::string name;  // "2 MiB x4 batch 16"
};

DriveSpec SpecFor(const RedisCellContext& c, const char* op) {
  DriveSpec spec{c.plan.conns, c.plan.seconds, c.payloads->size_bytes() * c.plan.batch,
                 std::string("redis ") + op + " " + c.name};
  spec.server_pid = c.plan.server_pid;
  return spec;
}

Status Mismatch(std::string_view key, uint64_t want, size_t got) {
  return Corruption("redis GET '" + std::string(key) + "' returned " + std::to_string(got) +
                    " bytes that differ from the " + std::to_string(want) + " set");
}

CellResult TimedSet(const RedisCellContext& c, uint64_t* written) {
  std::atomic<uint64_t> next{0};
  const uint64_t keys = c.payloads->keys();
  const uint32_t batch = c.plan.batch;
  std::vector<BatchArgs> args(c.plan.conns);
  CellResult r = Drive(SpecFor(c, "put"), nullptr, [&](uint32_t t) {
    const uint64_t first = next.fetch_add(batch, std::memory_order_relaxed);
    BatchArgs& a = args[t];
    a.ForPut(*c.keys, *c.payloads, first, batch);
    return (*c.conns)[t].SetBatch(a.keys, a.values);
  });
  *written = std::min(next.load(), keys);
  return r;
}

uint64_t Fill(const RedisCellContext& c) {
  return ForEachItem(c.plan.conns, c.payloads->keys(), "redis fill " + c.name, [&](uint32_t t, uint64_t i) {
    return (*c.conns)[t].Set((*c.keys)[i], c.payloads->Value(i));
  });
}

CellResult TimedGet(const RedisCellContext& c, uint64_t written) {
  std::atomic<uint64_t> next{0};
  const uint32_t batch = c.plan.batch;
  std::vector<BatchArgs> args(c.plan.conns);
  return Drive(SpecFor(c, "get"), nullptr, [&](uint32_t t) {
    const uint64_t first = next.fetch_add(batch, std::memory_order_relaxed);
    BatchArgs& a = args[t];
    a.ForGet(*c.keys, *c.payloads, first, batch, written, t);
    MEMKV_RETURN_IF_ERROR((*c.conns)[t].GetBatchInto(a.keys, a.buffers, &a.sizes));
    if (std::optional<size_t> j = a.FirstBadValue(*c.payloads, first, written)) {
      return Mismatch(a.keys[*j], c.payloads->size_bytes(), a.sizes[*j]);
    }
    return Status::Ok();
  });
}

}  // namespace

Result<RedisCells> RedisTarget::Run(const CellPlan& plan, const Payloads& payloads,
                                    const std::vector<std::string>& keys) const {
  std::vector<RespConnection> conns;
  conns.reserve(plan.conns);
  for (uint32_t t = 0; t < plan.conns; ++t) {
    MEMKV_ASSIGN_OR_RETURN(RespConnection conn, RespConnection::Connect(port_));
    conns.push_back(std::move(conn));
  }
  MEMKV_ASSIGN_OR_RETURN(RespConnection control, RespConnection::Connect(port_));
  CellPlan redis_plan = plan;
  redis_plan.server_pid = pid_;
  const RedisCellContext c{&conns, &keys, &payloads, redis_plan, CellName(plan, payloads)};
  RedisCells cells;
  uint64_t written = payloads.keys();
  if (plan.put) {
    cells.put = TimedSet(c, &written);
  } else {
    cells.other_errors += Fill(c);
  }
  if (plan.get && written > 0) cells.get = TimedGet(c, written);
  if (Result<std::string> flushed = control.Command({"FLUSHALL"}); !flushed.ok()) {
    std::fprintf(stderr, "error: redis FLUSHALL after %s: %s\n", c.name.c_str(),
                 flushed.status().ToString().c_str());
    ++cells.other_errors;
  }
  return cells;
}

}  // namespace memkv::bench
