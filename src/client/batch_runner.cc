// BatchRunner (batch_runner.h): grouping, framing and driving a batch over
// the server pools.
#include "client/batch_runner.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "base/clock.h"
#include "base/repeated_keys.h"
#include "base/log.h"
#include "client/connection.h"
#include "client/ops.h"
#include "client/membership.h"
#include "client/placement.h"
#include "client/pool.h"
#include "client/rdma.h"
#include "client/rdma_ops.h"
#include "proto/messages.h"

namespace memkv::client {
namespace {

// A server's share of a batch is spread over several connections (so several
// server threads) once it carries this many bytes per connection.
constexpr uint64_t kSpreadBytesPerFrame = 1 << 20;

// A batch frame carries at most kMaxPayloadBytes; a larger value travels
// alone (Put, Get).
Status CheckBatchValueSize(uint64_t size) {
  if (size > proto::kMaxPayloadBytes) {
    return TooLarge("value of " + std::to_string(size) + " bytes exceeds a batch frame's payload limit of " +
                    std::to_string(proto::kMaxPayloadBytes) + " bytes; put it on its own");
  }
  return Status::Ok();
}

// Splits one server's share of a batch into frames: at most kMaxBatchItems
// items and kMaxPayloadBytes of values each (`bytes_of(i)` is what item i
// adds to the frame's payload), and into up to `spread` frames of similar
// size when there are enough bytes to keep several connections busy.
template <typename BytesOf, typename MetaOf>
std::vector<std::vector<uint32_t>> SplitFrames(const std::vector<uint32_t>& items, uint32_t spread,
                                               BytesOf bytes_of, MetaOf meta_of) {
  uint64_t total = 0;
  for (uint32_t i : items) total += bytes_of(i);
  const uint64_t wanted_frames = std::clamp<uint64_t>(total / kSpreadBytesPerFrame, 1, spread);
  const uint64_t soft_bytes = wanted_frames > 1 ? (total + wanted_frames - 1) / wanted_frames : UINT64_MAX;
  std::vector<std::vector<uint32_t>> frames(1);
  uint64_t bytes = 0;
  uint64_t meta = 4;  // the item count
  for (uint32_t i : items) {
    const uint64_t b = bytes_of(i);
    const uint64_t m = meta_of(i);
    std::vector<uint32_t>& cur = frames.back();
    if (!cur.empty() && (cur.size() >= proto::kMaxBatchItems || bytes + b > proto::kMaxPayloadBytes ||
                         meta + m > proto::kMaxMetaBytes || bytes >= soft_bytes)) {
      frames.emplace_back();
      bytes = 0;
      meta = 4;
    }
    frames.back().push_back(i);
    bytes += b;
    meta += m;
  }
  return frames;
}

}  // namespace

void CountTcp(ClientCounters& counters, uint64_t bytes) {
  ClientCounters::Add(counters.tcp_ops, 1);
  ClientCounters::Add(counters.tcp_bytes, bytes);
}

void CountTransport(ClientCounters& counters, const RdmaExchange& x, uint64_t bytes) {
  if (!x.status().ok()) return;
  if (x.carried_by_rdma()) {
    ClientCounters::Add(counters.rdma_ops, 1);
    ClientCounters::Add(counters.rdma_bytes, bytes);
    if (x.zero_copy()) ClientCounters::Add(counters.rdma_zero_copy_ops, 1);
  } else {
    CountTcp(counters, bytes);
  }
}

// What item i of `call` adds to its frame's payload: a put's value; for a
// get, the room the caller gave it (a response carries at most
// kMaxPayloadBytes, so frames are sized by it).
uint64_t ItemBytes(const BatchCall& call, size_t i) {
  if (IsBatchPut(call.opcode)) return call.values[i].size();
  if (call.opcode == proto::Opcode::kBatchGet) return std::min<uint64_t>(call.buffers[i].size(), proto::kMaxPayloadBytes);
  return 0;
}

struct BatchRunner::Impl {
  // Over `view` (which has a placement), for one call.
  Impl(const ClientOptions& options, std::shared_ptr<const View> view, Nanos grace,
       const std::unique_ptr<RdmaEngine>& rdma, ClientCounters& counters)
      : options_(options), view_(std::move(view)), router_(*view_, grace),
        placement_(view_->placement ? &*view_->placement : nullptr), pools_(view_->pools), rdma_(rdma),
        counters_(counters), unplaced_(placement_ == nullptr ? view_->Unavailable() : Status::Ok()) {}

  BatchResult BatchPutImpl(std::span<const std::string_view> keys,
                           std::span<const std::span<const uint8_t>> values, std::span<const PutOptions> options) {
    BatchResult result;
    if (keys.size() != values.size()) {
      return Mismatch(options.empty() ? "BatchPut" : "BatchPutWith", keys.size(), "values", values.size());
    }
    if (!options.empty() && options.size() != keys.size()) {
      return Mismatch("BatchPutWith", keys.size(), "options", options.size());
    }
    if (std::all_of(options.begin(), options.end(), [](const PutOptions& o) { return o.empty(); })) options = {};
    // A key named more than once: only its last item is sent, and every item
    // of that key gets its status. Sent together, the items could travel in
    // different frames and land in either order.
    std::vector<size_t> last = LastOccurrences(keys);
    bool repeated = false;
    for (size_t i = 0; i < keys.size(); ++i) repeated = repeated || last[i] != i;
    if (!repeated) {
      if (options.empty()) {
        BatchCall call;
        call.opcode = proto::Opcode::kBatchPut;
        call.keys = keys;
        call.values = values;
        call.statuses = &result.statuses;
        RunBatch(&call);
      } else {
        result.statuses.assign(keys.size(), Status());
        RunPutWith(keys, values, options, &result.statuses);
      }
      return Finish(std::move(result));
    }
    std::vector<std::string_view> unique_keys;
    std::vector<std::span<const uint8_t>> unique_values;
    std::vector<PutOptions> unique_options;
    std::vector<size_t> position(keys.size());  // item i's last occurrence, in the unique lists
    for (size_t i = 0; i < keys.size(); ++i) {
      if (last[i] != i) continue;
      position[i] = unique_keys.size();
      unique_keys.push_back(keys[i]);
      unique_values.push_back(values[i]);
      if (!options.empty()) unique_options.push_back(options[i]);
    }
    BatchResult unique = BatchPutImpl(unique_keys, unique_values, unique_options);
    for (size_t i = 0; i < keys.size(); ++i) result.statuses.push_back(unique.statuses[position[last[i]]]);
    return Finish(std::move(result));
  }

  // Runs `run(sub_keys, &sub_statuses)` over the keys at `items` and copies
  // each status back to its place in `statuses`. Skips an empty subset.
  template <typename Run>
  static void OnSubset(std::span<const std::string_view> keys, const std::vector<uint32_t>& items,
                       std::vector<Status>* statuses, Run run) {
    if (items.empty()) return;
    std::vector<std::string_view> sub_keys;
    sub_keys.reserve(items.size());
    for (uint32_t i : items) sub_keys.push_back(keys[i]);
    std::vector<Status> sub;
    run(std::span<const std::string_view>(sub_keys), &sub);
    for (size_t j = 0; j < items.size(); ++j) (*statuses)[items[j]] = std::move(sub[j]);
  }

  // Plain puts of the keys at `items` (distinct keys).
  void RunPlainPut(std::span<const std::string_view> keys, std::span<const std::span<const uint8_t>> values,
                   const std::vector<uint32_t>& items, std::vector<Status>* statuses) {
    std::vector<std::span<const uint8_t>> sub_values;
    sub_values.reserve(items.size());
    for (uint32_t i : items) sub_values.push_back(values[i]);
    OnSubset(keys, items, statuses, [&](std::span<const std::string_view> sub_keys, std::vector<Status>* out) {
      BatchCall call;
      call.opcode = proto::Opcode::kBatchPut;
      call.keys = sub_keys;
      call.values = sub_values;
      call.statuses = out;
      RunBatch(&call);
    });
  }

  // Puts with options (distinct keys): BatchPutWith to the servers that know
  // it; to one that predates it (it answers "unknown opcode", remembered per
  // server), plain puts, the options dropped, counted and logged once.
  void RunPutWith(std::span<const std::string_view> keys, std::span<const std::span<const uint8_t>> values,
                  std::span<const PutOptions> options, std::vector<Status>* statuses) {
    std::vector<uint32_t> with, plain;
    for (uint32_t i = 0; i < keys.size(); ++i) {
      // Checked whichever way the put goes: bad options are the caller's
      // mistake also where the server would never see them.
      if (Status valid = proto::CheckPutOptions(options[i]); !valid.ok()) {
        (*statuses)[i] = valid.WithContext("BatchPutWith item " + std::to_string(i));
        continue;
      }
      const bool lacks =
          unplaced_.ok() && pools_[router_.First(keys[i], Purpose::kWrite)]->Lacks(ServerPool::kPutOptions);
      (lacks ? plain : with).push_back(i);
    }
    std::vector<std::span<const uint8_t>> sub_values;
    std::vector<PutOptions> sub_options;
    for (uint32_t i : with) {
      sub_values.push_back(values[i]);
      sub_options.push_back(options[i]);
    }
    OnSubset(keys, with, statuses, [&](std::span<const std::string_view> sub_keys, std::vector<Status>* out) {
      BatchCall call;
      call.opcode = proto::Opcode::kBatchPutWith;
      call.keys = sub_keys;
      call.values = sub_values;
      call.options = sub_options;
      call.statuses = out;
      RunBatch(&call);
    });
    for (uint32_t i : with) {
      if (!IsUnknownOpcode((*statuses)[i])) continue;
      const size_t server = router_.First(keys[i], Purpose::kWrite);
      if (pools_[server]->MarkLacking(ServerPool::kPutOptions)) {
        LOG_WARN_C("client") << "server " << placement_->name(server)
                             << " predates put options (it answered BatchPutWith with 'unknown opcode'); puts to "
                                "it are stored as plain puts, their TTL, retention and parent key dropped";
      }
      plain.push_back(i);
    }
    RunPlainPut(keys, values, plain, statuses);
    for (uint32_t i : plain) {
      if (!options[i].empty()) ClientCounters::Add(counters_.put_options_dropped, 1);
    }
  }

  // MatchPrefix: one request per server with its keys in chain order, the
  // servers asked in parallel; a server that predates MatchPrefix is asked
  // with BatchExists. The answer is the first key not Ok in chain order.
  Result<size_t> MatchPrefixImpl(std::span<const std::string_view> keys) {
    if (keys.size() > proto::kMaxBatchItems) {
      return InvalidArgument("MatchPrefix of " + std::to_string(keys.size()) + " keys exceeds the limit of " +
                             std::to_string(proto::kMaxBatchItems) + " keys per call");
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      MEMKV_RETURN_IF_ERROR(proto::CheckKey(keys[i]).WithContext("MatchPrefix key " + std::to_string(i)));
    }
    if (!unplaced_.ok()) return unplaced_;
    std::vector<Status> statuses(keys.size(), Status(StatusCode::kInternal, std::string()));
    ClientCounters::Add(counters_.ops, keys.size());
    std::vector<std::vector<uint32_t>> groups(pools_.size());
    std::vector<uint32_t> by_exists;
    for (uint32_t i = 0; i < keys.size(); ++i) {
      const size_t server = router_.First(keys[i], Purpose::kRead);
      if (pools_[server]->Lacks(ServerPool::kMatchPrefix)) {
        by_exists.push_back(i);
      } else {
        groups[server].push_back(i);
      }
    }
    std::vector<std::vector<std::vector<uint32_t>>> frames(pools_.size());
    for (size_t server = 0; server < groups.size(); ++server) {
      if (!groups[server].empty()) frames[server].push_back(groups[server]);
    }
    BatchCall call;
    call.opcode = proto::Opcode::kMatchPrefix;
    call.keys = keys;
    call.statuses = &statuses;
    std::vector<std::unique_ptr<client::Exchange>> keep;
    RunGroups(&call, groups, frames, &keep, [&](std::vector<uint32_t> items, size_t server) {
      return std::make_unique<MatchPrefixExchange>(&call, std::move(items), placement_->name(server));
    });
    for (size_t server = 0; server < groups.size(); ++server) {
      if (groups[server].empty() || !IsUnknownOpcode(statuses[groups[server].front()])) continue;
      if (pools_[server]->MarkLacking(ServerPool::kMatchPrefix)) {
        LOG_INFO_C("client") << "server " << placement_->name(server)
                             << " predates MatchPrefix (it answered 'unknown opcode'); asking it with BatchExists";
      }
      by_exists.insert(by_exists.end(), groups[server].begin(), groups[server].end());
    }
    OnSubset(keys, by_exists, &statuses, [&](std::span<const std::string_view> sub_keys, std::vector<Status>* out) {
      *out = BatchExistsImpl(sub_keys).statuses;
    });
    size_t matched = 0;
    while (matched < statuses.size() && statuses[matched].ok()) ++matched;
    return matched;
  }

  // For each key, the index of the last item naming the same key.
  static std::vector<size_t> LastOccurrences(std::span<const std::string_view> keys) {
    std::vector<size_t> last(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) last[i] = i;
    std::vector<std::pair<size_t, size_t>> scratch;
    scratch.reserve(keys.size());
    ForEachRepeatedKey(
        keys.size(), [&](size_t i) { return keys[i]; }, &scratch, [&](size_t i, size_t later) { last[i] = later; });
    return last;
  }

  BatchResult BatchGetIntoImpl(std::span<const std::string_view> keys,
                               std::span<const std::span<uint8_t>> buffers, std::vector<size_t>* sizes) {
    BatchResult result;
    if (sizes != nullptr) sizes->assign(keys.size(), 0);
    BatchCall call;
    call.opcode = proto::Opcode::kBatchGet;
    call.keys = keys;
    call.buffers = buffers;
    call.statuses = &result.statuses;
    call.sizes = sizes;
    if (keys.size() != buffers.size()) {
      return Mismatch("BatchGetInto", keys.size(), "buffers", buffers.size());
    }
    RunBatch(&call);
    return Finish(std::move(result));
  }

  BatchResult BatchExistsImpl(std::span<const std::string_view> keys) {
    BatchResult result;
    BatchCall call;
    call.opcode = proto::Opcode::kBatchExists;
    call.keys = keys;
    call.statuses = &result.statuses;
    RunBatch(&call);
    return Finish(std::move(result));
  }

  // Each key's delete is its own request; they are pipelined over each
  // server's connections like the frames of a batch.
  BatchResult BatchDeleteImpl(std::span<const std::string_view> keys) {
    BatchResult result;
    BatchCall call;
    call.opcode = proto::Opcode::kDelete;
    call.keys = keys;
    call.statuses = &result.statuses;
    const size_t n = keys.size();
    result.statuses.assign(n, Status(StatusCode::kInternal, std::string()));
    ClientCounters::Add(counters_.ops, n);
    std::vector<size_t> servers(n, kNoServer);
    for (size_t i = 0; i < n; ++i) {
      if (Status valid = proto::CheckKey(keys[i]); !valid.ok()) {
        result.statuses[i] = valid.WithContext("BatchDelete item " + std::to_string(i));
        continue;
      }
      if (!unplaced_.ok()) {
        result.statuses[i] = unplaced_;
        continue;
      }
      servers[i] = router_.First(keys[i], Purpose::kDelete);
    }
    RunDeletes(&call, servers);
    // Second round: the next server of each key whose answer calls for it.
    std::vector<Status> first = result.statuses;
    std::vector<size_t> next(n, kNoServer);
    for (size_t i = 0; i < n; ++i) {
      if (servers[i] == kNoServer) continue;
      if (router_.AfterFirst(servers[i], Purpose::kDelete, first[i], counters_) == Router::Followup::kNone) continue;
      next[i] = router_.Next(keys[i], Purpose::kDelete, servers[i]).value_or(kNoServer);
    }
    if (std::any_of(next.begin(), next.end(), [](size_t s) { return s != kNoServer; })) {
      RunDeletes(&call, next);
      for (size_t i = 0; i < n; ++i) {
        if (next[i] == kNoServer) {
          result.statuses[i] = std::move(first[i]);
          continue;
        }
        result.statuses[i] = router_.Combine(
            router_.AfterFirst(servers[i], Purpose::kDelete, first[i], counters_), Purpose::kDelete, next[i],
            first[i], result.statuses[i], counters_);
      }
    }
    NameUnprocessed(&call);
    return Finish(std::move(result));
  }

  // One delete per key with a server in `servers`, pipelined per server;
  // their statuses into call->statuses.
  void RunDeletes(BatchCall* call, const std::vector<size_t>& servers) {
    std::vector<std::vector<uint32_t>> groups(pools_.size());
    std::vector<std::vector<std::vector<uint32_t>>> frames(pools_.size());
    for (size_t i = 0; i < servers.size(); ++i) {
      if (servers[i] == kNoServer) continue;
      groups[servers[i]].push_back(static_cast<uint32_t>(i));
      frames[servers[i]].push_back({static_cast<uint32_t>(i)});
    }
    std::vector<SingleExchange*> by_key(servers.size(), nullptr);
    std::vector<std::unique_ptr<client::Exchange>> keep;  // read after the run
    RunGroups(call, groups, frames, &keep, [&](std::vector<uint32_t> items, size_t server) {
      auto x = std::make_unique<SingleExchange>(proto::Opcode::kDelete, call->keys[items.front()],
                                                placement_->name(server));
      by_key[items.front()] = x.get();
      return x;
    });
    for (size_t i = 0; i < servers.size(); ++i) {
      if (by_key[i] != nullptr) (*call->statuses)[i] = by_key[i]->status();
    }
  }

  // One server's share of a batch: the connections checked out for it.
  struct Lease {
    size_t server;
    std::vector<std::unique_ptr<Connection>> conns;
    ServerPool::Use use = ServerPool::Use::kLoad;  // kStore for puts, which leave loads a connection
  };

  void CountTcp(uint64_t bytes) { client::CountTcp(counters_, bytes); }
  void CountTransport(const RdmaExchange& x, uint64_t bytes) { client::CountTransport(counters_, x, bytes); }

  Nanos Deadline() const { return MonotonicNanos() + Nanos{options_.timeout_ms} * 1'000'000; }

  static constexpr size_t kNoServer = SIZE_MAX;

  static Purpose PurposeOf(const BatchCall* call) { return IsBatchPut(call->opcode) ? Purpose::kWrite : Purpose::kRead; }

  // Validates the keys (and values), groups them by their first server,
  // runs them (RunRound), then the second round for the keys whose answer
  // calls for their next server (Router::AfterFirst).
  void RunBatch(BatchCall* call) {
    const size_t n = call->keys.size();
    // Every item is answered below; the placeholder carries no message so
    // that filling it costs no allocation per key (NameUnprocessed).
    call->statuses->assign(n, Status(StatusCode::kInternal, std::string()));
    ClientCounters::Add(counters_.ops, n);
    std::vector<size_t> servers(n, kNoServer);
    const Purpose purpose = PurposeOf(call);
    for (size_t i = 0; i < n; ++i) {
      Status valid = proto::CheckKey(call->keys[i]);
      if (valid.ok() && IsBatchPut(call->opcode)) valid = CheckBatchValueSize(call->values[i].size());
      if (valid.ok() && call->opcode == proto::Opcode::kBatchPutWith) valid = proto::CheckPutOptions(call->options[i]);
      if (!valid.ok()) {
        (*call->statuses)[i] = valid.WithContext(std::string(BatchOpName(call)) + " item " + std::to_string(i));
        continue;
      }
      if (!unplaced_.ok()) {
        (*call->statuses)[i] = unplaced_;
        continue;
      }
      servers[i] = router_.First(call->keys[i], purpose);
    }
    RunRound(call, servers);
    SecondRound(call, servers);
    NameUnprocessed(call);
  }

  // The keys of `call` whose first answer (from servers[i]) calls for their
  // next server, run there as a sub-batch; each answer combined with the
  // first (Router::Combine).
  void SecondRound(BatchCall* call, const std::vector<size_t>& servers) {
    const Purpose purpose = PurposeOf(call);
    std::vector<uint32_t> items;
    std::vector<Router::Followup> followups;
    std::vector<size_t> next;
    for (uint32_t i = 0; i < servers.size(); ++i) {
      if (servers[i] == kNoServer) continue;
      const Router::Followup f = router_.AfterFirst(servers[i], purpose, (*call->statuses)[i], counters_);
      if (f == Router::Followup::kNone) continue;
      const std::optional<size_t> to = router_.Next(call->keys[i], purpose, servers[i]);
      if (!to) continue;
      items.push_back(i);
      followups.push_back(f);
      next.push_back(*to);
    }
    if (items.empty()) return;
    std::vector<std::string_view> keys;
    std::vector<std::span<const uint8_t>> values;
    std::vector<PutOptions> options;
    std::vector<std::span<uint8_t>> buffers;
    for (uint32_t i : items) {
      keys.push_back(call->keys[i]);
      if (!call->values.empty()) values.push_back(call->values[i]);
      if (!call->options.empty()) options.push_back(call->options[i]);
      if (!call->buffers.empty()) buffers.push_back(call->buffers[i]);
    }
    std::vector<Status> statuses;
    std::vector<size_t> sizes(items.size(), 0);
    BatchCall sub;
    sub.opcode = call->opcode;
    sub.keys = keys;
    sub.values = values;
    sub.options = options;
    sub.buffers = buffers;
    sub.statuses = &statuses;
    sub.sizes = call->sizes != nullptr ? &sizes : nullptr;
    statuses.assign(items.size(), Status(StatusCode::kInternal, std::string()));
    ClientCounters::Add(counters_.ops, items.size());
    RunRound(&sub, next);
    for (size_t j = 0; j < items.size(); ++j) {
      const uint32_t i = items[j];
      const bool second_ok = statuses[j].ok();
      Status& out = (*call->statuses)[i];
      out = router_.Combine(followups[j], purpose, next[j], std::move(out), std::move(statuses[j]), counters_);
      if (second_ok && out.ok() && call->sizes != nullptr) (*call->sizes)[i] = sizes[j];
    }
  }

  // Groups the items with a server in `servers` by it, splits each group
  // into frames, and runs them (RunGroups).
  void RunRound(BatchCall* call, const std::vector<size_t>& servers) {
    const size_t n = call->keys.size();
    std::vector<std::vector<uint32_t>> groups(pools_.size());
    for (size_t i = 0; i < n; ++i) {
      if (servers[i] != kNoServer) groups[servers[i]].push_back(static_cast<uint32_t>(i));
    }
    auto bytes_of = [&](uint32_t i) { return ItemBytes(*call, i); };
    std::vector<std::vector<std::vector<uint32_t>>> frames(pools_.size());
    const bool rdma = rdma_ != nullptr && rdma_->active() && call->opcode != proto::Opcode::kBatchExists;
    for (size_t server = 0; server < groups.size(); ++server) {
      if (groups[server].empty()) continue;
      if (rdma) {
        // Over RDMA every value is its own pipelined RdmaPut / RdmaGet.
        for (uint32_t i : groups[server]) frames[server].push_back({i});
      } else {
        frames[server] = SplitFrames(groups[server], options_.num_connections, bytes_of, [&](uint32_t i) {
          return call->opcode == proto::Opcode::kBatchPutWith
                     ? proto::BatchPutWithItemBytes(call->keys[i], call->options[i])
                     : 2 + call->keys[i].size() + 16;
        });
      }
    }
    if (!rdma) {
      std::vector<std::unique_ptr<client::Exchange>> keep;
      RunGroups(call, groups, frames, &keep, [&](std::vector<uint32_t> items, size_t server) {
        return std::make_unique<BatchExchange>(call, std::move(items), placement_->name(server));
      });
      if (call->opcode != proto::Opcode::kBatchExists) CountTcpBatch(call, servers);
      return;
    }
    std::vector<RdmaExchange*> by_key(n, nullptr);
    std::vector<std::unique_ptr<client::Exchange>> keep;  // read after the run
    RunGroups(call, groups, frames, &keep, [&](std::vector<uint32_t> items, size_t server) {
      const uint32_t i = items.front();
      std::unique_ptr<RdmaExchange> x;
      if (IsBatchPut(call->opcode)) {
        x = std::make_unique<RdmaExchange>(rdma_.get(), &counters_, proto::Opcode::kPut, call->keys[i],
                                           placement_->name(server), call->values[i]);
        if (call->opcode == proto::Opcode::kBatchPutWith) x->set_options(&call->options[i]);
      } else {
        x = std::make_unique<RdmaExchange>(rdma_.get(), &counters_, proto::Opcode::kGet, call->keys[i],
                                           placement_->name(server), std::span<const uint8_t>(), call->buffers[i]);
      }
      by_key[i] = x.get();
      return x;
    });
    for (size_t i = 0; i < n; ++i) {
      RdmaExchange* x = by_key[i];
      if (x == nullptr) continue;  // invalid key, or its server's pool failed: status already set
      const uint64_t bytes = IsBatchPut(call->opcode) ? call->values[i].size() : x->value_size();
      Status s = x->status();
      if (s.code() == StatusCode::kNotFound) s = NotFound("not found");
      (*call->statuses)[i] = s;
      if (s.ok() && call->sizes != nullptr) (*call->sizes)[i] = static_cast<size_t>(x->value_size());
      CountTransport(*x, bytes);
    }
  }

  // Items still at RunBatch's placeholder (none, unless the client has a bug).
  static void NameUnprocessed(BatchCall* call) {
    for (Status& s : *call->statuses) {
      if (s.code() == StatusCode::kInternal && s.message().empty()) s = Internal("key was not processed (client bug)");
    }
  }

  // The items of this round (those with a server) that were stored or read.
  void CountTcpBatch(const BatchCall* call, const std::vector<size_t>& servers) {
    for (size_t i = 0; i < call->keys.size(); ++i) {
      if (servers[i] == kNoServer || !(*call->statuses)[i].ok()) continue;
      CountTcp(IsBatchPut(call->opcode) ? call->values[i].size()
                                                        : (call->sizes != nullptr ? (*call->sizes)[i] : 0));
    }
  }

  // Sends each server's frames spread over that server's connections, in
  // rounds: a round checks out what it can of every server left without
  // waiting, and drives those servers together in one poll loop, handing
  // each server's connections back as soon as its part is done. Only when
  // every server left is busy does the call wait, for one of them, holding
  // no connection at all. So a call never sits on a server's connection
  // while it waits for another server (a stalled server costs its own keys
  // their deadline and nobody else's calls a connection), and calls cannot
  // wait on each other in a cycle.
  // `make(items, server)` builds the exchange carrying one frame's items;
  // they are kept in `exchanges`, which must outlive the run.
  template <typename Make>
  void RunGroups(BatchCall* call, const std::vector<std::vector<uint32_t>>& groups,
                 std::vector<std::vector<std::vector<uint32_t>>>& frames,
                 std::vector<std::unique_ptr<client::Exchange>>* kept, Make make) {
    const Nanos deadline = Deadline();
    std::vector<std::unique_ptr<client::Exchange>>& exchanges = *kept;
    std::vector<size_t> todo;  // servers not yet leased or failed
    for (size_t server = 0; server < groups.size(); ++server) {
      if (!groups[server].empty()) todo.push_back(server);
    }
    // Checks out `server`'s connections and queues its frames on them; false
    // when its pool is busy (only without `wait`). A failure is final: its
    // keys' statuses say why.
    std::vector<Lease> leases;
    const ServerPool::Use use = IsBatchPut(call->opcode) ? ServerPool::Use::kStore : ServerPool::Use::kLoad;
    auto take = [&](size_t server, bool wait) {
      std::vector<std::vector<uint32_t>>& server_frames = frames[server];
      auto conns = pools_[server]->Acquire(std::min<size_t>(server_frames.size(), options_.num_connections),
                                           deadline, wait, use);
      if (!conns.ok()) {
        for (uint32_t i : groups[server]) {
          (*call->statuses)[i] = conns.status().WithContext(std::string(BatchOpName(call)) + " key " +
                                                            client::KeyForMessage(call->keys[i]));
        }
        return true;
      }
      if (conns->empty()) return false;
      for (size_t f = 0; f < server_frames.size(); ++f) {
        exchanges.push_back(make(std::move(server_frames[f]), server));
        (*conns)[f % conns->size()]->Enqueue(exchanges.back().get());
      }
      leases.push_back(Lease{server, std::move(conns).value(), use});
      return true;
    };
    while (!todo.empty()) {
      leases.clear();
      std::vector<size_t> busy;
      for (size_t server : todo) {
        if (!take(server, /*wait=*/false)) busy.push_back(server);
      }
      if (leases.empty() && !busy.empty()) {
        // Everything left is busy and nothing is held: wait for the first,
        // then take whatever of the others freed up meanwhile.
        std::vector<size_t> still_busy;
        for (size_t k = 0; k < busy.size(); ++k) {
          if (!take(busy[k], /*wait=*/k == 0)) still_busy.push_back(busy[k]);
        }
        busy = std::move(still_busy);
      }
      DriveAndRelease(leases, deadline);
      todo = std::move(busy);  // each round settles at least one server
    }
  }

  // Drives every leased connection in one poll loop, releasing each
  // server's connections to its pool as soon as all of them are done.
  void DriveAndRelease(std::vector<Lease>& leases, Nanos deadline) {
    std::vector<Connection*> driven;
    std::vector<size_t> lease_of;              // per driven connection
    std::vector<size_t> working(leases.size());  // per lease: connections not done
    for (size_t l = 0; l < leases.size(); ++l) {
      for (auto& c : leases[l].conns) {
        driven.push_back(c.get());
        lease_of.push_back(l);
      }
      working[l] = leases[l].conns.size();
    }
    client::DriveConnections(driven, deadline, [&](size_t i) {
      Lease& lease = leases[lease_of[i]];
      if (--working[lease_of[i]] == 0) pools_[lease.server]->Release(std::move(lease.conns), lease.use);
    });
  }

  static const char* BatchOpName(const BatchCall* call) {
    switch (call->opcode) {
      case proto::Opcode::kBatchPut: return "BatchPut";
      case proto::Opcode::kBatchPutWith: return "BatchPutWith";
      case proto::Opcode::kBatchGet: return "BatchGetInto";
      case proto::Opcode::kBatchExists: return "BatchExists";
      case proto::Opcode::kMatchPrefix: return "MatchPrefix";
      default: return "BatchDelete";
    }
  }

  static BatchResult Mismatch(const char* op, size_t keys, const char* what, size_t count) {
    BatchResult result;
    result.statuses.assign(keys, InvalidArgument(std::string(op) + ": " + std::to_string(keys) +
                                                 " keys but " + std::to_string(count) + " " + what));
    return result;
  }

  static BatchResult Finish(BatchResult result) {
    while (result.present_prefix < result.statuses.size() && result.statuses[result.present_prefix].ok()) {
      ++result.present_prefix;
    }
    return result;
  }

  const ClientOptions& options_;
  const std::shared_ptr<const View> view_;  // the call's snapshot: one placement throughout
  const Router router_;
  const Placement* const placement_;  // null: no server placed (unplaced_ says why)
  const std::vector<std::shared_ptr<ServerPool>>& pools_;
  const std::unique_ptr<RdmaEngine>& rdma_;  // null: transport tcp; set before any call
  ClientCounters& counters_;
  // Not Ok when no server is placed: every valid key's answer (a bad key
  // is still reported as such).
  const Status unplaced_;
};

BatchRunner::BatchRunner(const ClientOptions& options, const std::unique_ptr<Membership>& membership,
                         const std::unique_ptr<RdmaEngine>& rdma, ClientCounters& counters)
    : options_(options),
      membership_(membership),
      rdma_(rdma),
      counters_(counters),
      stores_(options.store_shed_latency_ms, options.store_shed_inflight, &counters) {}

BatchRunner::~BatchRunner() = default;

namespace {

// Runs `run(view)` over the current view (asking the pending servers again
// first when none is placed).
template <typename Run>
auto OnView(const std::unique_ptr<Membership>& membership, size_t, Run run) {
  return run(membership->RefreshIfEmpty());
}

}  // namespace

BatchResult BatchRunner::Put(std::span<const std::string_view> keys,
                             std::span<const std::span<const uint8_t>> values, std::span<const PutOptions> options) {
  // Shed, rather than wait, while the tier is slow (store_shed.h).
  std::optional<StoreTicket> ticket;
  if (!keys.empty()) {
    ticket.emplace(&stores_, options.empty() ? "BatchPut" : "BatchPutWith", keys.size());
    if (!ticket->status().ok()) {
      BatchResult shed;
      shed.statuses.assign(keys.size(), ticket->status());
      return shed;
    }
  }
  return OnView(membership_, keys.size(), [&](std::shared_ptr<const View> view) {
    return Impl(options_, std::move(view), membership_->grace_nanos(), rdma_, counters_)
        .BatchPutImpl(keys, values, options);
  });
}

Result<size_t> BatchRunner::MatchPrefix(std::span<const std::string_view> keys) {
  return OnView(membership_, keys.size(), [&](std::shared_ptr<const View> view) {
    return Impl(options_, std::move(view), membership_->grace_nanos(), rdma_, counters_).MatchPrefixImpl(keys);
  });
}

BatchResult BatchRunner::GetInto(std::span<const std::string_view> keys, std::span<const std::span<uint8_t>> buffers,
                                 std::vector<size_t>* sizes) {
  return OnView(membership_, keys.size(), [&](std::shared_ptr<const View> view) {
    return Impl(options_, std::move(view), membership_->grace_nanos(), rdma_, counters_)
        .BatchGetIntoImpl(keys, buffers, sizes);
  });
}

BatchResult BatchRunner::Exists(std::span<const std::string_view> keys) {
  return OnView(membership_, keys.size(), [&](std::shared_ptr<const View> view) {
    return Impl(options_, std::move(view), membership_->grace_nanos(), rdma_, counters_).BatchExistsImpl(keys);
  });
}

BatchResult BatchRunner::Delete(std::span<const std::string_view> keys) {
  return OnView(membership_, keys.size(), [&](std::shared_ptr<const View> view) {
    return Impl(options_, std::move(view), membership_->grace_nanos(), rdma_, counters_).BatchDeleteImpl(keys);
  });
}

}  // namespace memkv::client
