// Helpers for the tiered store's tests: a TieredStore over a real MemoryStore
// and, in tiered mode, a real ExtentStore on files in a temporary directory;
// and a loop of the test's own (an inbox on an eventfd, as a server worker
// has) that drive completions come back to.
#ifndef MEMKV_TIER_TIER_TEST_UTIL_H_
#define MEMKV_TIER_TIER_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "base/unique_fd.h"
#include "drive/store_fixture.h"
#include "drive/test_util.h"
#include "tier/tiered_store.h"

namespace memkv::tier {

// An event loop reduced to its inbox: completions posted by the I/O threads
// run on the thread that calls RunUntil.
class TestLoop {
 public:
  TestLoop() : wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    reply_.inbox = std::make_shared<CompletionInbox>(wake_.get());
    reply_.owner = 1;
  }
  ~TestLoop() { reply_.inbox->Close(); }
  TestLoop(const TestLoop&) = delete;
  TestLoop& operator=(const TestLoop&) = delete;

  const ReplyTo& reply() const { return reply_; }

  // Waits on the eventfd and runs what was posted until `done()` holds;
  // false when the deadline passes first.
  bool RunUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{wake_.get(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count()) + 1) <= 0) continue;
      uint64_t n = 0;
      ssize_t ignored = ::read(wake_.get(), &n, sizeof(n));
      (void)ignored;
      for (auto& [owner, closure] : reply_.inbox->Take()) {
        EXPECT_EQ(owner, reply_.owner);
        closure();
      }
    }
    return true;
  }

 private:
  UniqueFd wake_;
  ReplyTo reply_;
};

inline std::vector<uint8_t> BytesOf(const StoredValue& v) {
  std::vector<uint8_t> out;
  out.reserve(v.size());
  for (const iovec& piece : v.iov()) {
    const auto* p = static_cast<const uint8_t*>(piece.iov_base);
    out.insert(out.end(), p, p + piece.iov_len);
  }
  return out;
}

// Copies `bytes` (put.size() of them) into the reserved room, as a socket
// read or an RDMA WRITE would.
inline void CopyInto(const storage::PendingPut& put, const std::vector<uint8_t>& bytes) {
  size_t at = 0;
  for (const iovec& piece : put.iov()) {
    std::memcpy(piece.iov_base, bytes.data() + at, piece.iov_len);
    at += piece.iov_len;
  }
}

// Reserve (by key, as the server does), copy, Commit; waits for the completion.
inline Status PutNow(TieredStore& store, TestLoop& loop, const std::string& key, const std::vector<uint8_t>& bytes,
                     const PutOptions& options = {}) {
  Result<storage::PendingPut> put = store.Reserve(bytes.size(), key);
  if (!put.ok()) return put.status();
  CopyInto(*put, bytes);
  std::optional<Status> result;
  store.Commit(std::move(put).value(), key, Checksum(bytes.data(), bytes.size()), options, loop.reply(),
               [&](Status s) { result = std::move(s); });
  if (!loop.RunUntil([&] { return result.has_value(); })) return DeadlineExceeded("put " + key);
  return *result;
}

inline Result<StoredValue> GetNow(TieredStore& store, TestLoop& loop, const std::string& key,
                                  ReadNeed need = ReadNeed::kBytes, Completion* how = nullptr) {
  std::optional<Result<StoredValue>> result;
  const Completion c = store.Get(key, need, loop.reply(), [&](Result<StoredValue> v) { result.emplace(std::move(v)); });
  if (how != nullptr) *how = c;
  if (!loop.RunUntil([&] { return result.has_value(); })) return DeadlineExceeded("get " + key);
  return std::move(*result);
}

// The value's bytes, or the status of the miss.
inline Result<std::vector<uint8_t>> GetBytes(TieredStore& store, TestLoop& loop, const std::string& key) {
  Result<StoredValue> v = GetNow(store, loop, key);
  if (!v.ok()) return v.status();
  return BytesOf(*v);
}

inline Status DeleteNow(TieredStore& store, TestLoop& loop, const std::string& key) {
  std::optional<Status> result;
  store.Delete(key, loop.reply(), [&](Status s) { result = std::move(s); });
  if (!loop.RunUntil([&] { return result.has_value(); })) return DeadlineExceeded("delete " + key);
  return *result;
}

inline std::unique_ptr<storage::MemoryStore> NewPool(uint64_t pool_bytes, const RealtimeClock* clock = nullptr) {
  storage::MemoryStoreOptions o;
  o.max_size_bytes = pool_bytes;
  o.realtime_clock = clock;
  o.hugepages = storage::HugePagePolicy::kNever;
  Result<std::unique_ptr<storage::MemoryStore>> created = storage::MemoryStore::Create(o);
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  return created.ok() ? std::move(created).value() : nullptr;
}

// Drive geometry of the tiered tests: 64 KiB extents on two files.
constexpr uint64_t kTestBlockBytes = 64 << 10;

// A tiered store on two drive files (or none: memory mode). The loop is
// destroyed first, so completions it still holds go before the pool.
class TierHarness {
 public:
  // `sync`: the drives' storage.sync (kInterval: flushed by nothing here).
  // `faulty`: the drives run through a FaultInjectingEngine (faults()).
  TierHarness(uint64_t pool_bytes, bool with_drives, TieredStoreOptions options = {},
              uint64_t drive_file_bytes = 8 << 20, const RealtimeClock* clock = nullptr,
              drive::SyncMode sync = drive::SyncMode::kAlways, bool faulty = false)
      : drives_(2, kTestBlockBytes, drive_file_bytes), options_(options) {
    std::unique_ptr<drive::ExtentStore> drives;
    drives_.clock = clock;
    drives_.sync = sync;
    if (with_drives) {
      Status formatted = drives_.Format();
      EXPECT_TRUE(formatted.ok()) << formatted.ToString();
      Status opened = faulty ? drives_.OpenFaulty() : drives_.Open();
      EXPECT_TRUE(opened.ok()) << opened.ToString();
      drives = std::move(drives_.store);
    }
    store_ = std::make_unique<TieredStore>(NewPool(pool_bytes, clock), std::move(drives), options_);
  }

  TieredStore& store() { return *store_; }
  TestLoop& loop() { return loop_; }
  // The fault engine the drives run through (null unless opened faulty).
  drive::FaultInjectingEngine* faults() { return drives_.faults; }

  // Closes the store (drives included) and opens the drive files alone:
  // what an acknowledged operation left on them.
  drive::ExtentStore& ReopenDrives() {
    store_.reset();
    Status opened = drives_.Open();
    EXPECT_TRUE(opened.ok()) << opened.ToString();
    return *drives_.store;
  }

 private:
  drive::StoreFixture drives_;
  TieredStoreOptions options_;
  std::unique_ptr<TieredStore> store_;
  TestLoop loop_;
};

}  // namespace memkv::tier

#endif  // MEMKV_TIER_TIER_TEST_UTIL_H_
