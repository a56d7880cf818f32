#include "fuzz/fuzz_targets.h"

#include <string_view>
#include <vector>

#include "config/client_config.h"
#include "config/server_config.h"
#include "proto/frame.h"
#include "proto/messages.h"

namespace memkv::fuzz {

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
  proto::ConnectResponse cr;
  std::span<const uint8_t> rest;
  (void)proto::DecodeConnectResponse(meta, &cr, &rest);
}

void FuzzConfig(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)ParseServerConfig(text, "<fuzz>");
  (void)ParseClientConfigYaml(text, "<fuzz>");
}

}  // namespace memkv::fuzz
