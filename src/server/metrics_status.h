// The /v1/status values too large for a cell of the server's fact table
// (metrics_table.cc): the device list, the namespace and tenant arrays, the
// health object, and the capacity totals. Each writes one JSON value of a
// ServerSnapshot; the table names the field it appears as.
//
// Thread-safety: as the snapshot's (read on the thread that took it).
#ifndef MEMKV_SERVER_METRICS_STATUS_H_
#define MEMKV_SERVER_METRICS_STATUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/json.h"
#include "server/metrics_table.h"

namespace memkv::server {

// "drive0", "drive1", ...: a drive's `device` label and device name.
std::string DeviceName(const drive::DriveStats& d);
// The snapshot's drives; none in memory mode.
const std::vector<drive::DriveStats>& Drives(const ServerSnapshot& s);

// Capacity in total: the drives when there are any (DRAM is their cache),
// else the DRAM pool.
struct Capacity {
  uint64_t raw = 0, usable = 0, used = 0;
};
Capacity TotalCapacity(const ServerSnapshot& s);

// "devices": the DRAM pool, then each drive.
void WriteDevicesJson(const ServerSnapshot& s, JsonWriter& w);
// "namespaces": the reported namespaces, then "other".
void WriteNamespacesJson(const ServerSnapshot& s, JsonWriter& w);
// "tenants": every tenant seen or configured.
void WriteTenantsJson(const ServerSnapshot& s, JsonWriter& w);
// "identities": every (tenant, identity) row, with the identity's fields.
void WriteIdentitiesJson(const ServerSnapshot& s, JsonWriter& w);

}  // namespace memkv::server

#endif  // MEMKV_SERVER_METRICS_STATUS_H_
