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

#include "memkv/put_options.h"
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
// `rest` receives what follows the limits (the RDMA answer, or nothing).
Status DecodeConnectResponse(std::span<const uint8_t> meta, ConnectResponse* out,
                             std::span<const uint8_t>* rest);


// ---- RDMA bootstrap (rides on Connect; docs/rdma.md) ----

using RdmaGid = std::array<uint8_t, 16>;
struct RdmaQp {
  uint32_t qpn = 0;
  uint32_t psn = 0;
};
inline constexpr uint32_t kMaxRdmaQps = 16;
// Longest Connect request meta: the nonce and an offer of kMaxRdmaQps QPs.
inline constexpr size_t kMaxConnectMeta = kNonceSize + 24 + kMaxRdmaQps * 8;

// Appended by a client that wants RDMA to its Connect request meta, after the
// nonce: its QPs, source GID and path MTU.
struct RdmaOffer {
  uint32_t mtu = 4096;
  RdmaGid gid{};
  std::vector<RdmaQp> qps;
};
std::string EncodeRdmaOffer(const RdmaOffer& offer);
// `meta` is what follows the nonce (empty: no offer, *has_offer false).
Status DecodeRdmaOffer(std::span<const uint8_t> meta, bool* has_offer, RdmaOffer* out);

// Appended by the server to its Connect response when the request carried an
// offer.
enum class RdmaAnswerResult : uint8_t {
  kAccepted = 0,
  kRefused = 1,      // e.g. MTU mismatch; `message` says why, naming both values
  kUnavailable = 2,  // the server serves TCP only (no device); `message` says why
};
struct RdmaAnswer {
  RdmaAnswerResult result = RdmaAnswerResult::kUnavailable;
  std::string message;
  uint32_t mtu = 0;
  uint8_t traffic_class = 0;  // the server's resolved marking, applied by the client too
  uint8_t service_level = 0;
  RdmaGid gid{};
  uint32_t rkey = 0;          // of the server's registered pool
  std::vector<RdmaQp> qps;    // one per offered QP, in order
};
std::string EncodeRdmaAnswer(const RdmaAnswer& answer);
Status DecodeRdmaAnswer(std::span<const uint8_t> meta, RdmaAnswer* out);

// ---- RDMA control ops ----

// Where a value's bytes sit in the server's registered pool.
struct RemoteSegment {
  uint64_t addr = 0;
  uint32_t len = 0;
};

// RdmaPut request: the value's length and checksum, then the key.
std::string EncodeRdmaPutRequest(std::string_view key, uint64_t value_len, uint64_t checksum);
Status DecodeRdmaPutRequest(std::span<const uint8_t> meta, std::string_view* key, uint64_t* value_len,
                            uint64_t* checksum);

// RdmaPut response (a landing slot) and RdmaGet response (a pinned value).
struct RdmaGrant {
  uint64_t token = 0;
  uint64_t value_len = 0;
  uint64_t checksum = 0;
  std::vector<RemoteSegment> segments;  // lengths add up to value_len
};
std::string EncodeRdmaGrant(const RdmaGrant& grant);
Status DecodeRdmaGrant(std::span<const uint8_t> meta, RdmaGrant* out);

// RdmaCommit and RdmaRelease requests: the token alone.
std::string EncodeToken(uint64_t token);
Status DecodeToken(std::span<const uint8_t> meta, uint64_t* token);

// Identify: the request's meta is the identity's canonical text (at most
// kMaxIdentityMeta bytes); the response's, the tag the server files it
// under and the name of the tenant the connection's key belongs to ("" for
// an administrator's key).
inline constexpr size_t kMaxIdentityMeta = 8192;
struct IdentifyResponse {
  std::string tag;
  std::string tenant;
};
std::string EncodeIdentifyResponse(const IdentifyResponse& response);
Status DecodeIdentifyResponse(std::span<const uint8_t> meta, IdentifyResponse* out);

// Report: counts the client adds to the server's, since its last report.
struct ClientReport {
  uint64_t fetched_in_time = 0;  // restored blocks the engine used (it did not recompute them)
  uint64_t fetched_late = 0;     // restored blocks that came too late to be used
  uint64_t stores_shed = 0;      // stores the client dropped because the tier was slow
  bool empty() const { return fetched_in_time == 0 && fetched_late == 0 && stores_shed == 0; }
};
std::string EncodeClientReport(const ClientReport& report);
Status DecodeClientReport(std::span<const uint8_t> meta, ClientReport* out);

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

// List request: the keys that start with `prefix` and sort (bytewise) after
// `after` (empty: from the first), at most `limit` (1..kMaxBatchItems) of them.
// Prefix and `after` may be empty; each is at most kMaxKeyBytes.
struct ListRequest {
  std::string_view prefix;
  std::string_view after;
  uint32_t limit = kMaxBatchItems;
};
std::string EncodeListRequest(const ListRequest& request);
Status DecodeListRequest(std::span<const uint8_t> meta, ListRequest* out);

// List response: the keys in bytewise order, and whether the server holds
// more after the last of them (a page cut short at `limit`).
struct ListResponse {
  std::vector<std::string_view> keys;
  bool more = false;
};
std::string EncodeListResponse(std::span<const std::string_view> keys, bool more);
// Checks every key's length, the order (strictly increasing) and the count
// (at most `limit`).
Status DecodeListResponse(std::span<const uint8_t> meta, uint32_t limit, ListResponse* out);

// Stat response: the value's size (the request is the key, as for Exists).
std::string EncodeStatResponse(uint64_t value_len);
Status DecodeStatResponse(std::span<const uint8_t> meta, uint64_t* value_len);

// ---- Put options (docs/wire-protocol.md "Put options") ----

// Checks what a receiver checks: retention 0..2, hash kind 0..1, parent key
// at most kMaxKeyBytes, each hash at most kMaxBlockHashBytes; InvalidArgument
// naming the field and what is allowed.
Status CheckPutOptions(const PutOptions& options);
// Encoded size of `options`.
size_t PutOptionsWireBytes(const PutOptions& options);

// BatchPutWith request: BatchPut's items, each followed by its options.
// `options` has one entry per item.
std::string EncodeBatchPutWithRequest(std::span<const PutItem> items, std::span<const PutOptions> options);
Status DecodeBatchPutWithRequest(std::span<const uint8_t> meta, uint64_t payload_len, std::vector<PutItem>* items,
                                 std::vector<PutOptions>* options);
// Encoded size of one BatchPutWith item (meta bytes).
size_t BatchPutWithItemBytes(std::string_view key, const PutOptions& options);

// BatchPutWith response: per item its status and message (an item refused
// by the store, say a pin past the pinned-bytes cap, says why). A message
// longer than kMaxStatusMessageBytes is cut.
inline constexpr size_t kMaxStatusMessageBytes = 1024;
std::string EncodeStatusMessageList(std::span<const Status> statuses);
Status DecodeStatusMessageList(std::span<const uint8_t> meta, uint32_t expected_count, std::vector<Status>* out);

// RdmaPutWith request: RdmaPut's value length and checksum, the options, then the key.
std::string EncodeRdmaPutWithRequest(std::string_view key, uint64_t value_len, uint64_t checksum,
                                     const PutOptions& options);
Status DecodeRdmaPutWithRequest(std::span<const uint8_t> meta, std::string_view* key, uint64_t* value_len,
                                uint64_t* checksum, PutOptions* options);

// RdmaSpare request: RdmaPut's, under the key of the put it follows (the
// slot holds that key's quotas), checksum 0 as the bytes are not known yet.
// Response: a grant (checksum 0).
inline constexpr uint64_t kMaxRdmaSpareBytes = uint64_t{16} << 20;
// Spares a connection may hold: the one a put is writing, and the next one,
// asked for while it writes.
inline constexpr uint32_t kMaxRdmaSpares = 2;

// RdmaCommitTo request: a spare slot's token, then RdmaPutWith's body (the
// value's length and checksum, the options, the key it is published under).
std::string EncodeRdmaCommitToRequest(uint64_t token, std::string_view key, uint64_t value_len, uint64_t checksum,
                                      const PutOptions& options);
Status DecodeRdmaCommitToRequest(std::span<const uint8_t> meta, uint64_t* token, std::string_view* key,
                                 uint64_t* value_len, uint64_t* checksum, PutOptions* options);

// ServerInfo: the request has no meta; the response meta is the server's
// identity (docs/fleet.md): its id, kept with its data (the drives' store
// UUID in file and direct mode; fleet.id or one made at start in memory
// mode), the capacity and placement weight it offers, and whether it is
// draining. Clients place keys by id, weighted, so an address change moves
// no key. An old server answers "unknown opcode": the client then places it
// by its address, with equal weights. Layout: u8 id length (1..64), the id
// (printable ASCII), u64 capacity_bytes, u64 weight (0: use capacity_bytes),
// u8 flags (bit 0: draining; bit 1: busy); later fields may follow and are
// ignored by older clients.
inline constexpr size_t kMaxServerIdBytes = 64;
struct ServerInfo {
  std::string id;
  uint64_t capacity_bytes = 0;  // DRAM pool plus drives, as configured
  uint64_t weight = 0;          // placement weight; 0 = capacity_bytes
  bool draining = false;        // takes no new keys (answers puts Draining)
  bool busy = false;            // shedding puts right now (answers them Busy)
};
std::string EncodeServerInfo(const ServerInfo& info);
// InvalidArgument/ProtocolError-style errors name what was wrong.
Status DecodeServerInfo(std::span<const uint8_t> meta, ServerInfo* out);

// MatchPrefix: the request is a key list (as BatchExists); the response is
// the number of leading keys stored (at most the request's count).
std::string EncodeMatchPrefixResponse(uint32_t matched);
Status DecodeMatchPrefixResponse(std::span<const uint8_t> meta, uint32_t count, uint32_t* matched);

// Length of the leading run of Ok statuses: the present prefix of a batch.
size_t PresentPrefix(std::span<const StatusCode> statuses);

}  // namespace memkv::proto

#endif  // MEMKV_PROTO_MESSAGES_H_
