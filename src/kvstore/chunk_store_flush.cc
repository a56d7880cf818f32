// ChunkStore's flush: how buffered chunks become durable, and how a
// manifest waits for them (chunk_store.h).
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "kvstore/chunk_store.h"

namespace memkv::kvstore {

Status ChunkStore::FlushOnce(uint64_t* id_out) {
  Pending batch;
  std::vector<std::string> keys;  // what this flush marked in flight
  uint64_t id = 0;
  {
    MutexLock lock(mu_);
    id = next_flush_id_++;
    if (id_out != nullptr) *id_out = id;
    if (pending_.chunks.empty()) return Status::Ok();
    keys.reserve(pending_.chunks.size());
    for (const auto& entry : pending_.chunks) keys.push_back(entry.first);
    batch = std::exchange(pending_, Pending{});
    in_flight_.insert(keys.begin(), keys.end());
    active_flushes_.insert(id);
  }
  // Whatever happens, the keys leave in_flight_, what was not stored is
  // buffered again and the waiters hear of it.
  auto finish = [&](const Status& status) {
    {
      MutexLock lock(mu_);
      for (const std::string& key : keys) in_flight_.erase(key);
      for (auto& [key, bytes] : batch.chunks) {
        if (pending_.chunks.emplace(key, bytes).second) pending_.bytes += bytes->size();
      }
      if (!status.ok()) {
        ++failed_flushes_;
        last_flush_error_ = status;
      }
      active_flushes_.erase(id);
    }
    flush_done_.notify_all();
  };
  Status status;
  try {
    status = SendBatch(&batch);
  } catch (...) {
    finish(Internal("a flush ran out of memory"));
    throw;
  }
  finish(status);
  return status;
}

Status ChunkStore::SendBatch(Pending* batch) {
  using Iter = std::unordered_map<std::string, ChunkBytes>::iterator;
  std::vector<Iter> items;
  std::vector<std::string_view> keys;
  items.reserve(batch->chunks.size());
  keys.reserve(batch->chunks.size());
  for (auto it = batch->chunks.begin(); it != batch->chunks.end(); ++it) {
    items.push_back(it);
    keys.push_back(it->first);
  }
  // One round trip tells which chunks the servers hold already (another
  // saver's, or ours from before): those are not sent again.
  BatchResult exists = client_->BatchExists(keys);
  std::vector<Iter> absent;
  for (size_t i = 0; i < items.size(); ++i) {
    const Status& s = exists.statuses[i];
    if (s.code() == StatusCode::kNotFound) {
      absent.push_back(items[i]);
    } else if (!s.ok()) {
      return s;  // nothing is trusted; the whole batch is buffered again
    }
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (exists.statuses[i].ok()) batch->chunks.erase(items[i]);
  }
  if (absent.empty()) return Status::Ok();

  std::vector<std::string_view> put_keys;
  std::vector<std::span<const uint8_t>> values;
  put_keys.reserve(absent.size());
  values.reserve(absent.size());
  for (Iter it : absent) {
    put_keys.push_back(it->first);
    values.emplace_back(it->second->data(), it->second->size());
  }
  BatchResult put = client_->BatchPut(put_keys, values);
  Status first;
  for (size_t i = 0; i < absent.size(); ++i) {
    const Status& s = put.statuses[i];
    if (s.ok()) {
      batch->chunks.erase(absent[i]);
    } else if (first.ok()) {
      first = s;
    }
  }
  return first;
}

Status ChunkStore::SendDirect(const std::string& key, std::span<const uint8_t> data) {
  uint64_t id = 0;
  {
    MutexLock lock(mu_);
    if (pending_.chunks.contains(key) || !in_flight_.insert(key).second) return Status::Ok();
    id = next_flush_id_++;  // a flush of one chunk: manifests started later wait for it
    active_flushes_.insert(id);
  }
  const std::string_view keys[] = {key};
  Status status = client_->BatchExists(keys).statuses[0];
  if (status.code() == StatusCode::kNotFound) status = client_->Put(key, data);
  // Not stored: buffered, as a flush that failed buffers its chunks again,
  // before the manifests waiting for this send hear of it. Without memory
  // for the copy the handle refuses its next manifest.
  auto finish = [&](ChunkBytes copy, const char* out_of_memory) {
    {
      MutexLock lock(mu_);
      in_flight_.erase(key);
      if (!status.ok()) {
        if (copy != nullptr && pending_.chunks.emplace(key, copy).second) pending_.bytes += copy->size();
        ++failed_flushes_;
        last_flush_error_ = status;
      }
      if (out_of_memory != nullptr) RefuseCopyLocked(out_of_memory);
      active_flushes_.erase(id);
    }
    flush_done_.notify_all();
  };
  ChunkBytes copy;
  try {
    if (!status.ok()) copy = std::make_shared<const MallocBuffer>(MallocBuffer::CopyOf(data));
  } catch (const std::bad_alloc& e) {
    finish(nullptr, e.what());
    throw;
  }
  finish(std::move(copy), nullptr);
  return status;
}

Status ChunkStore::FlushForManifest() {
  Status status;
  for (int round = 0; round < 2; ++round) {
    uint64_t failures_before = 0;
    {
      MutexLock lock(mu_);
      failures_before = failed_flushes_;
    }
    uint64_t id = 0;
    MEMKV_RETURN_IF_ERROR(FlushOnce(&id));
    MutexLock lock(mu_);
    // Flushes that started earlier may hold chunks this manifest names (a
    // put_chunk that found its hash in flight did not copy it again).
    lock.Wait(flush_done_,
              [&]() MEMKV_REQUIRES(mu_) { return active_flushes_.empty() || *active_flushes_.begin() > id; });
    if (failed_flushes_ == failures_before) return Status::Ok();
    // One of them failed and buffered its chunks again: flush them too.
    status = last_flush_error_;
  }
  return status.WithContext("not written: a flush of chunks buffered on this handle by another thread failed");
}

}  // namespace memkv::kvstore
