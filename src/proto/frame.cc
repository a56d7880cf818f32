#include "proto/frame.h"

#include <cstdio>
#include <cstring>

#include "base/bytes.h"

namespace memkv::proto {

std::string OpcodeName(uint8_t opcode) {
  switch (static_cast<Opcode>(opcode)) {
    case Opcode::kPing: return "Ping";
    case Opcode::kConnect: return "Connect";
    case Opcode::kPut: return "TcpPut";
    case Opcode::kGet: return "TcpGet";
    case Opcode::kDelete: return "TcpDelete";
    case Opcode::kExists: return "Exists";
    case Opcode::kBatchPut: return "BatchPut";
    case Opcode::kBatchGet: return "BatchGet";
    case Opcode::kBatchExists: return "BatchExists";
    case Opcode::kList: return "List";
    case Opcode::kStat: return "Stat";
    case Opcode::kMatchPrefix: return "MatchPrefix";
    case Opcode::kBatchPutWith: return "BatchPutWith";
    case Opcode::kServerInfo: return "ServerInfo";
    case Opcode::kIdentify: return "Identify";
    case Opcode::kReport: return "Report";
    case Opcode::kRdmaPut: return "RdmaPut";
    case Opcode::kRdmaCommit: return "RdmaCommit";
    case Opcode::kRdmaGet: return "RdmaGet";
    case Opcode::kRdmaRelease: return "RdmaRelease";
    case Opcode::kRdmaPutWith: return "RdmaPutWith";
    case Opcode::kRdmaSpare: return "RdmaSpare";
    case Opcode::kRdmaCommitTo: return "RdmaCommitTo";
  }
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02x", opcode);
  return buf;
}

bool IsKnownOpcode(uint8_t opcode) { return OpcodeName(opcode).rfind("0x", 0) != 0; }

// Layout of the 40 header bytes; see docs/wire-protocol.md.
//   0 magic[4]  4 version u8  5 opcode u8  6 flags u16  8 request_id u64
//  16 status u16  18 reserved u16 (0)  20 meta_len u32  24 payload_len u64
//  32 payload_checksum u64
void EncodeFields(const FrameHeader& h, uint8_t* out) {
  std::memcpy(out, kMagic, 4);
  out[4] = h.version;
  out[5] = h.opcode;
  StoreLe16(out + 6, h.flags);
  StoreLe64(out + 8, h.request_id);
  StoreLe16(out + 16, static_cast<uint16_t>(h.status));
  StoreLe16(out + 18, 0);
  StoreLe32(out + 20, h.meta_len);
  StoreLe64(out + 24, h.payload_len);
  StoreLe64(out + 32, h.payload_checksum);
}

uint64_t MaxPayloadBytes(const FrameHeader& header) {
  const auto op = static_cast<Opcode>(header.opcode);
  const bool single_value = header.is_response() ? op == Opcode::kGet : op == Opcode::kPut;
  return single_value ? kMaxValueBytesCeiling : kMaxPayloadBytes;
}

Status DecodeFields(const uint8_t* in, FrameHeader* out) {
  out->version = in[4];
  out->opcode = in[5];
  out->flags = LoadLe16(in + 6);
  out->request_id = LoadLe64(in + 8);
  out->status = static_cast<StatusCode>(LoadLe16(in + 16));
  out->meta_len = LoadLe32(in + 20);
  out->payload_len = LoadLe64(in + 24);
  out->payload_checksum = LoadLe64(in + 32);
  if (std::memcmp(in, kMagic, 4) != 0) {
    return ProtocolError("bad magic " + HexEncode(in, 4) + " (expected 4d4b5646 'MKVF'): not a MemKV frame");
  }
  if (out->version == 0) return ProtocolError("frame version 0 is invalid");
  if (out->version > kProtocolVersion) {
    return UnsupportedVersion("frame version " + std::to_string(out->version) +
                              " is newer than the newest this side speaks (" +
                              std::to_string(kProtocolVersion) + ")");
  }
  if ((out->flags & ~kKnownFlags) != 0) {
    return ProtocolError("unknown flag bits 0x" + HexEncode(in + 6, 2) + " in frame header");
  }
  if (LoadLe16(in + 18) != 0) return ProtocolError("reserved header bytes 18..19 must be zero");
  if (out->meta_len > kMaxMetaBytes) {
    return TooLarge("meta_len " + std::to_string(out->meta_len) + " exceeds the limit of " +
                    std::to_string(kMaxMetaBytes) + " bytes");
  }
  if (const uint64_t limit = MaxPayloadBytes(*out); out->payload_len > limit) {
    return TooLarge("payload_len " + std::to_string(out->payload_len) + " exceeds the frame limit of " +
                    std::to_string(limit) + " bytes");
  }
  return Status::Ok();
}

Result<SessionKeys> DeriveSessionKeys(std::span<const uint8_t> master_key,
                                      std::span<const uint8_t, kNonceSize> client_nonce,
                                      std::span<const uint8_t, kNonceSize> server_nonce) {
  MEMKV_ASSIGN_OR_RETURN(auto mac, HmacSha256::Create(master_key));
  SessionKeys keys;
  auto derive = [&](std::string_view label) {
    mac->Begin();
    mac->Update(label.data(), label.size());
    mac->Update(client_nonce.data(), client_nonce.size());
    mac->Update(server_nonce.data(), server_nonce.size());
    return mac->Finish();
  };
  keys.client_to_server = derive("memkv v1 client->server");
  keys.server_to_client = derive("memkv v1 server->client");
  return keys;
}

Result<std::unique_ptr<FrameAuth>> FrameAuth::Create(std::span<const uint8_t> sign_key,
                                                     std::span<const uint8_t> verify_key) {
  MEMKV_ASSIGN_OR_RETURN(auto sign, HmacSha256::Create(sign_key));
  MEMKV_ASSIGN_OR_RETURN(auto verify, HmacSha256::Create(verify_key));
  return std::unique_ptr<FrameAuth>(new FrameAuth(std::move(sign), std::move(verify)));
}

Tag FrameAuth::TagOf(HmacSha256& mac, uint64_t seq, const uint8_t* fields,
                     std::span<const uint8_t> meta) {
  uint8_t seq_bytes[8];
  StoreLe64(seq_bytes, seq);
  mac.Begin();
  mac.Update(seq_bytes, sizeof(seq_bytes));
  mac.Update(fields, kFieldsSize);
  mac.Update(meta.data(), meta.size());
  return mac.Finish();
}

Tag FrameAuth::SignNext(const uint8_t* fields, std::span<const uint8_t> meta) {
  return TagOf(*sign_, send_seq_++, fields, meta);
}

bool FrameAuth::VerifyNext(const uint8_t* fields, std::span<const uint8_t> meta, const Tag& tag) {
  return TagsEqual(TagOf(*verify_, recv_seq_++, fields, meta), tag);
}

Result<KeyHint> KeyHintOf(std::span<const uint8_t> key) {
  static constexpr std::string_view kLabel = "memkv v1 key id";
  MEMKV_ASSIGN_OR_RETURN(auto mac, HmacSha256::Create(key));
  const Tag tag = mac->Compute(kLabel.data(), kLabel.size());
  KeyHint hint;
  std::memcpy(hint.data(), tag.data(), hint.size());
  return hint;
}

Tag ConnectTag(HmacSha256& master, const uint8_t* fields, std::span<const uint8_t> meta,
               std::span<const uint8_t> client_nonce) {
  static constexpr std::string_view kLabel = "memkv v1 connect";
  master.Begin();
  master.Update(kLabel.data(), kLabel.size());
  master.Update(fields, kFieldsSize);
  master.Update(meta.data(), meta.size());
  master.Update(client_nonce.data(), client_nonce.size());
  return master.Finish();
}

}  // namespace memkv::proto
