#include "fuzz/fuzz_targets.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/client_config.h"
#include "config/server_config.h"
#include "proto/frame.h"
#include "proto/messages.h"
#include "verbs/detect.h"

// Aborts, naming the broken invariant: a crash to libFuzzer (which saves the
// input), a failed test to ctest.
#define MEMKV_FUZZ_CHECK(cond)                                                                  \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "%s:%d: fuzz invariant violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                             \
    }                                                                                           \
  } while (0)

namespace memkv::fuzz {
namespace {

using Bytes = std::span<const uint8_t>;

bool SameBytes(std::string_view encoded, Bytes input) {
  return encoded.size() == input.size() &&
         (input.empty() || std::memcmp(encoded.data(), input.data(), input.size()) == 0);
}

// Each Check* decodes `meta` and, when the decoder accepts it, checks what
// must then hold. Decoding a message and encoding the result reproduces the
// message byte for byte: the formats have no padding and no slack.

void CheckConnectResponse(Bytes meta) {
  proto::ConnectResponse cr;
  Bytes rest;
  const size_t limits_size = proto::EncodeConnectResponse(cr).size();
  if (!proto::DecodeConnectResponse(meta, &cr, &rest).ok()) {
    MEMKV_FUZZ_CHECK(meta.size() < limits_size);  // only a short meta is refused
    return;
  }
  // `rest` is exactly the tail after the limits, and the limits round-trip.
  MEMKV_FUZZ_CHECK(rest.size() == meta.size() - limits_size);
  MEMKV_FUZZ_CHECK(rest.data() == meta.data() + limits_size);
  MEMKV_FUZZ_CHECK(SameBytes(proto::EncodeConnectResponse(cr), meta.first(limits_size)));
}

void CheckRdmaOffer(Bytes meta) {
  bool has_offer = !meta.empty();
  proto::RdmaOffer offer;
  Status s = proto::DecodeRdmaOffer(meta, &has_offer, &offer);
  MEMKV_FUZZ_CHECK(has_offer == !meta.empty());
  if (!s.ok()) {
    MEMKV_FUZZ_CHECK(!meta.empty());  // no offer is not an error
    MEMKV_FUZZ_CHECK(!s.message().empty());
    return;
  }
  if (!has_offer) return;
  MEMKV_FUZZ_CHECK(!offer.qps.empty() && offer.qps.size() <= proto::kMaxRdmaQps);
  // An accepted offer fits the Connect request the server takes.
  MEMKV_FUZZ_CHECK(proto::kNonceSize + meta.size() <= proto::kMaxConnectMeta);
  MEMKV_FUZZ_CHECK(SameBytes(proto::EncodeRdmaOffer(offer), meta));
}

void CheckRdmaAnswer(Bytes meta) {
  proto::RdmaAnswer answer;
  if (!proto::DecodeRdmaAnswer(meta, &answer).ok()) return;
  MEMKV_FUZZ_CHECK(static_cast<uint8_t>(answer.result) <= static_cast<uint8_t>(proto::RdmaAnswerResult::kUnavailable));
  if (answer.result == proto::RdmaAnswerResult::kAccepted) {
    MEMKV_FUZZ_CHECK(!answer.qps.empty() && answer.qps.size() <= proto::kMaxRdmaQps);
    MEMKV_FUZZ_CHECK(answer.service_level <= 15);
  } else {
    MEMKV_FUZZ_CHECK(answer.qps.empty());
  }
  MEMKV_FUZZ_CHECK(answer.message.size() <= meta.size());
  MEMKV_FUZZ_CHECK(SameBytes(proto::EncodeRdmaAnswer(answer), meta));
}

void CheckRdmaPutRequest(Bytes meta) {
  std::string_view key;
  uint64_t value_len = 0;
  uint64_t checksum = 0;
  if (!proto::DecodeRdmaPutRequest(meta, &key, &value_len, &checksum).ok()) return;
  MEMKV_FUZZ_CHECK(proto::CheckKey(key).ok());
  MEMKV_FUZZ_CHECK(value_len <= proto::kMaxValueBytes);
  // The key is a view of the meta's tail, not a copy and not past its end.
  MEMKV_FUZZ_CHECK(key.data() + key.size() == reinterpret_cast<const char*>(meta.data()) + meta.size());
  MEMKV_FUZZ_CHECK(SameBytes(proto::EncodeRdmaPutRequest(key, value_len, checksum), meta));
}

void CheckRdmaGrant(Bytes meta) {
  proto::RdmaGrant grant;
  if (!proto::DecodeRdmaGrant(meta, &grant).ok()) return;
  uint64_t total = 0;
  for (const proto::RemoteSegment& s : grant.segments) total += s.len;
  MEMKV_FUZZ_CHECK(total == grant.value_len);  // the client reads exactly the value, no more
  MEMKV_FUZZ_CHECK(grant.value_len <= proto::kMaxValueBytes);
  MEMKV_FUZZ_CHECK(SameBytes(proto::EncodeRdmaGrant(grant), meta));
}

void CheckToken(Bytes meta) {
  uint64_t token = 0;
  Status s = proto::DecodeToken(meta, &token);
  MEMKV_FUZZ_CHECK(s.ok() == (meta.size() == sizeof(token)));
  if (s.ok()) MEMKV_FUZZ_CHECK(SameBytes(proto::EncodeToken(token), meta));
}

bool Lossless(const verbs::DcbConfig& dcb, uint8_t prio) { return prio < 8 && ((dcb.pfc_enabled >> prio) & 1) != 0; }

bool Maps(const verbs::DcbConfig& dcb, uint32_t dscp, uint32_t prio) {
  for (const auto& [d, p] : dcb.dscp_to_priority) {
    if (d == dscp && p == prio) return true;
  }
  return false;
}

// A healthy RoCE port with one RoCE v2 IPv4 GID, so that every warning
// ResolvePath gives comes from the DCB side.
verbs::PortInfo HealthyPort() {
  verbs::PortInfo port;
  port.device = "mlx5_0";
  port.active = true;
  port.state = "ACTIVE";
  port.active_mtu = 4096;
  port.max_mtu = 4096;
  port.netdev = "enp1s0f0";
  verbs::GidEntry e;
  e.index = 3;
  e.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
  e.type = verbs::GidType::kRoceV2;
  e.netdev = port.netdev;
  port.gids.push_back(e);
  return port;
}

}  // namespace

void FuzzFrame(const uint8_t* data, size_t size) {
  if (size >= proto::kFieldsSize) {
    proto::FrameHeader h;
    (void)proto::DecodeFields(data, &h);
  }
  std::span<const uint8_t> meta(data, size);
  uint64_t payload_len = size > 0 ? data[0] * 1000ULL : 0;
  std::vector<proto::PutItem> puts;
  (void)proto::DecodeBatchPutRequest(meta, payload_len, &puts);
  std::vector<std::string_view> keys;
  (void)proto::DecodeKeyList(meta, &keys);
  std::vector<StatusCode> statuses;
  (void)proto::DecodeStatusList(meta, size > 0 ? data[size - 1] : 0, &statuses);
  std::vector<proto::GetItem> gets;
  (void)proto::DecodeBatchGetResponse(meta, size > 1 ? data[1] : 0, payload_len, &gets);
  CheckConnectResponse(meta);
  CheckRdmaOffer(meta);
  CheckRdmaAnswer(meta);
  CheckRdmaPutRequest(meta);
  CheckRdmaGrant(meta);
  CheckToken(meta);
}

void FuzzConfig(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)ParseServerConfig(text, "<fuzz>");
  (void)ParseClientConfigYaml(text, "<fuzz>");
}

void FuzzRdmaOffer(const uint8_t* data, size_t size) { CheckRdmaOffer(Bytes(data, size)); }

void FuzzRdmaAnswer(const uint8_t* data, size_t size) {
  Bytes meta(data, size);
  CheckConnectResponse(meta);
  proto::ConnectResponse cr;
  Bytes rest;
  if (proto::DecodeConnectResponse(meta, &cr, &rest).ok()) CheckRdmaAnswer(rest);
}

void FuzzRdmaPutRequest(const uint8_t* data, size_t size) { CheckRdmaPutRequest(Bytes(data, size)); }

void FuzzRdmaGrant(const uint8_t* data, size_t size) { CheckRdmaGrant(Bytes(data, size)); }

void FuzzToken(const uint8_t* data, size_t size) { CheckToken(Bytes(data, size)); }

void FuzzDcbReply(const uint8_t* data, size_t size) {
  Result<verbs::DcbConfig> dcb = verbs::ParseDcbReply(Bytes(data, size));
  bool any_lossless = false, preferred_lossless = false, any_lossless_on3 = false;
  const uint8_t* dscp26_prio = nullptr;  // the first entry for DSCP 26 in the NIC's order
  if (dcb.ok()) {
    MEMKV_FUZZ_CHECK(dcb->has_pfc || dcb->pfc_enabled == 0);
    // Each entry took an attribute header and a dcb_app (4 + 4 bytes).
    MEMKV_FUZZ_CHECK(dcb->dscp_to_priority.size() * 8 <= size);
    for (const auto& [dscp, prio] : dcb->dscp_to_priority) {
      MEMKV_FUZZ_CHECK(dscp <= 63 && prio <= 7);
      if (Lossless(*dcb, prio)) {
        any_lossless = true;
        preferred_lossless |= dscp == 26 && prio == 3;
        any_lossless_on3 |= prio == 3;
      }
      if (dscp == 26 && dscp26_prio == nullptr) dscp26_prio = &prio;
    }
  } else {
    MEMKV_FUZZ_CHECK(!dcb.status().message().empty());
  }

  // What the parse feeds: auto-detection of traffic class and service level.
  const verbs::PortInfo port = HealthyPort();
  // All auto: a lossless DSCP when there is one (DSCP 26 -> 3 first), else
  // both 0 with exactly one warning.
  verbs::ResolvedPath p = verbs::ResolvePath(port, dcb, 0, 0, 0);
  MEMKV_FUZZ_CHECK(p.gid_index == 3);
  MEMKV_FUZZ_CHECK(p.dscp == static_cast<uint32_t>(p.traffic_class >> 2) && (p.traffic_class & 3) == 0);
  if (any_lossless) {
    MEMKV_FUZZ_CHECK(p.warnings.empty());
    MEMKV_FUZZ_CHECK(Maps(*dcb, p.dscp, p.service_level) && Lossless(*dcb, p.service_level));
    if (preferred_lossless) MEMKV_FUZZ_CHECK(p.dscp == 26 && p.service_level == 3);
  } else {
    MEMKV_FUZZ_CHECK(p.traffic_class == 0 && p.service_level == 0);
    MEMKV_FUZZ_CHECK(p.warnings.size() == 1);
  }
  // Pinned DSCP 26, auto service level: the priority the NIC maps DSCP 26 to.
  verbs::ResolvedPath pinned_tc = verbs::ResolvePath(port, dcb, 0, 104, 0);
  MEMKV_FUZZ_CHECK(pinned_tc.traffic_class == 104 && pinned_tc.dscp == 26);
  if (dscp26_prio != nullptr) {
    MEMKV_FUZZ_CHECK(pinned_tc.service_level == *dscp26_prio && pinned_tc.warnings.empty());
  } else {
    MEMKV_FUZZ_CHECK(pinned_tc.service_level == 0 && pinned_tc.warnings.size() == 1);
  }
  // Pinned service level 3, auto DSCP: a lossless DSCP on priority 3 or none.
  verbs::ResolvedPath pinned_sl = verbs::ResolvePath(port, dcb, 0, 0, 3);
  MEMKV_FUZZ_CHECK(pinned_sl.service_level == 3);
  if (any_lossless_on3) {
    MEMKV_FUZZ_CHECK(Maps(*dcb, pinned_sl.dscp, 3) && pinned_sl.warnings.empty());
  } else {
    MEMKV_FUZZ_CHECK(pinned_sl.traffic_class == 0 && pinned_sl.warnings.size() == 1);
  }
}

}  // namespace memkv::fuzz
