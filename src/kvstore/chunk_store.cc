#include "kvstore/chunk_store.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "kvstore/uri.h"

namespace memkv::kvstore {
namespace {

// What a prefetch assumes a chunk holds when the handle has seen none and
// the first one is missing or empty.
constexpr size_t kFallbackSizeHint = 1 << 20;

Status CheckHash(std::span<const uint8_t> hash) {
  if (hash.empty() || hash.size() > kMaxHashBytes) {
    return InvalidArgument("hash_len " + std::to_string(hash.size()) + " is outside 1.." +
                           std::to_string(kMaxHashBytes));
  }
  return Status::Ok();
}

Status CheckName(std::string_view name) {
  if (name.empty() || name.size() > kMaxManifestNameBytes) {
    return InvalidArgument("the manifest name is " + std::to_string(name.size()) + " bytes; allowed: 1.." +
                           std::to_string(kMaxManifestNameBytes));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<ChunkStore>> ChunkStore::Open(std::string_view uri, const EnvLookup& env,
                                                     SharedClients& clients) {
  MEMKV_ASSIGN_OR_RETURN(StoreUri parsed, ParseStoreUri(uri));
  MEMKV_ASSIGN_OR_RETURN(StoreSettings settings, SettingsFromEnvironment(env, parsed.servers, parsed.identity));
  MEMKV_ASSIGN_OR_RETURN(std::shared_ptr<Client> client,
                         clients.Get(settings.client_key, settings.shared_clients,
                                     [&] { return Client::Create(settings.client); }));
  return std::unique_ptr<ChunkStore>(new ChunkStore(std::move(client), std::move(parsed.name_space), settings));
}

Status ChunkStore::PutChunk(std::span<const uint8_t> hash, std::span<const uint8_t> data) {
  if (Status s = CheckHash(hash); !s.ok()) return Refuse(s);
  std::string key = ChunkKey(name_space_, hash);
  {
    MutexLock lock(mu_);
    if (pending_.chunks.contains(key) || in_flight_.contains(key)) return Status::Ok();  // immutable
  }
  NoteSize(data.size());
  if (data.size() >= kDirectChunkBytes) return Settle(SendDirect(key, data));
  ChunkBytes copy;
  try {
    copy = std::make_shared<const MallocBuffer>(MallocBuffer::CopyOf(data));
  } catch (const std::bad_alloc& e) {
    MutexLock lock(mu_);
    RefuseCopyLocked(e.what());
    throw;
  }
  bool flush = false;
  {
    MutexLock lock(mu_);
    if (pending_.chunks.contains(key) || in_flight_.contains(key)) return Status::Ok();
    pending_.bytes += copy->size();
    pending_.chunks.emplace(std::move(key), std::move(copy));
    flush = pending_.chunks.size() >= kFlushChunks || pending_.bytes >= buffer_bytes_;
  }
  if (!flush) return Status::Ok();
  return Settle(FlushOnce());
}

void ChunkStore::RefuseCopyLocked(const char* why) {
  if (refused_.has_value()) return;
  refused_ = ResourceExhausted(std::string("a put_chunk could not copy its bytes: ") + why);
  refused_out_of_memory_ = true;
}

Status ChunkStore::Settle(Status status) {
  if (status.code() == StatusCode::kBusy) {
    // A busy server shed the flush: a skipped store, not a failure. The
    // chunks stay buffered for the next flush or put_manifest, as long as
    // the buffer stays within twice its bounds; past that the put reports
    // the server's state, so a saver facing a server that stays busy stops.
    MutexLock lock(mu_);
    if (pending_.chunks.size() < 2 * kFlushChunks && pending_.bytes < 2 * buffer_bytes_) return Status::Ok();
  }
  return status;
}

Result<MallocBuffer> ChunkStore::GetChunk(std::span<const uint8_t> hash) {
  MEMKV_RETURN_IF_ERROR(CheckHash(hash));
  const std::string key = ChunkKey(name_space_, hash);
  if (std::optional<MallocBuffer> cached = cache_.Take(key)) return std::move(*cached);
  ChunkBytes buffered;
  {
    MutexLock lock(mu_);
    // A chunk a flush is sending is read back once the flush is over (from
    // the buffer again if the flush failed).
    lock.Wait(flush_done_, [&]() MEMKV_REQUIRES(mu_) { return !in_flight_.contains(key); });
    if (auto it = pending_.chunks.find(key); it != pending_.chunks.end()) buffered = it->second;
  }
  if (buffered) return MallocBuffer::CopyOf(buffered->span());
  return FetchOne(key, /*use_hint=*/true);
}

Status ChunkStore::PutManifest(std::string_view name, std::span<const uint8_t> data) {
  MEMKV_RETURN_IF_ERROR(CheckName(name));
  MEMKV_RETURN_IF_ERROR(TakeRefusal());
  MEMKV_RETURN_IF_ERROR(FlushForManifest());
  return client_->Put(ManifestKey(name_space_, name), data);
}

Result<MallocBuffer> ChunkStore::GetManifest(std::string_view name) {
  MEMKV_RETURN_IF_ERROR(CheckName(name));
  return FetchOne(ManifestKey(name_space_, name), /*use_hint=*/false);
}

Status ChunkStore::DeleteManifest(std::string_view name) {
  MEMKV_RETURN_IF_ERROR(CheckName(name));
  return client_->Delete(ManifestKey(name_space_, name));
}

Status ChunkStore::PrefetchChunks(std::span<const uint8_t> hashes, size_t hash_len, size_t count) {
  if (count == 0) return Status::Ok();
  if (hash_len == 0 || hash_len > kMaxHashBytes) {
    return InvalidArgument("hash_len " + std::to_string(hash_len) + " is outside 1.." + std::to_string(kMaxHashBytes));
  }
  if (hashes.size() / hash_len < count) {
    return InvalidArgument(std::to_string(count) + " hashes of " + std::to_string(hash_len) + " bytes need " +
                           std::to_string(count * hash_len) + " bytes; got " + std::to_string(hashes.size()));
  }
  if (cache_.max_bytes() == 0) return Status::Ok();  // prefetching is off

  // The keys to fetch, in the caller's order: not cached, not buffered here,
  // each once.
  std::vector<std::string> keys;
  {
    std::unordered_set<std::string> seen;
    MutexLock lock(mu_);
    for (size_t i = 0; i < count; ++i) {
      std::string key = ChunkKey(name_space_, hashes.subspan(i * hash_len, hash_len));
      if (pending_.chunks.contains(key) || in_flight_.contains(key) || !seen.insert(key).second) continue;
      keys.push_back(std::move(key));
    }
  }
  std::erase_if(keys, [&](const std::string& key) { return cache_.Contains(key); });

  size_t missing = 0;
  Status failure;
  size_t next = 0;
  size_t hint = size_hint_.load(std::memory_order_relaxed);
  if (hint == 0 && !keys.empty()) {
    // A fresh handle knows no chunk size yet: read the first chunk alone to
    // learn it, then the rest in one batch of buffers that size.
    Result<std::vector<uint8_t>> first = client_->Get(keys[0]);
    if (first.ok()) {
      NoteSize(first->size());
      cache_.Insert(keys[0], MallocBuffer::CopyOf(*first));
    } else if (first.status().code() == StatusCode::kNotFound) {
      ++missing;
    } else {
      return first.status();
    }
    next = 1;
    hint = size_hint_.load(std::memory_order_relaxed);
    if (hint == 0) hint = kFallbackSizeHint;
  }
  // As many as the cache can hold (the first one included); the rest are
  // left to GetChunk.
  const size_t fit = std::max<uint64_t>(1, cache_.max_bytes() / hint);
  const size_t end = std::min(keys.size(), std::max(next, fit));

  std::vector<std::string> retry;  // larger than the hint: read alone
  for (size_t begin = next; begin < end; begin += kFlushChunks) {
    const size_t n = std::min(end - begin, kFlushChunks);
    std::vector<std::string_view> batch_keys(keys.begin() + static_cast<ptrdiff_t>(begin),
                                             keys.begin() + static_cast<ptrdiff_t>(begin + n));
    std::vector<MallocBuffer> buffers;
    std::vector<std::span<uint8_t>> spans;
    buffers.reserve(n);
    spans.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      buffers.push_back(MallocBuffer::AllocateForReceive(hint));
      spans.push_back(buffers.back().span());
    }
    std::vector<size_t> sizes(n, 0);
    BatchResult result = client_->BatchGetInto(batch_keys, spans, &sizes);
    for (size_t i = 0; i < n; ++i) {
      const Status& s = result.statuses[i];
      if (s.ok()) {
        buffers[i].Shrink(sizes[i]);
        cache_.Insert(keys[begin + i], std::move(buffers[i]));
      } else if (s.code() == StatusCode::kNotFound) {
        ++missing;
      } else if (s.code() == StatusCode::kTooLarge) {
        retry.push_back(keys[begin + i]);
      } else if (failure.ok()) {
        failure = s;
      }
    }
  }
  for (const std::string& key : retry) {
    Result<std::vector<uint8_t>> v = client_->Get(key);
    if (v.ok()) {
      NoteSize(v->size());
      cache_.Insert(key, MallocBuffer::CopyOf(*v));
    } else if (v.status().code() == StatusCode::kNotFound) {
      ++missing;
    } else if (failure.ok()) {
      failure = v.status();
    }
  }
  if (!failure.ok()) return failure;
  if (missing > 0) {
    return NotFound(std::to_string(missing) + " of the " + std::to_string(count) + " chunks are not stored");
  }
  return Status::Ok();
}

Result<MallocBuffer> ChunkStore::FetchOne(const std::string& key, bool use_hint) {
  if (const size_t hint = size_hint_.load(std::memory_order_relaxed); use_hint && hint > 0) {
    MallocBuffer buffer = MallocBuffer::AllocateForReceive(hint);
    Result<size_t> n = client_->GetInto(key, buffer.span());
    if (n.ok()) {
      buffer.Shrink(*n);
      return buffer;
    }
    if (n.status().code() != StatusCode::kTooLarge) return n.status();
  }
  Result<std::vector<uint8_t>> value = client_->Get(key);
  if (!value.ok()) return value.status();
  if (use_hint) NoteSize(value->size());
  return MallocBuffer::CopyOf(*value);
}

void ChunkStore::NoteSize(size_t size) {
  size_t seen = size_hint_.load(std::memory_order_relaxed);
  while (size > seen && !size_hint_.compare_exchange_weak(seen, size, std::memory_order_relaxed)) {
  }
}

Status ChunkStore::Refuse(Status status) {
  MutexLock lock(mu_);
  if (!refused_.has_value()) refused_ = status;
  return status;
}

Status ChunkStore::TakeRefusal() {
  std::optional<Status> refused;
  bool out_of_memory = false;
  {
    MutexLock lock(mu_);
    refused = std::exchange(refused_, std::nullopt);
    out_of_memory = std::exchange(refused_out_of_memory_, false);
  }
  if (!refused.has_value()) return Status::Ok();
  if (out_of_memory) throw OutOfMemory("not written: " + refused->message());
  return refused->WithContext("not written: an earlier put_chunk on this handle was refused");
}

}  // namespace memkv::kvstore
