// The drive tier's start-up (open_drives.cc): what the Daemon opens in
// storage.mode file or direct, and what `memkv start --check` checks first.
// Runs on the caller's thread; logs what it opened under the "start" tag.
#ifndef MEMKV_SERVER_OPEN_DRIVES_H_
#define MEMKV_SERVER_OPEN_DRIVES_H_

#include <memory>

#include "config/server_config.h"
#include "drive/extent_store.h"
#include "memkv/status.h"

namespace memkv::server {

// Opens the drives of storage.mode file or direct. In file mode, when none of
// the drive files exists yet (or all are empty), they are created and
// formatted first: drives[i].size each, else 4 GiB capped at half the free
// space. Drive files missing from an existing store stay missing: the store
// opens degraded. Refuses (with the reason and the fix) unformatted block
// devices (memkv setup formats them), drives of a newer format, and drives of
// different stores. Logs what it opened, and each drive that is offline.
Result<std::unique_ptr<drive::ExtentStore>> OpenDrives(const config::StorageConfig& storage);

// What OpenDrives checks before it creates or opens anything, and what
// `memkv start --check` runs: file mode: each drive file that exists is a
// regular file, and on a first start each one's directory exists or can be
// made and its filesystem has room; direct mode: each drive that exists is a
// readable and writable block device, and at least one exists. A missing
// drive of an existing store is a warning (the store opens degraded without
// it). Creates nothing.
Status CheckDrivesBeforeOpen(const config::StorageConfig& storage);

}  // namespace memkv::server

#endif  // MEMKV_SERVER_OPEN_DRIVES_H_
