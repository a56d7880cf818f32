// Meta sections of each opcode (docs/wire-protocol.md "Messages"): encoders
// for the sender and checked decoders for the receiver. Decoded string_views
// point into the meta buffer the caller passed in. Pure code.
#ifndef MEMKV_PROTO_MESSAGES_H_
#define MEMKV_PROTO_MESSAGES_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/status.h"
#include "proto/frame.h"

namespace memkv::proto {

// Connect request meta: client nonce. Response meta: server nonce + limits.
struct ConnectResponse {
  std::array<uint8_t, kNonceSize> server_nonce{};
  uint32_t max_key_bytes = kMaxKeyBytes;
  uint64_t max_value_bytes = kMaxValueBytes;
  uint32_t max_batch_items = kMaxBatchItems;
  uint32_t max_inflight = kMaxInflightPerConnection;
};
std::string EncodeConnectResponse(const ConnectResponse& response);
Status DecodeConnectResponse(std::span<const uint8_t> meta, ConnectResponse* out);

// Single-key ops carry the key as the whole meta. Checks 1..kMaxKeyBytes.
Status CheckKey(std::string_view key);

// BatchPut request item; values follow in the payload in item order.
struct PutItem {
  std::string_view key;
  uint64_t value_len = 0;
  uint64_t checksum = 0;
};
std::string EncodeBatchPutRequest(std::span<const PutItem> items);
Status DecodeBatchPutRequest(std::span<const uint8_t> meta, uint64_t payload_len,
                             std::vector<PutItem>* out);

// BatchGet / BatchExists request: a list of keys.
std::string EncodeKeyList(std::span<const std::string_view> keys);
Status DecodeKeyList(std::span<const uint8_t> meta, std::vector<std::string_view>* out);

// BatchPut response (and BatchExists, whose per-item status is Ok or NotFound).
std::string EncodeStatusList(std::span<const StatusCode> statuses);
Status DecodeStatusList(std::span<const uint8_t> meta, uint32_t expected_count,
                        std::vector<StatusCode>* out);

// BatchGet response item; the payload holds the values of the Ok items, in order.
struct GetItem {
  StatusCode status = StatusCode::kOk;
  uint64_t value_len = 0;
  uint64_t checksum = 0;
};
std::string EncodeBatchGetResponse(std::span<const GetItem> items);
Status DecodeBatchGetResponse(std::span<const uint8_t> meta, uint32_t expected_count,
                              uint64_t payload_len, std::vector<GetItem>* out);

// Length of the leading run of Ok statuses: the present prefix of a batch.
size_t PresentPrefix(std::span<const StatusCode> statuses);

}  // namespace memkv::proto

#endif  // MEMKV_PROTO_MESSAGES_H_
