// TestEntry: a PolicyEntry that owns its key, for the kit's unit tests.
#ifndef MEMKV_STORAGE_POLICY_TEST_ENTRY_H_
#define MEMKV_STORAGE_POLICY_TEST_ENTRY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "storage/policy/policy_entry.h"

namespace memkv::storage::policy::testing {

struct TestEntry : PolicyEntry {
  TestEntry(std::string k, uint64_t bytes, Retention r = Retention::kNormal, std::string parent = "")
      : key(std::move(k)), parent_storage(std::move(parent)) {
    stored_key = key;
    parent_key = parent_storage;
    value_bytes = bytes;
    cost = bytes;
    retention = r;
  }
  std::string key;
  std::string parent_storage;
};

inline std::unique_ptr<TestEntry> MakeEntry(std::string key, uint64_t bytes, Retention r = Retention::kNormal,
                                            std::string parent = "") {
  return std::make_unique<TestEntry>(std::move(key), bytes, r, std::move(parent));
}

}  // namespace memkv::storage::policy::testing

#endif  // MEMKV_STORAGE_POLICY_TEST_ENTRY_H_
