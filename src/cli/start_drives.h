// memkv start: the drive tier's start-up (start_drives.cc).
#ifndef MEMKV_CLI_START_DRIVES_H_
#define MEMKV_CLI_START_DRIVES_H_

#include <memory>

#include "config/server_config.h"
#include "drive/extent_store.h"
#include "memkv/status.h"

namespace memkv::cli {

// Opens the drives of storage.mode file or direct. In file mode, when none of
// the drive files exists yet (or all are empty), they are created and
// formatted first: drives[i].size each, else 4 GiB capped at half the free
// space. Drive files missing from an existing store stay missing: the store
// opens degraded. Refuses (with the reason and the fix) unformatted block
// devices (memkv setup formats them), drives of a newer format, and drives of
// different stores. Logs what it opened, and each drive that is offline.
Result<std::unique_ptr<ExtentStore>> OpenDrives(const StorageConfig& storage);

}  // namespace memkv::cli

#endif  // MEMKV_CLI_START_DRIVES_H_
