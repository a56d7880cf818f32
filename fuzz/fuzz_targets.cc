#include "fuzz/fuzz_targets.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.h"
#include "base/checksum.h"
#include "base/log.h"
#include "config/client_config.h"
#include "config/server_config.h"
#include "drive/format.h"
#include "http/http_client.h"
#include "http/http_connection.h"
#include "http/http_message.h"
#include "http/http_router.h"
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

using drive::JournalAreaHeader;
using drive::JournalRecord;
using drive::kDriveHeaderBytes;
using drive::kDriveUnitBytes;
using drive::kRecordHeadBytes;
using drive::RecordType;
using drive::Superblock;
using http::FindHeadEnd;
using http::HttpHeader;
using http::HttpRequest;
using http::HttpResponse;
using http::HttpRouter;

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
  MEMKV_FUZZ_CHECK(value_len <= proto::kMaxValueBytesCeiling);
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
  MEMKV_FUZZ_CHECK(grant.value_len <= proto::kMaxValueBytesCeiling);
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


// ---- drive tier (src/drive/format.h; byte layouts in docs/storage.md) ----
//
// The drive formats are not canonical the way the wire's are: the decoders
// skip reserved fields, key padding and (for delete and drive-offline
// records) the put-only fields, which the encoders write as zeros; the
// checksum covers those bytes, so only a writer other than ours can put
// anything else there. Re-encoding what a decoder accepted therefore
// reproduces every field byte, writes zeros where it skipped, and reproduces
// the whole structure, checksum included, exactly when the skipped bytes were
// zero. Where the decoded struct carries a skipped field (a delete record's
// generation), decode(encode(x)) == x holds for the fields its type uses.

constexpr uint8_t kDriveSuperblock = 0;
constexpr uint8_t kDriveAreaHeader = 1;
constexpr uint8_t kDriveRecords = 2;
constexpr uint8_t kDriveExtents = 3;
constexpr uint8_t kDriveReseal = 0x04;
constexpr size_t kBlockChecksumAt = kDriveHeaderBytes - 8;  // every 4 KiB block ends in its checksum

using Block = std::array<uint8_t, kDriveHeaderBytes>;

// Bytes [begin, end) of a structure that its decoder skips.
struct Skipped {
  size_t begin;
  size_t end;
};
constexpr Skipped kSuperblockSkipped[] = {{60, 64}, {168, kBlockChecksumAt}};
constexpr Skipped kAreaHeaderSkipped[] = {{72, kBlockChecksumAt}};

bool SameSpan(Bytes a, Bytes b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

Block ToBlock(Bytes in) {
  Block b{};
  std::memcpy(b.data(), in.data(), std::min(in.size(), b.size()));
  return b;
}

void SealBlock(Block* b) { StoreLe64(b->data() + kBlockChecksumAt, Checksum(b->data(), kBlockChecksumAt)); }

// `encoded` is an encoder's output for what a decoder made of `input`, a
// structure whose last 8 bytes are its checksum (see the note above).
void CheckReencoding(Bytes encoded, Bytes input, std::span<const Skipped> skipped) {
  MEMKV_FUZZ_CHECK(encoded.size() == input.size() && input.size() >= 8);
  const size_t checksum_at = input.size() - 8;
  bool skipped_all_zero = true;
  for (size_t i = 0; i < checksum_at; ++i) {
    const bool is_skipped =
        std::any_of(skipped.begin(), skipped.end(), [i](const Skipped& s) { return i >= s.begin && i < s.end; });
    if (is_skipped) {
      MEMKV_FUZZ_CHECK(encoded[i] == 0);  // the encoder zeroes what the decoder skips
      skipped_all_zero &= input[i] == 0;
    } else if (encoded[i] != input[i]) {
      std::fprintf(stderr, "re-encoding differs at byte %zu: 0x%02x, input 0x%02x\n", i, encoded[i], input[i]);
      MEMKV_FUZZ_CHECK(encoded[i] == input[i]);  // every field re-encodes as it was read
    }
  }
  if (skipped_all_zero) MEMKV_FUZZ_CHECK(SameSpan(encoded.subspan(checksum_at), input.subspan(checksum_at)));
}

bool SameSuperblock(const Superblock& a, const Superblock& b) {
  return a.format_version == b.format_version && a.store_uuid == b.store_uuid && a.drive_uuid == b.drive_uuid &&
         a.drive_index == b.drive_index && a.drive_count == b.drive_count &&
         a.logical_block_bytes == b.logical_block_bytes && a.extent_bytes == b.extent_bytes &&
         a.unit_bytes == b.unit_bytes && a.created_unix_ns == b.created_unix_ns && a.device_bytes == b.device_bytes &&
         a.journal_offset == b.journal_offset && a.journal_area_bytes == b.journal_area_bytes &&
         a.data_offset == b.data_offset && a.unit_count == b.unit_count && a.encrypted == b.encrypted &&
         a.open_epoch == b.open_epoch && a.encryption_id == b.encryption_id && a.key_check == b.key_check;
}

bool SameAreaHeader(const JournalAreaHeader& a, const JournalAreaHeader& b) {
  return a.format_version == b.format_version && a.epoch == b.epoch && a.nonce == b.nonce &&
         a.store_uuid == b.store_uuid && a.drive_uuid == b.drive_uuid && a.base_sequence == b.base_sequence &&
         a.base_generation == b.base_generation;
}

// Equal in the fields that a record of that type carries.
bool SameRecord(const JournalRecord& a, const JournalRecord& b) {
  if (a.type != b.type || a.sequence != b.sequence) return false;
  switch (a.type) {
    case RecordType::kPut:
      return a.generation == b.generation && a.value_bytes == b.value_bytes &&
             a.value_checksum == b.value_checksum && a.extents == b.extents && a.key == b.key;
    case RecordType::kDelete: return a.key == b.key;
    case RecordType::kDriveOffline: return a.drive_uuid == b.drive_uuid && a.drive_index == b.drive_index;
  }
  return false;
}

void CheckSuperblock(const Block& block) {
  constexpr std::string_view kWhere = "fuzz-drive";
  Result<Superblock> decoded = drive::DecodeSuperblock(block, kWhere);
  if (!decoded.ok()) {
    const Status& s = decoded.status();
    MEMKV_FUZZ_CHECK(s.message().find(kWhere) != std::string::npos);  // the message names the drive
    // Checked in the documented order: no magic is "not formatted", never damage.
    const bool has_magic = std::memcmp(block.data(), "MEMKVDRV", 8) == 0;
    const uint32_t version = LoadLe32(block.data() + 8);
    const bool version_readable =
        version >= drive::kMinReadableDriveFormatVersion && version <= drive::kDriveFormatVersion;
    MEMKV_FUZZ_CHECK((s.code() == StatusCode::kNotFound) == !has_magic);
    MEMKV_FUZZ_CHECK((s.code() == StatusCode::kUnsupportedVersion) == (has_magic && !version_readable));
    MEMKV_FUZZ_CHECK(s.code() == StatusCode::kNotFound || s.code() == StatusCode::kUnsupportedVersion ||
                     s.code() == StatusCode::kCorruption);
    return;
  }
  const Superblock& sb = *decoded;
  MEMKV_FUZZ_CHECK(sb.format_version >= drive::kMinReadableDriveFormatVersion &&
                   sb.format_version <= drive::kDriveFormatVersion);
  // An extent ref keeps the drive index in 16 bits.
  MEMKV_FUZZ_CHECK(sb.drive_count >= 1 && sb.drive_count <= 65535 && sb.drive_index < sb.drive_count);
  const uint32_t lbs = sb.logical_block_bytes;
  MEMKV_FUZZ_CHECK(lbs >= 512 && lbs <= kDriveHeaderBytes && (lbs & (lbs - 1)) == 0);
  MEMKV_FUZZ_CHECK(sb.extent_bytes > 0 && sb.extent_bytes % kDriveHeaderBytes == 0 && sb.extent_bytes <= (1ull << 30));
  MEMKV_FUZZ_CHECK(sb.unit_bytes == kDriveUnitBytes);
  MEMKV_FUZZ_CHECK(sb.journal_area_bytes >= 2 * kDriveHeaderBytes && sb.journal_area_bytes % kDriveHeaderBytes == 0 &&
                   sb.journal_area_bytes <= (1ull << 40));
  // The regions follow each other without overlap or wrap-around: superblock,
  // the two journal areas, the data units, all inside the device. Computed so that
  // nothing here can overflow (journal_area_bytes <= 2^40 is checked above).
  MEMKV_FUZZ_CHECK(sb.journal_offset >= kDriveHeaderBytes && sb.journal_offset % kDriveHeaderBytes == 0);
  MEMKV_FUZZ_CHECK(sb.journal_offset <= UINT64_MAX - 2 * sb.journal_area_bytes);  // journal end does not wrap
  MEMKV_FUZZ_CHECK(sb.journal_area_offset(1) + sb.journal_area_bytes <= sb.data_offset);
  MEMKV_FUZZ_CHECK(sb.data_offset % kDriveHeaderBytes == 0 && sb.data_offset <= sb.device_bytes);
  MEMKV_FUZZ_CHECK(sb.unit_count <= drive::kMaxUnitsPerDrive);
  MEMKV_FUZZ_CHECK(sb.unit_count <= (sb.device_bytes - sb.data_offset) / sb.unit_bytes);  // units inside the device

  Block reencoded;
  drive::EncodeSuperblock(sb, reencoded);
  CheckReencoding(reencoded, block, kSuperblockSkipped);
  Result<Superblock> again = drive::DecodeSuperblock(reencoded, kWhere);
  MEMKV_FUZZ_CHECK(again.ok() && SameSuperblock(*again, sb));
}

void CheckAreaHeader(const Block& block) {
  Result<JournalAreaHeader> decoded = drive::DecodeJournalAreaHeader(block);
  if (!decoded.ok()) {
    const Status& s = decoded.status();
    MEMKV_FUZZ_CHECK(!s.message().empty());
    MEMKV_FUZZ_CHECK(s.code() == StatusCode::kCorruption || s.code() == StatusCode::kUnsupportedVersion);
    return;
  }
  const JournalAreaHeader& h = *decoded;
  // The oldest format this binary reads, as for the superblock and extents.
  MEMKV_FUZZ_CHECK(h.format_version >= drive::kMinReadableDriveFormatVersion &&
                   h.format_version <= drive::kDriveFormatVersion);
  Block reencoded;
  drive::EncodeJournalAreaHeader(h, reencoded);
  CheckReencoding(reencoded, block, kAreaHeaderSkipped);
  Result<JournalAreaHeader> again = drive::DecodeJournalAreaHeader(reencoded);
  MEMKV_FUZZ_CHECK(again.ok() && SameAreaHeader(*again, h));
}

// Where a record puts its length and link, and how it is checksummed
// (docs/storage.md, "Journal record"): what EncodeRecord would write there.
void ResealRecord(std::span<uint8_t> rec, uint64_t link) {
  if (rec.size() < kRecordHeadBytes + 8) return;
  const uint32_t n = LoadLe32(rec.data() + 8);
  if (n < kRecordHeadBytes + 8 || n % 8 != 0 || n > rec.size()) return;
  StoreLe64(rec.data() + 16, link);
  StoreLe64(rec.data() + n - 8, Checksum(rec.data(), n - 8));
}

// A record's skipped bytes: the key's padding to 8; in delete and
// drive-offline records the put-only fields (generation, value length and
// checksum at 32..55); after a drive-offline record's drive index, 4 zeros.
std::vector<Skipped> RecordSkipped(const JournalRecord& r) {
  const size_t key_end = kRecordHeadBytes + r.key.size();
  const size_t padded_key_end = kRecordHeadBytes + ((r.key.size() + 7) & ~size_t{7});
  switch (r.type) {
    case RecordType::kPut: return {{key_end, padded_key_end}};
    case RecordType::kDelete: return {{32, kRecordHeadBytes}, {key_end, padded_key_end}};
    case RecordType::kDriveOffline: return {{32, kRecordHeadBytes}, {kRecordHeadBytes + 20, kRecordHeadBytes + 24}};
  }
  return {};
}

// One accepted record at the front of `rest`, decoded with `link`.
void CheckRecord(Bytes rest, uint64_t link, const JournalRecord& r, size_t consumed, uint64_t checksum) {
  MEMKV_FUZZ_CHECK(consumed > 0 && consumed <= rest.size());  // replay moves forward, inside the area
  MEMKV_FUZZ_CHECK(consumed % 8 == 0 && consumed >= kRecordHeadBytes + 8);
  MEMKV_FUZZ_CHECK(consumed == drive::EncodedRecordBytes(r));
  MEMKV_FUZZ_CHECK(consumed == LoadLe32(rest.data() + 8));  // the record's own length field
  MEMKV_FUZZ_CHECK(checksum == LoadLe64(rest.data() + consumed - 8));  // the next link is this record's checksum
  MEMKV_FUZZ_CHECK(r.type == RecordType::kPut || r.type == RecordType::kDelete || r.type == RecordType::kDriveOffline);
  switch (r.type) {
    case RecordType::kPut:
      MEMKV_FUZZ_CHECK(!r.key.empty() && r.key.size() <= drive::kMaxDriveKeyBytes);
      MEMKV_FUZZ_CHECK(r.extents.size() == LoadLe32(rest.data() + 12) &&
                       r.extents.size() <= drive::kMaxExtentsPerValue);
      for (const drive::ExtentRef& e : r.extents) {
        MEMKV_FUZZ_CHECK(e.drive <= 0xFFFF && e.unit <= drive::kMaxUnitsPerDrive);
        MEMKV_FUZZ_CHECK(e.units >= 1 && uint64_t(e.units) * kDriveUnitBytes <= (1ull << 30));  // an extent is 1 GiB at most
      }
      break;
    case RecordType::kDelete:
      MEMKV_FUZZ_CHECK(!r.key.empty() && r.key.size() <= drive::kMaxDriveKeyBytes);
      MEMKV_FUZZ_CHECK(r.extents.empty() && r.drive_uuid.IsZero() && r.drive_index == 0);
      break;
    case RecordType::kDriveOffline:
      MEMKV_FUZZ_CHECK(r.key.empty() && r.extents.empty());
      break;
  }
  const Bytes record = rest.first(consumed);
  // The chain: the same bytes after any other record, or cut short, are not a record.
  JournalRecord ignored;
  size_t ignored_consumed = 0;
  uint64_t ignored_checksum = 0;
  MEMKV_FUZZ_CHECK(!drive::DecodeRecord(record, link ^ 1, &ignored, &ignored_consumed, &ignored_checksum));
  MEMKV_FUZZ_CHECK(
      !drive::DecodeRecord(record.first(consumed - 8), link, &ignored, &ignored_consumed, &ignored_checksum));

  std::vector<uint8_t> reencoded;
  const uint64_t reencoded_checksum = drive::EncodeRecord(r, link, &reencoded);
  const std::vector<Skipped> skipped = RecordSkipped(r);
  CheckReencoding(reencoded, record, skipped);
  MEMKV_FUZZ_CHECK(SameSpan(reencoded, record) == (reencoded_checksum == checksum));
  JournalRecord again;
  size_t again_consumed = 0;
  uint64_t again_checksum = 0;
  MEMKV_FUZZ_CHECK(drive::DecodeRecord(reencoded, link, &again, &again_consumed, &again_checksum));
  MEMKV_FUZZ_CHECK(again_consumed == reencoded.size() && again_checksum == reencoded_checksum);
  MEMKV_FUZZ_CHECK(SameRecord(again, r));
}

void CheckRecords(Bytes area, bool reseal) {
  if (area.size() < 8) return;
  uint64_t link = LoadLe64(area.data());
  std::vector<uint8_t> log(area.begin() + 8, area.end());
  size_t pos = 0;
  size_t records = 0;
  while (pos < log.size()) {
    const std::span<uint8_t> rest(log.data() + pos, log.size() - pos);
    if (reseal) ResealRecord(rest, link);
    JournalRecord r;
    size_t consumed = 0;
    uint64_t checksum = 0;
    if (!drive::DecodeRecord(rest, link, &r, &consumed, &checksum)) break;
    CheckRecord(rest, link, r, consumed, checksum);
    pos += consumed;
    link = checksum;
    ++records;
  }
  MEMKV_FUZZ_CHECK(pos <= log.size() && records * (kRecordHeadBytes + 8) <= log.size());
}

// A value's size, an extent size, then the extents' lengths in units
// (little-endian: 8 bytes, 4 bytes, then 4 bytes each), against the rule
// open applies to every put record before it adopts the value: every extent
// 1 .. extent size / 4 KiB units long, the units adding up to the value's.
void CheckExtentLayout(Bytes in) {
  if (in.size() < 12) return;
  const uint64_t value_bytes = LoadLe64(in.data()) % (uint64_t{1} << 40);
  const uint64_t extent_bytes = (1 + LoadLe32(in.data() + 8) % 4096) * kDriveUnitBytes;  // 4 KiB .. 16 MiB
  std::vector<drive::ExtentRef> extents;
  for (size_t at = 12; at + 4 <= in.size() && extents.size() < drive::kMaxExtentsPerValue; at += 4) {
    extents.push_back(drive::ExtentRef{.drive = 0, .unit = 0, .units = LoadLe32(in.data() + at)});
  }
  const bool ok = drive::ExtentsCoverValue(extents, value_bytes, extent_bytes);
  uint64_t units = 0;
  bool each_fits = true;
  for (const drive::ExtentRef& e : extents) {
    units += e.units;
    each_fits &= e.units >= 1 && uint64_t(e.units) * kDriveUnitBytes <= extent_bytes;
  }
  const uint64_t want = value_bytes / kDriveUnitBytes + (value_bytes % kDriveUnitBytes != 0);
  MEMKV_FUZZ_CHECK(ok == (each_fits && units == want));
  if (ok) {
    // Every extent but the last is full, and the last holds at least one byte.
    const uint64_t before_last = (units - (extents.empty() ? 0 : extents.back().units)) * kDriveUnitBytes;
    MEMKV_FUZZ_CHECK(extents.empty() ? value_bytes == 0 : before_last < value_bytes);
    MEMKV_FUZZ_CHECK(units * kDriveUnitBytes >= value_bytes);
  }
}

// ---- admin HTTP server: request head, router, response ----

// How HttpConnection::DoRead gathers a head: reads of `next_read()` bytes
// (clamped to the room left under `max_head_bytes`), FindHeadEnd resumed
// where the new bytes begin. The offset past the head; 0 when the limit was
// reached first (the connection answers 431) or the input ended first.
template <typename NextRead>
size_t GatherHead(std::string_view in, size_t max_head_bytes, NextRead next_read) {
  std::string buffered;
  while (buffered.size() < max_head_bytes && buffered.size() < in.size()) {
    const size_t room = max_head_bytes - buffered.size();
    const size_t n = std::min({next_read(), room, in.size() - buffered.size()});
    const size_t from = buffered.size();
    buffered.append(in.substr(from, n));
    if (size_t end = FindHeadEnd(buffered, from); end != 0) return end;
  }
  return 0;
}

bool IsTcharForCheck(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

bool IsVisibleAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return c > 0x20 && c < 0x7f;
  });
}

// What ParseRequestHead promises of a request it accepts (http_message.h).
void CheckParsedRequest(const HttpRequest& r) {
  MEMKV_FUZZ_CHECK(!r.method.empty() && r.method.size() <= 32);
  MEMKV_FUZZ_CHECK(std::all_of(r.method.begin(), r.method.end(), IsTcharForCheck));
  MEMKV_FUZZ_CHECK(r.path == "*" || (!r.path.empty() && r.path.front() == '/'));
  MEMKV_FUZZ_CHECK(IsVisibleAscii(r.path) && r.path.find('?') == std::string::npos);
  MEMKV_FUZZ_CHECK(IsVisibleAscii(r.query));
  MEMKV_FUZZ_CHECK(r.version_minor >= 0 && r.version_minor <= 9);
  for (const HttpHeader& h : r.headers) {
    MEMKV_FUZZ_CHECK(!h.name.empty() && std::all_of(h.name.begin(), h.name.end(), IsTcharForCheck));
    MEMKV_FUZZ_CHECK(std::none_of(h.name.begin(), h.name.end(), [](char c) { return c >= 'A' && c <= 'Z'; }));
    for (char ch : h.value) {
      auto c = static_cast<unsigned char>(ch);
      MEMKV_FUZZ_CHECK((c >= 0x20 || c == '\t') && c != 0x7f);  // no CR, LF, NUL: no header injection
    }
    MEMKV_FUZZ_CHECK(h.value.empty() || (h.value.front() != ' ' && h.value.front() != '\t' &&
                                         h.value.back() != ' ' && h.value.back() != '\t'));
    // No body gets past the parser: the admin endpoints take none.
    MEMKV_FUZZ_CHECK(h.name != "transfer-encoding");
    if (h.name == "content-length") MEMKV_FUZZ_CHECK(h.value.find_first_not_of('0') == std::string::npos);
  }
  if (!r.headers.empty()) MEMKV_FUZZ_CHECK(r.Header(r.headers.front().name) == r.headers.front().value);
}

// The routes the request target dispatches to: one of each kind of outcome.
// `failing` is set on the routes whose handler fails (a throw, an invalid
// response), which the router must turn into a 500.
struct FuzzRoute {
  const char* method;
  const char* path;
  bool failing;
};
constexpr FuzzRoute kFuzzRoutes[] = {
    {"GET", "/v1/health", false},   {"GET", "/v1/status", false},   {"POST", "/v1/drain", false},
    {"OPTIONS", "/v1/status", false}, {"DELETE", "/v1/a%20b", false}, {"GET", "/v1/throw", true},
    {"GET", "/v1/invalid", true},
};

const HttpRouter& FuzzRouter() {
  static const HttpRouter* router = [] {
    auto* r = new HttpRouter;
    auto add = [r](const char* method, const char* path, http::HttpHandler h) {
      MEMKV_FUZZ_CHECK(r->Add(method, path, std::move(h)).ok());
    };
    add("GET", "/v1/health", [](const HttpRequest&) { return HttpResponse::Text(200, "ok\n"); });
    add("GET", "/v1/status", [](const HttpRequest& q) {
      // Echoes what the client sent into a response header and the body: a
      // value the parser let through must never break the response.
      HttpResponse out = HttpResponse::Text(200, "{\"query\":\"" + q.query + "\"}");
      out.content_type = "application/json";
      out.headers.push_back({"Cache-Control", "no-store"});
      if (auto echo = q.Header("x-echo")) out.headers.push_back({"X-Echo", std::string(*echo)});
      return out;
    });
    add("POST", "/v1/drain", [](const HttpRequest&) { return HttpResponse::Text(202, "draining\n"); });
    add("OPTIONS", "/v1/status", [](const HttpRequest&) {
      HttpResponse out = HttpResponse::Text(204, "");
      out.headers.push_back({"Allow", "GET, HEAD, OPTIONS"});
      return out;
    });
    add("DELETE", "/v1/a%20b", [](const HttpRequest& q) { return HttpResponse::Text(200, q.path); });
    add("GET", "/v1/throw", [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("fuzz"); });
    add("GET", "/v1/invalid", [](const HttpRequest&) {
      HttpResponse out = HttpResponse::Text(200, "");
      out.headers.push_back({"Content-Length", "1"});  // the server's to write: refused
      return out;
    });
    return r;
  }();
  return *router;
}

// The bytes the connection writes for `response` read back by our own client
// parser (ParseResponseHead): status, length and body agree.
void CheckWrittenResponse(const HttpResponse& response, bool head_only) {
  const std::string wire = http::SerializeResponse(response, head_only, http::HttpDate(784111777));
  const size_t end = FindHeadEnd(wire);
  MEMKV_FUZZ_CHECK(end != 0);
  Result<http::HttpResponseHead> head = http::ParseResponseHead(std::string_view(wire).substr(0, end));
  MEMKV_FUZZ_CHECK(head.ok());
  MEMKV_FUZZ_CHECK(head->response.status == response.status);
  MEMKV_FUZZ_CHECK(!head->chunked);
  const bool no_body = response.status == 204 || response.status == 304;
  MEMKV_FUZZ_CHECK(head->no_body == no_body);
  if (!no_body) MEMKV_FUZZ_CHECK(head->content_length == response.body.size());
  const std::string_view body = std::string_view(wire).substr(end);
  MEMKV_FUZZ_CHECK(body == (head_only || no_body ? std::string_view() : std::string_view(response.body)));
  for (const HttpHeader& h : response.headers) {
    std::string name(h.name.size(), '\0');
    std::transform(h.name.begin(), h.name.end(), name.begin(), http::AsciiToLower);
    MEMKV_FUZZ_CHECK(head->response.Header(name).has_value());
  }
}

// One head as HttpConnection::HandleHead treats it: parse, route, write.
void CheckRequestHead(std::string_view head) {
  Result<HttpRequest> request = http::ParseRequestHead(head);
  if (!request.ok()) {
    const int status = http::HttpStatusForParseError(request.status());
    MEMKV_FUZZ_CHECK(status == 400 || status == 413);
    MEMKV_FUZZ_CHECK(!request.status().message().empty());
    CheckWrittenResponse(HttpResponse::Text(status, std::string(request.status().message()) + "\n"), false);
    return;
  }
  CheckParsedRequest(*request);

  const FuzzRoute* exact = nullptr;
  bool path_known = false;
  bool get_known = false;
  for (const FuzzRoute& r : kFuzzRoutes) {
    if (request->path != r.path) continue;
    path_known = true;
    if (request->method == r.method) exact = &r;
    if (std::string_view(r.method) == "GET") get_known = true;
  }
  const bool is_head = request->method == "HEAD";
  const bool runs_get = exact == nullptr && is_head && get_known;
  int failures_logged = 0;
  LogTarget count_errors;
  count_errors.level = LogLevel::kError;
  count_errors.sink = [&failures_logged](LogLevel, std::string_view, std::string_view) { ++failures_logged; };
  HttpRouter::Outcome outcome;
  {
    ScopedLogTarget scope(&count_errors);
    outcome = FuzzRouter().Dispatch(*request);
  }
  MEMKV_FUZZ_CHECK(http::ValidateResponse(outcome.response).ok());
  MEMKV_FUZZ_CHECK(outcome.head_only == runs_get);
  if (!path_known) {
    MEMKV_FUZZ_CHECK(outcome.response.status == 404 && !outcome.handler_failed);
  } else if (exact == nullptr && !runs_get) {
    MEMKV_FUZZ_CHECK(outcome.response.status == 405 && !outcome.handler_failed);
    MEMKV_FUZZ_CHECK(!outcome.response.headers.empty() && outcome.response.headers.front().name == "Allow");
  } else {
    bool failing = exact != nullptr ? exact->failing : request->path == "/v1/throw" || request->path == "/v1/invalid";
    MEMKV_FUZZ_CHECK(outcome.handler_failed == failing);
    MEMKV_FUZZ_CHECK(failing ? outcome.response.status == 500 : outcome.response.status < 300);
  }
  MEMKV_FUZZ_CHECK(failures_logged == (outcome.handler_failed ? 1 : 0));
  CheckWrittenResponse(outcome.response, outcome.head_only || is_head);
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
  (void)config::ParseServerConfig(text, "<fuzz>");
  (void)config::ParseClientConfigYaml(text, "<fuzz>");
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

void FuzzDriveFormat(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const bool reseal = (data[0] & kDriveReseal) != 0;
  const Bytes rest(data + 1, size - 1);
  // Short blocks are refused by size, before a byte is read.
  if (rest.size() < kDriveHeaderBytes) {
    MEMKV_FUZZ_CHECK(drive::DecodeSuperblock(rest, "fuzz-drive").status().code() == StatusCode::kNotFound);
    MEMKV_FUZZ_CHECK(!drive::DecodeJournalAreaHeader(rest).ok());
  }
  Block block = ToBlock(rest);
  switch (data[0] & 3) {
    case kDriveSuperblock:
      if (reseal) SealBlock(&block);
      CheckSuperblock(block);
      break;
    case kDriveAreaHeader:
      if (reseal) SealBlock(&block);
      CheckAreaHeader(block);
      break;
    case kDriveRecords:
      CheckRecords(rest, reseal);
      break;
    case kDriveExtents:
      CheckExtentLayout(rest);
      break;
  }
}

void FuzzHttpResponse(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t end = FindHeadEnd(in);
  Result<http::HttpResponseHead> head = http::ParseResponseHead(end == 0 ? in : in.substr(0, end));
  if (head.ok()) {
    MEMKV_FUZZ_CHECK(end != 0);  // only a complete head parses
    MEMKV_FUZZ_CHECK(head->response.status >= 100 && head->response.status <= 599);
    MEMKV_FUZZ_CHECK(!(head->chunked && head->content_length.has_value()));
    for (const HttpHeader& h : head->response.headers) {
      MEMKV_FUZZ_CHECK(!h.name.empty());
      MEMKV_FUZZ_CHECK(std::none_of(h.name.begin(), h.name.end(), [](char c) { return c >= 'A' && c <= 'Z'; }));
      MEMKV_FUZZ_CHECK(h.value.find_first_of("\r\n") == std::string::npos);
    }
  }
  const std::string_view body = end == 0 ? in : in.substr(end);
  Result<std::string> decoded = http::DecodeChunked(body);
  MEMKV_FUZZ_CHECK(decoded.ok() == http::ChunkedComplete(body));
  if (decoded.ok()) MEMKV_FUZZ_CHECK(decoded->size() <= body.size());
}

void FuzzHttpRequest(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t limit = http::HttpConnectionLimits{}.max_header_bytes;
  // The head ends at the same place however the bytes trickle in: whole,
  // one at a time, and in reads of uneven sizes.
  const size_t whole = FindHeadEnd(in.substr(0, limit));
  MEMKV_FUZZ_CHECK(GatherHead(in, limit, [] { return size_t{1}; }) == whole);
  uint32_t x = static_cast<uint32_t>(size) * 2654435761u + 1;
  MEMKV_FUZZ_CHECK(GatherHead(in, limit, [&x] {
                     x = x * 1103515245u + 12345u;
                     return size_t{1} + (x >> 16) % 97;
                   }) == whole);
  if (whole != 0) CheckRequestHead(in.substr(0, whole));
  // What follows the first head (a pipelining client's next requests, or a
  // body) the server discards unread; the parser must hold up on it all the
  // same, heads of any length included.
  std::string_view rest = whole != 0 ? in.substr(whole) : in;
  for (size_t end = FindHeadEnd(rest); end != 0; end = FindHeadEnd(rest)) {
    CheckRequestHead(rest.substr(0, end));
    rest.remove_prefix(end);
  }
  if (!rest.empty()) CheckRequestHead(rest);  // an unterminated tail: parsed as if it were a head
}

}  // namespace memkv::fuzz
