// The parts of verbs.h that need no NIC: completion status names, MTU and GID
// helpers. Deliberately free of <infiniband/verbs.h> so the fake and the
// tests build without rdma-core; ibverbs.cc static_asserts that the numbers
// used here match the library's enums.
#include <cstdio>
#include <string>

#include "verbs/verbs.h"

namespace memkv::verbs {

namespace {

// enum ibv_wc_status, in order (rdma-core include/infiniband/verbs.h).
constexpr const char* kWcStatusNames[] = {
    "IBV_WC_SUCCESS",
    "IBV_WC_LOC_LEN_ERR",
    "IBV_WC_LOC_QP_OP_ERR",
    "IBV_WC_LOC_EEC_OP_ERR",
    "IBV_WC_LOC_PROT_ERR",
    "IBV_WC_WR_FLUSH_ERR",
    "IBV_WC_MW_BIND_ERR",
    "IBV_WC_BAD_RESP_ERR",
    "IBV_WC_LOC_ACCESS_ERR",
    "IBV_WC_REM_INV_REQ_ERR",
    "IBV_WC_REM_ACCESS_ERR",
    "IBV_WC_REM_OP_ERR",
    "IBV_WC_RETRY_EXC_ERR",
    "IBV_WC_RNR_RETRY_EXC_ERR",
    "IBV_WC_LOC_RDD_VIOL_ERR",
    "IBV_WC_REM_INV_RD_REQ_ERR",
    "IBV_WC_REM_ABORT_ERR",
    "IBV_WC_INV_EECN_ERR",
    "IBV_WC_INV_EEC_STATE_ERR",
    "IBV_WC_FATAL_ERR",
    "IBV_WC_RESP_TIMEOUT_ERR",
    "IBV_WC_GENERAL_ERR",
    "IBV_WC_TM_ERR",
    "IBV_WC_TM_RNDV_INCOMPLETE",
};
constexpr int kWcStatusCount = sizeof(kWcStatusNames) / sizeof(kWcStatusNames[0]);
static_assert(kWcStatusCount == 24);

}  // namespace

std::string WcStatusName(int status) {
  if (status >= 0 && status < kWcStatusCount) {
    return std::string(kWcStatusNames[status]) + " (status " + std::to_string(status) + ")";
  }
  return "IBV_WC status " + std::to_string(status);
}

bool IsValidMtu(uint32_t bytes) {
  return bytes == 256 || bytes == 512 || bytes == 1024 || bytes == 2048 || bytes == 4096;
}

const char* GidTypeName(GidType type) {
  switch (type) {
    case GidType::kIb:
      return "IB";
    case GidType::kRoceV1:
      return "RoCE v1";
    case GidType::kRoceV2:
      return "RoCE v2";
  }
  return "?";
}

std::string GidToString(const Gid& gid) {
  // 8 groups of 4 hex digits, as /sys/class/infiniband/*/ports/*/gids/N.
  char out[40];
  char* p = out;
  for (size_t i = 0; i < gid.size(); i += 2) {
    std::snprintf(p, 5, "%02x%02x", gid[i], gid[i + 1]);
    p += 4;
    if (i + 2 < gid.size()) *p++ = ':';
  }
  return std::string(out, static_cast<size_t>(p - out));
}

bool GidIsIpv4Mapped(const Gid& gid) {
  for (size_t i = 0; i < 10; ++i) {
    if (gid[i] != 0) return false;
  }
  return gid[10] == 0xff && gid[11] == 0xff;
}

std::string GidIpv4(const Gid& gid) {
  if (!GidIsIpv4Mapped(gid)) return "";
  return std::to_string(gid[12]) + "." + std::to_string(gid[13]) + "." + std::to_string(gid[14]) + "." +
         std::to_string(gid[15]);
}

}  // namespace memkv::verbs
