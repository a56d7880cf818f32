#include "server/metrics.h"

#include "proto/frame.h"

namespace memkv::server {

OpSlot OpSlotFor(uint8_t opcode) {
  switch (static_cast<proto::Opcode>(opcode)) {
    case proto::Opcode::kPing: return OpSlot::kPing;
    case proto::Opcode::kConnect: return OpSlot::kConnect;
    case proto::Opcode::kPut: return OpSlot::kPut;
    case proto::Opcode::kGet: return OpSlot::kGet;
    case proto::Opcode::kDelete: return OpSlot::kDelete;
    case proto::Opcode::kExists: return OpSlot::kExists;
    case proto::Opcode::kBatchPut: return OpSlot::kBatchPut;
    case proto::Opcode::kBatchGet: return OpSlot::kBatchGet;
    case proto::Opcode::kBatchExists: return OpSlot::kBatchExists;
    case proto::Opcode::kRdmaPut: return OpSlot::kRdmaPut;
    case proto::Opcode::kRdmaCommit: return OpSlot::kRdmaCommit;
    case proto::Opcode::kRdmaGet: return OpSlot::kRdmaGet;
    case proto::Opcode::kRdmaRelease: return OpSlot::kRdmaRelease;
    case proto::Opcode::kList: return OpSlot::kList;
    case proto::Opcode::kStat: return OpSlot::kStat;
    case proto::Opcode::kMatchPrefix: return OpSlot::kMatchPrefix;
    // Puts with options count with the puts they extend.
    case proto::Opcode::kBatchPutWith: return OpSlot::kBatchPut;
    case proto::Opcode::kRdmaPutWith: return OpSlot::kRdmaPut;
    case proto::Opcode::kRdmaSpare: return OpSlot::kRdmaPut;
    case proto::Opcode::kRdmaCommitTo: return OpSlot::kRdmaCommit;
    case proto::Opcode::kServerInfo:
    case proto::Opcode::kIdentify:
    case proto::Opcode::kReport: return OpSlot::kOther;
  }
  return OpSlot::kOther;
}

std::string_view OpSlotName(OpSlot slot) {
  static constexpr std::string_view kNames[kOpSlots] = {
      "ping",    "connect",   "put",      "get",        "delete",   "exists",       "batch_put",
      "batch_get", "batch_exists", "rdma_put", "rdma_commit", "rdma_get", "rdma_release", "list",
      "stat",    "match_prefix", "other"};
  return kNames[static_cast<size_t>(slot)];
}

std::string_view OpSlotTransport(OpSlot slot) {
  switch (slot) {
    case OpSlot::kRdmaPut:
    case OpSlot::kRdmaCommit:
    case OpSlot::kRdmaGet:
    case OpSlot::kRdmaRelease:
      return "rdma";
    default:
      return "tcp";
  }
}

}  // namespace memkv::server
