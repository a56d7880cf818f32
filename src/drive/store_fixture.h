// A store over temporary files for the extent store's tests.
#ifndef MEMKV_DRIVE_STORE_FIXTURE_H_
#define MEMKV_DRIVE_STORE_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "drive/extent_store.h"
#include "drive/fault_engine.h"
#include "drive/test_util.h"

namespace memkv::drive {

struct StoreFixture {
  TempDir dir;
  std::vector<std::string> paths;
  DriveFormatOptions format;
  std::unique_ptr<ExtentStore> store;
  FaultInjectingEngine* faults = nullptr;  // set by OpenFaulty, owned by the store
  SyncMode sync = SyncMode::kAlways;       // kInterval: flushed by Flush() only (no timer)
  const RealtimeClock* clock = nullptr;    // expiry instants; nullptr: the system's
  int64_t staged_wait_ns = -1;             // ExtentStoreOptions::staged_wait_ns
  std::optional<MasterKey> master_key;     // set: opened with encryption (format.master_key formats so)

  explicit StoreFixture(int drives, uint64_t block = 64 << 10, uint64_t file_bytes = 8 << 20,
                        uint64_t journal_area = 0, const std::string& dir_base = "")
      : dir(dir_base) {
    for (int i = 0; i < drives; ++i) paths.push_back(dir.File("drive" + std::to_string(i)));
    format.drives = paths;
    format.block_size_bytes = block;
    format.file_size_bytes = file_bytes;
    format.journal_area_bytes = journal_area;
  }

  Status Format() { return ExtentStore::Format(format); }

  ExtentStoreOptions Options(std::vector<std::string> drives = {}) const {
    ExtentStoreOptions o;
    o.drives = drives.empty() ? paths : std::move(drives);
    o.io_buffers = 8;
    o.sync = sync;
    o.sync_interval_ms = 0;
    o.realtime_clock = clock;
    o.staged_wait_ns = staged_wait_ns;
    o.master_key = master_key;
    return o;
  }

  Status Open(std::vector<std::string> drives = {}) {
    store.reset();
    faults = nullptr;
    auto s = ExtentStore::Open(Options(std::move(drives)));
    if (!s.ok()) return s.status();
    store = std::move(s).value();
    return Status::Ok();
  }

  // Opens through a FaultInjectingEngine over the pread engine.
  Status OpenFaulty(uint64_t seed = 1, bool volatile_cache = false) {
    store.reset();
    faults = nullptr;
    ExtentStoreOptions o = Options();
    o.io = IoEngineKind::kSync;
    o.wrap_engine = [&, seed, volatile_cache](std::unique_ptr<IoEngine> inner) -> std::unique_ptr<IoEngine> {
      auto f = std::make_unique<FaultInjectingEngine>(std::move(inner), seed);
      if (volatile_cache) f->EnableVolatileCache();
      faults = f.get();
      return f;
    };
    auto s = ExtentStore::Open(o);
    if (!s.ok()) return s.status();
    store = std::move(s).value();
    return Status::Ok();
  }

  void FormatAndOpen() {
    ASSERT_TRUE(Format().ok());
    Status s = Open();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // The value stored under key, or the Status of the miss.
  Result<std::vector<uint8_t>> Get(const std::string& key) { return store->Get(key); }
};

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_STORE_FIXTURE_H_
