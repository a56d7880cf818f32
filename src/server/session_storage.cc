// Session, part three: requests whose storage operation may wait on a
// drive (puts, gets, deletes). Each hands the store a completion that queues
// the response; when the store answers later (TieredStore, "Completion"), the
// connection is parked meanwhile and the completion runs on this worker from
// its inbox (OnStorageDone).
#include <functional>
#include <string>
#include <utility>

#include "base/repeated_keys.h"
#include "proto/messages.h"
#include "server/session.h"

namespace memkv::server {

void Session::Await(tier::Completion completion) {
  storage_wait_ = completion != tier::Completion::kInline;
  turn_wait_ = completion == tier::Completion::kTurn;
}

void Session::FinishPayload() {
  PayloadSink sink = std::move(sink_);
  sink_ = PayloadSink();
  if (!sink.frame_error.ok()) {
    RespondError(sink.frame_error);
    return;
  }
  // Verify every item before committing any: a payload that does not match
  // its checksum means the stream cannot be trusted at all.
  for (PayloadSink::Item& item : sink.items) {
    if (!item.status.ok()) continue;
    if (item.received_checksum != item.checksum) {
      ctx_.metrics->payload_checksum_failures.Add(1);
      Fail(Corruption("payload of key '" + std::string(Scope().ClientKey(item.key).substr(0, 64)) +
                      "' does not match its checksum; nothing was stored"));
      return;
    }
  }
  if (!sink.batch) {
    CommitPut(sink.items.front());
    KeepSpareItems(sink.items);
    return;
  }
  SupersedeRepeats(sink.items);
  CommitBatch(std::move(sink.items), sink.with_messages);
}

std::vector<Session::PayloadSink::Item> Session::TakeSpareItems() {
  std::vector<PayloadSink::Item> items = std::move(spare_items_);
  items.clear();
  return items;
}

void Session::KeepSpareItems(std::vector<PayloadSink::Item>& items) {
  items.clear();
  if (items.capacity() <= kSpareItemsKept && items.capacity() > spare_items_.capacity()) {
    spare_items_ = std::move(items);
  }
}

void Session::CountLookup(std::string_view key, bool hit, uint64_t bytes, bool fetch) {
  CountTenantLookups(1, hit ? 1 : 0, bytes, fetch && hit ? 1 : 0);
  if (ctx_.namespaces == nullptr) return;
  NamespaceCounts c;
  c.lookups = 1;
  c.hits = hit ? 1 : 0;
  c.read_bytes = bytes;
  ctx_.namespaces->Count(key, c);
}

void Session::CountStored(std::string_view key, uint64_t bytes) {
  CountTenantStored(1, bytes);
  if (ctx_.namespaces == nullptr) return;
  NamespaceCounts c;
  c.puts = 1;
  c.written_bytes = bytes;
  ctx_.namespaces->Count(key, c);
}

void Session::CommitPut(PayloadSink::Item& item) {
  if (!item.status.ok()) {
    RespondError(item.status);
    return;
  }
  const uint64_t size = item.size;
  // Counted as waiting for the drives until the completion has run.
  Await(ctx_.store->Commit(std::move(item.put), item.key, item.checksum, item.options, reply_,
                           [this, size, key = item.key, queued = FleetState::QueuedPut(ctx_.fleet, size)](Status s) mutable {
    queued.Release();  // before the answer: a client that saw it finds the bytes no longer waiting
    if (s.ok()) {
      ctx_.metrics->op(cur_.opcode).value_bytes.Add(size);
      CountStored(key, size);
    }
    RespondError(s);
  }));
}

// A batch put that names a key more than once stores only the key's last
// item, as applying the items in order would leave it, in memory and file
// mode alike (the drive tier writes a batch's items in parallel, so storing
// each would leave a random one). The earlier items release their pool
// space now and are answered with the last item's status.
// Keys are found equal as ForEachRepeatedKey finds them (no allocation once
// the scratch list has room).
void Session::SupersedeRepeats(std::vector<PayloadSink::Item>& items) {
  ForEachRepeatedKey(
      items.size(), [&](size_t i) -> std::string_view { return items[i].key; }, &repeat_scratch_,
      [&](size_t i, size_t last) {
        items[i].superseded_by = last;
        items[i].put = storage::PendingPut();
        items[i].status = FailedPrecondition("superseded by a later item of the batch");  // not stored
      });
}

void Session::CommitBatch(std::vector<PayloadSink::Item> items, bool with_messages) {
  std::vector<tier::PutCommit>& puts = commit_scratch_;
  puts.clear();
  std::vector<size_t> where;  // puts[j] is items[where[j]]
  puts.reserve(items.size());
  where.reserve(items.size());
  uint64_t bytes = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    PayloadSink::Item& item = items[i];
    if (!item.status.ok()) continue;
    bytes += item.size;
    // The key is copied, not moved: the answer counts it in its namespace.
    tier::PutCommit& put = puts.emplace_back();
    put.put = std::move(item.put);
    put.key = item.key;
    put.checksum = item.checksum;
    put.options = std::move(item.options);
    where.push_back(i);
  }
  Await(ctx_.store->CommitMany(std::move(puts), reply_,
                               [this, items = std::move(items), where = std::move(where), with_messages,
                                queued = FleetState::QueuedPut(ctx_.fleet, bytes)](
                                   std::vector<Status> statuses) mutable {
                                 queued.Release();
                                 for (size_t j = 0; j < where.size(); ++j) items[where[j]].status = std::move(statuses[j]);
                                 RespondBatchPut(items, with_messages);
                                 KeepSpareItems(items);
                               }));
  if (commit_scratch_.capacity() > kSpareItemsKept) commit_scratch_ = std::vector<tier::PutCommit>();
}

void Session::RespondBatchPut(std::vector<PayloadSink::Item>& items, bool with_messages) {
  std::vector<Status> statuses;
  statuses.reserve(items.size());
  uint64_t stored = 0;
  std::vector<KeyCounts> counts;
  counts.reserve(items.size());
  for (const PayloadSink::Item& item : items) {
    if (item.superseded_by != PayloadSink::kNotSuperseded) {
      statuses.push_back(items[item.superseded_by].status);
      continue;
    }
    statuses.push_back(item.status);
    if (!item.status.ok()) continue;
    stored += item.size;
    KeyCounts& c = counts.emplace_back(KeyCounts{item.key, {}});
    c.counts.puts = 1;
    c.counts.written_bytes = item.size;
  }
  if (ctx_.namespaces != nullptr) ctx_.namespaces->CountMany(counts);
  CountTenantStored(counts.size(), stored);
  ctx_.metrics->op(cur_.opcode).value_bytes.Add(stored);
  if (with_messages) {
    Respond(StatusCode::kOk, proto::EncodeStatusMessageList(statuses));
    return;
  }
  std::vector<StatusCode> codes;
  codes.reserve(statuses.size());
  for (const Status& s : statuses) codes.push_back(s.code());
  Respond(StatusCode::kOk, proto::EncodeStatusList(codes));
}

void Session::HandleGet(Request& request) {
  const std::string_view key = request.key;
  // Checked after the send (Flush): the client checks the bytes against the
  // checksum sent with them, so the server's own check is off the latency path.
  // `key` points into the request's meta (or, a tenant's, into req_'s scratch),
  // which stays while the request is parked on its storage operation.
  Await(ctx_.store->Get(
      key, tier::ReadNeed::kBytes, reply_,
      [this, key](Result<tier::StoredValue> value) { RespondGet(key, std::move(value)); }, storage::ReadCheck::kLater));
}

void Session::RespondGet(std::string_view key, Result<tier::StoredValue> value) {
  CountLookup(key, value.ok(), value.ok() ? value->size() : 0, /*fetch=*/true);
  if (!value.ok()) {
    if (value.status().code() == StatusCode::kNotFound) {
      Respond(StatusCode::kNotFound, "");
    } else {
      RespondError(value.status());
    }
    return;
  }
  if (value->streamed()) {
    BeginStreamGet(std::move(value).value());
    return;
  }
  std::vector<iovec> iov(value->iov().begin(), value->iov().end());
  const uint64_t checksum = value->checksum();
  std::vector<tier::StoredValue> values;
  values.push_back(std::move(value).value());
  Respond(StatusCode::kOk, "", std::move(iov), std::move(values), checksum);
}

void Session::HandleBatchGet(Request& request) {
  const std::vector<std::string_view>& keys = request.keys;
  Await(ctx_.store->GetMany(
      keys, reply_,
      [this, keys](std::vector<Result<tier::StoredValue>> values) { RespondBatchGet(keys, values); },
      storage::ReadCheck::kLater));
}

void Session::RespondBatchGet(std::span<const std::string_view> keys, std::vector<Result<tier::StoredValue>>& values) {
  {
    uint64_t hits = 0, bytes = 0;
    for (const Result<tier::StoredValue>& v : values) {
      if (!v.ok()) continue;
      ++hits;
      bytes += v->size();
    }
    CountTenantLookups(values.size(), hits, bytes, hits);
  }
  if (ctx_.namespaces != nullptr) {
    std::vector<KeyCounts> counts(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      counts[i] = {keys[i], {}};
      counts[i].counts.lookups = 1;
      counts[i].counts.hits = values[i].ok() ? 1 : 0;
      counts[i].counts.read_bytes = values[i].ok() ? values[i]->size() : 0;
    }
    ctx_.namespaces->CountMany(counts);
  }
  std::vector<proto::GetItem> items(values.size());
  std::vector<iovec> iov;
  std::vector<tier::StoredValue> kept;
  uint64_t total = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].ok()) {
      items[i].status = values[i].status().code();
      continue;
    }
    tier::StoredValue& v = *values[i];
    if (v.streamed() || total + v.size() > proto::kMaxPayloadBytes) {
      // The answer would exceed one frame, or the value is read from the
      // drives in pieces: the client fetches this one alone.
      items[i].status = StatusCode::kTooLarge;
      continue;
    }
    total += v.size();
    items[i] = {StatusCode::kOk, v.size(), v.checksum()};
    iov.insert(iov.end(), v.iov().begin(), v.iov().end());
    kept.push_back(std::move(v));  // the bytes stay where iov points
  }
  Respond(StatusCode::kOk, proto::EncodeBatchGetResponse(items), std::move(iov), std::move(kept), 0);
}

void Session::HandleDelete(Request& request) {
  Await(ctx_.store->Delete(request.key, reply_, [this](Status s) {
    if (s.code() == StatusCode::kNotFound) {
      Respond(StatusCode::kNotFound, "");
    } else {
      RespondError(s);
    }
  }));
}

}  // namespace memkv::server
