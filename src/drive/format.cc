// Encoders and decoders of the on-drive structures. The byte layouts are
// documented in docs/storage.md; keep the two in step.
#include "drive/format.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/bytes.h"
#include "base/checksum.h"

namespace memkv::drive {
namespace {

constexpr char kSuperblockMagic[8] = {'M', 'E', 'M', 'K', 'V', 'D', 'R', 'V'};
constexpr char kAreaMagic[4] = {'M', 'K', 'J', 'A'};
constexpr char kRecordMagic[4] = {'M', 'K', 'J', 'R'};
// A put record's extent: drive and first unit in one word, the length in units in the next.
constexpr size_t kExtentRefBytes = 16;
constexpr uint32_t kMaxUnitsPerExtent = (1u << 30) / kDriveUnitBytes;  // extents are at most 1 GiB
// The checksum of every 4 KiB header block sits in its last 8 bytes.
constexpr size_t kBlockChecksumAt = kDriveHeaderBytes - 8;
// Superblock flags (offset 128).
constexpr uint32_t kSuperblockEncrypted = 0x1;

uint64_t Pad8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

void PutUuid(uint8_t* p, const Uuid& u) { std::memcpy(p, u.bytes.data(), 16); }
Uuid GetUuid(const uint8_t* p) {
  Uuid u;
  std::memcpy(u.bytes.data(), p, 16);
  return u;
}

void SealBlock(std::span<uint8_t, kDriveHeaderBytes> block) {
  StoreLe64(block.data() + kBlockChecksumAt, Checksum(block.data(), kBlockChecksumAt));
}
bool BlockSealed(std::span<const uint8_t> block) {
  return LoadLe64(block.data() + kBlockChecksumAt) == Checksum(block.data(), kBlockChecksumAt);
}

void EncodeExtentRef(const ExtentRef& e, uint8_t* p) {
  StoreLe64(p, (uint64_t(e.drive) << 48) | (e.unit & kMaxUnitsPerDrive));
  StoreLe32(p + 8, e.units);
  StoreLe32(p + 12, 0);
}
// False for a length of 0 or over 1 GiB, or a reserved field that is not zero.
bool DecodeExtentRef(const uint8_t* p, ExtentRef* e) {
  const uint64_t v = LoadLe64(p);
  e->drive = uint32_t(v >> 48);
  e->unit = v & kMaxUnitsPerDrive;
  e->units = LoadLe32(p + 8);
  return e->units >= 1 && e->units <= kMaxUnitsPerExtent && LoadLe32(p + 12) == 0;
}

std::string VersionAdvice(uint32_t version) {
  if (version > kDriveFormatVersion) return "; use a newer memkv";
  return "; a drive of format " + std::to_string(version) +
         " cannot be read by this memkv: erase and reformat it with 'memkv setup --force' (its values are lost; "
         "they are a cache) or serve it with the memkv that wrote it";
}

Status VersionError(const std::string& what, uint32_t version) {
  const bool newer = version > kDriveFormatVersion;
  return UnsupportedVersion(what + " version " + std::to_string(version) + " is " +
                            (newer ? "newer than this binary's format version " + std::to_string(kDriveFormatVersion)
                                   : "older than the oldest this binary reads (format version " +
                                         std::to_string(kMinReadableDriveFormatVersion) + ")") +
                            VersionAdvice(version));
}

size_t BodyBytes(RecordType type, size_t key_bytes, size_t extent_count) {
  switch (type) {
    case RecordType::kPut: return Pad8(key_bytes) + kExtentRefBytes * extent_count;
    case RecordType::kDelete: return Pad8(key_bytes);
    case RecordType::kDriveOffline: return 24;
  }
  return 0;
}

}  // namespace

Uuid Uuid::Random() {
  Uuid u;
  size_t got = 0;
  while (got < u.bytes.size()) {
    ssize_t n = getrandom(u.bytes.data() + got, u.bytes.size() - got, 0);
    if (n > 0) got += size_t(n);
    else if (n < 0 && errno != EINTR) break;  // never on Linux >= 3.17; the bytes stay zero
  }
  u.bytes[6] = uint8_t((u.bytes[6] & 0x0F) | 0x40);  // RFC 4122 version 4
  u.bytes[8] = uint8_t((u.bytes[8] & 0x3F) | 0x80);
  return u;
}

bool Uuid::IsZero() const {
  for (uint8_t b : bytes) {
    if (b != 0) return false;
  }
  return true;
}

std::string Uuid::ToString() const {
  std::string hex = HexEncode(bytes.data(), bytes.size());
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) +
         "-" + hex.substr(20);
}

// ---------------------------------------------------------------- superblock

void EncodeSuperblock(const Superblock& sb, std::span<uint8_t, kDriveHeaderBytes> out) {
  uint8_t* p = out.data();
  std::memset(p, 0, kDriveHeaderBytes);
  std::memcpy(p, kSuperblockMagic, 8);
  StoreLe32(p + 8, sb.format_version);
  StoreLe32(p + 12, kDriveHeaderBytes);
  PutUuid(p + 16, sb.store_uuid);
  PutUuid(p + 32, sb.drive_uuid);
  StoreLe32(p + 48, sb.drive_index);
  StoreLe32(p + 52, sb.drive_count);
  StoreLe32(p + 56, sb.logical_block_bytes);
  StoreLe64(p + 64, sb.extent_bytes);
  StoreLe64(p + 72, sb.unit_bytes);
  StoreLe64(p + 80, sb.created_unix_ns);
  StoreLe64(p + 88, sb.device_bytes);
  StoreLe64(p + 96, sb.journal_offset);
  StoreLe64(p + 104, sb.journal_area_bytes);
  StoreLe64(p + 112, sb.data_offset);
  StoreLe64(p + 120, sb.unit_count);
  StoreLe32(p + 128, sb.encrypted ? kSuperblockEncrypted : 0);
  StoreLe32(p + 132, sb.open_epoch);
  PutUuid(p + 136, sb.encryption_id);
  std::memcpy(p + 152, sb.key_check.data(), sb.key_check.size());
  SealBlock(out);
}

Result<Superblock> DecodeSuperblock(std::span<const uint8_t> block, std::string_view where) {
  const std::string at(where);
  if (block.size() < kDriveHeaderBytes || std::memcmp(block.data(), kSuperblockMagic, 8) != 0) {
    return NotFound(at + ": no MemKV superblock (not formatted for MemKV)");
  }
  const uint8_t* p = block.data();
  Superblock sb;
  sb.format_version = LoadLe32(p + 8);
  // The version is checked before anything else: another version may put
  // the checksum and every field elsewhere.
  if (sb.format_version > kDriveFormatVersion || sb.format_version < kMinReadableDriveFormatVersion) {
    return VersionError(at + ": on-drive format", sb.format_version);
  }
  if (!BlockSealed(block)) return Corruption(at + ": superblock checksum mismatch");
  if (LoadLe32(p + 12) != kDriveHeaderBytes) return Corruption(at + ": superblock header size is not 4096");
  sb.store_uuid = GetUuid(p + 16);
  sb.drive_uuid = GetUuid(p + 32);
  sb.drive_index = LoadLe32(p + 48);
  sb.drive_count = LoadLe32(p + 52);
  sb.logical_block_bytes = LoadLe32(p + 56);
  sb.extent_bytes = LoadLe64(p + 64);
  sb.unit_bytes = LoadLe64(p + 72);
  sb.created_unix_ns = LoadLe64(p + 80);
  sb.device_bytes = LoadLe64(p + 88);
  sb.journal_offset = LoadLe64(p + 96);
  sb.journal_area_bytes = LoadLe64(p + 104);
  sb.data_offset = LoadLe64(p + 112);
  sb.unit_count = LoadLe64(p + 120);
  const uint32_t flags = LoadLe32(p + 128);
  if ((flags & ~kSuperblockEncrypted) != 0) return Corruption(at + ": superblock has unknown flags");
  sb.encrypted = (flags & kSuperblockEncrypted) != 0;
  sb.open_epoch = LoadLe32(p + 132);
  sb.encryption_id = GetUuid(p + 136);
  std::memcpy(sb.key_check.data(), p + 152, sb.key_check.size());

  const uint32_t lbs = sb.logical_block_bytes;
  bool sane = sb.drive_count >= 1 && sb.drive_count <= 65535 && sb.drive_index < sb.drive_count &&
              lbs >= 512 && lbs <= kDriveHeaderBytes && (lbs & (lbs - 1)) == 0 && sb.extent_bytes > 0 &&
              sb.extent_bytes % kDriveHeaderBytes == 0 && sb.extent_bytes <= (1ull << 30) &&
              sb.unit_bytes == kDriveUnitBytes &&
              sb.journal_offset >= kDriveHeaderBytes && sb.journal_offset % kDriveHeaderBytes == 0 &&
              sb.journal_area_bytes >= 2 * kDriveHeaderBytes &&
              sb.journal_area_bytes % kDriveHeaderBytes == 0 && sb.journal_area_bytes <= (1ull << 40) &&
              sb.journal_offset <= UINT64_MAX - 2 * sb.journal_area_bytes &&  // the sum below must not wrap
              sb.data_offset >= sb.journal_offset + 2 * sb.journal_area_bytes &&
              sb.data_offset % kDriveHeaderBytes == 0 && sb.unit_count <= kMaxUnitsPerDrive &&
              sb.data_offset <= sb.device_bytes &&
              sb.unit_count <= (sb.device_bytes - sb.data_offset) / sb.unit_bytes;
  if (!sane) return Corruption(at + ": superblock geometry is inconsistent");
  return sb;
}

// ------------------------------------------------------------ journal areas

void EncodeJournalAreaHeader(const JournalAreaHeader& h, std::span<uint8_t, kDriveHeaderBytes> out) {
  uint8_t* p = out.data();
  std::memset(p, 0, kDriveHeaderBytes);
  std::memcpy(p, kAreaMagic, 4);
  StoreLe32(p + 4, h.format_version);
  StoreLe64(p + 8, h.epoch);
  StoreLe64(p + 16, h.nonce);
  PutUuid(p + 24, h.store_uuid);
  PutUuid(p + 40, h.drive_uuid);
  StoreLe64(p + 56, h.base_sequence);
  StoreLe64(p + 64, h.base_generation);
  SealBlock(out);
}

Result<JournalAreaHeader> DecodeJournalAreaHeader(std::span<const uint8_t> block) {
  if (block.size() < kDriveHeaderBytes || std::memcmp(block.data(), kAreaMagic, 4) != 0) {
    return Corruption("no journal area header");
  }
  const uint8_t* p = block.data();
  JournalAreaHeader h;
  h.format_version = LoadLe32(p + 4);
  if (h.format_version > kDriveFormatVersion) return VersionError("journal format", h.format_version);
  if (!BlockSealed(block)) return Corruption("journal area header checksum mismatch");
  if (h.format_version < kMinReadableDriveFormatVersion) return VersionError("journal format", h.format_version);
  h.epoch = LoadLe64(p + 8);
  h.nonce = LoadLe64(p + 16);
  h.store_uuid = GetUuid(p + 24);
  h.drive_uuid = GetUuid(p + 40);
  h.base_sequence = LoadLe64(p + 56);
  h.base_generation = LoadLe64(p + 64);
  return h;
}

// ------------------------------------------------------------------ records

namespace {

// Byte 5 of a record: flags (0 in records written before attributes).
constexpr uint8_t kRecordHasAttrs = 0x01;
// A put of an encrypted value: its seals follow its extents.
constexpr uint8_t kRecordHasSeals = 0x02;
constexpr size_t kSealBytes = 32;  // nonce (12), 4 zero bytes, tag (16)
// The tail's fixed part: expires_at_ms, ttl_ms, then retention, hash kind,
// parent key length (16 bits), block and parent hash lengths, 2 zero bytes.
constexpr size_t kAttrsFixedBytes = 24;

void EncodeAttrs(const ValueAttrs& a, uint8_t* p) {
  StoreLe64(p, static_cast<uint64_t>(a.expires_at_ms));
  StoreLe64(p + 8, a.ttl_ms);
  p[16] = static_cast<uint8_t>(a.retention);
  p[17] = static_cast<uint8_t>(a.hash_kind);
  StoreLe16(p + 18, static_cast<uint16_t>(a.parent_key.size()));
  p[20] = static_cast<uint8_t>(a.block_hash.size());
  p[21] = static_cast<uint8_t>(a.parent_hash.size());
  uint8_t* at = p + kAttrsFixedBytes;
  for (const std::string* field : {&a.parent_key, &a.block_hash, &a.parent_hash}) {
    std::memcpy(at, field->data(), field->size());
    at += Pad8(field->size());
  }
}

// False when the tail in [p, p + bytes) is malformed or not exactly that long.
bool DecodeAttrs(const uint8_t* p, size_t bytes, ValueAttrs* a) {
  if (bytes < kAttrsFixedBytes) return false;
  a->expires_at_ms = static_cast<int64_t>(LoadLe64(p));
  a->ttl_ms = LoadLe64(p + 8);
  if (p[16] > kMaxRetention || p[17] > static_cast<uint8_t>(HashKind::kInt64) || p[22] != 0 || p[23] != 0) {
    return false;
  }
  a->retention = static_cast<Retention>(p[16]);
  a->hash_kind = static_cast<HashKind>(p[17]);
  const size_t lengths[] = {LoadLe16(p + 18), p[20], p[21]};
  if (lengths[0] > kMaxDriveKeyBytes || lengths[1] > kMaxBlockHashBytes || lengths[2] > kMaxBlockHashBytes) {
    return false;
  }
  if (bytes != kAttrsFixedBytes + Pad8(lengths[0]) + Pad8(lengths[1]) + Pad8(lengths[2])) return false;
  const uint8_t* at = p + kAttrsFixedBytes;
  std::string* fields[] = {&a->parent_key, &a->block_hash, &a->parent_hash};
  for (int i = 0; i < 3; ++i) {
    fields[i]->assign(reinterpret_cast<const char*>(at), lengths[i]);
    at += Pad8(lengths[i]);
  }
  return true;
}

}  // namespace

size_t AttrsTailBytes(const ValueAttrs& a) {
  if (a.empty()) return 0;
  return kAttrsFixedBytes + Pad8(a.parent_key.size()) + Pad8(a.block_hash.size()) + Pad8(a.parent_hash.size());
}

size_t SealsBytes(size_t seals) { return seals == 0 ? 0 : 8 + kSealBytes * seals; }

size_t EncodedRecordBytes(const JournalRecord& r) {
  const size_t tail = r.type == RecordType::kPut ? AttrsTailBytes(r.attrs) + SealsBytes(r.seals.size()) : 0;
  return kRecordHeadBytes + BodyBytes(r.type, r.key.size(), r.extents.size()) + tail + 8;
}

uint64_t EncodeRecord(const JournalRecord& r, uint64_t link, std::vector<uint8_t>* out) {
  const size_t n = EncodedRecordBytes(r);
  const size_t start = out->size();
  out->resize(start + n, 0);
  uint8_t* p = out->data() + start;
  std::memcpy(p, kRecordMagic, 4);
  p[4] = uint8_t(r.type);
  const bool has_attrs = r.type == RecordType::kPut && !r.attrs.empty();
  const bool has_seals = r.type == RecordType::kPut && !r.seals.empty();
  p[5] = uint8_t((has_attrs ? kRecordHasAttrs : 0) | (has_seals ? kRecordHasSeals : 0));
  const bool has_key = r.type != RecordType::kDriveOffline;
  StoreLe16(p + 6, has_key ? uint16_t(r.key.size()) : 0);
  StoreLe32(p + 8, uint32_t(n));
  StoreLe32(p + 12, r.type == RecordType::kPut ? uint32_t(r.extents.size()) : 0);
  StoreLe64(p + 16, link);
  StoreLe64(p + 24, r.sequence);
  if (r.type == RecordType::kPut) {
    StoreLe64(p + 32, r.generation);
    StoreLe64(p + 40, r.value_bytes);
    StoreLe64(p + 48, r.value_checksum);
  }
  uint8_t* body = p + kRecordHeadBytes;
  if (has_key) {
    std::memcpy(body, r.key.data(), r.key.size());
    body += Pad8(r.key.size());
  }
  if (r.type == RecordType::kPut) {
    for (const ExtentRef& e : r.extents) {
      EncodeExtentRef(e, body);
      body += kExtentRefBytes;
    }
    if (has_seals) {
      StoreLe32(body, uint32_t(r.seals.size()));
      body += 8;
      for (const SegmentSeal& seal : r.seals) {
        std::memcpy(body, seal.nonce.data(), seal.nonce.size());
        std::memcpy(body + 16, seal.tag.data(), seal.tag.size());
        body += kSealBytes;
      }
    }
    if (has_attrs) EncodeAttrs(r.attrs, body);
  } else if (r.type == RecordType::kDriveOffline) {
    PutUuid(body, r.drive_uuid);
    StoreLe32(body + 16, r.drive_index);
  }
  const uint64_t sum = Checksum(p, n - 8);
  StoreLe64(p + n - 8, sum);
  return sum;
}

bool DecodeRecord(std::span<const uint8_t> bytes, uint64_t link, JournalRecord* out, size_t* consumed,
                  uint64_t* checksum) {
  if (bytes.size() < kRecordHeadBytes + 8) return false;
  const uint8_t* p = bytes.data();
  if (std::memcmp(p, kRecordMagic, 4) != 0) return false;
  const uint32_t n = LoadLe32(p + 8);
  if (n < kRecordHeadBytes + 8 || n % 8 != 0 || n > bytes.size()) return false;
  if (LoadLe64(p + 16) != link) return false;
  const uint64_t sum = Checksum(p, n - 8);
  if (LoadLe64(p + n - 8) != sum) return false;
  const uint8_t type = p[4];
  const bool has_attrs = (p[5] & kRecordHasAttrs) != 0;
  const bool has_seals = (p[5] & kRecordHasSeals) != 0;
  if (type < uint8_t(RecordType::kPut) || type > uint8_t(RecordType::kDriveOffline) ||
      (p[5] & ~(kRecordHasAttrs | kRecordHasSeals)) != 0 ||
      ((has_attrs || has_seals) && type != uint8_t(RecordType::kPut))) {
    return false;
  }
  const size_t key_bytes = LoadLe16(p + 6);
  const uint32_t extent_count = LoadLe32(p + 12);
  out->type = RecordType(type);
  const bool has_key = out->type != RecordType::kDriveOffline;
  if (has_key ? (key_bytes == 0 || key_bytes > kMaxDriveKeyBytes) : key_bytes != 0) return false;
  if (out->type == RecordType::kPut ? extent_count > kMaxExtentsPerValue : extent_count != 0) return false;
  size_t body_bytes = BodyBytes(out->type, key_bytes, extent_count);
  size_t seal_count = 0;
  if (has_seals) {
    if (n < kRecordHeadBytes + body_bytes + 8 + 8) return false;
    const uint8_t* at = p + kRecordHeadBytes + body_bytes;
    seal_count = LoadLe32(at);
    if (seal_count == 0 || LoadLe32(at + 4) != 0 || seal_count > (n - kRecordHeadBytes - body_bytes) / kSealBytes) {
      return false;
    }
    body_bytes += SealsBytes(seal_count);
  }
  if (has_attrs ? n <= kRecordHeadBytes + body_bytes + 8 : n != kRecordHeadBytes + body_bytes + 8) return false;

  out->sequence = LoadLe64(p + 24);
  out->generation = LoadLe64(p + 32);
  out->value_bytes = LoadLe64(p + 40);
  out->value_checksum = LoadLe64(p + 48);
  const uint8_t* body = p + kRecordHeadBytes;
  out->key.assign(reinterpret_cast<const char*>(body), key_bytes);
  body += Pad8(key_bytes);
  out->extents.clear();
  out->drive_uuid = Uuid{};
  out->drive_index = 0;
  out->attrs = ValueAttrs{};
  out->seals.clear();
  if (out->type == RecordType::kPut) {
    out->extents.resize(extent_count);
    for (uint32_t i = 0; i < extent_count; ++i, body += kExtentRefBytes) {
      if (!DecodeExtentRef(body, &out->extents[i])) return false;
    }
    if (has_seals) {
      body += 8;
      out->seals.resize(seal_count);
      for (SegmentSeal& seal : out->seals) {
        std::memcpy(seal.nonce.data(), body, seal.nonce.size());
        if (LoadLe32(body + 12) != 0) return false;
        std::memcpy(seal.tag.data(), body + 16, seal.tag.size());
        body += kSealBytes;
      }
    }
    if (has_attrs && !DecodeAttrs(body, n - 8 - size_t(body - p), &out->attrs)) return false;
  } else if (out->type == RecordType::kDriveOffline) {
    out->drive_uuid = GetUuid(body);
    out->drive_index = LoadLe32(body + 16);
  }
  *consumed = n;
  *checksum = sum;
  return true;
}

// ------------------------------------------------------------------ extents

bool ExtentsCoverValue(std::span<const ExtentRef> extents, uint64_t value_bytes, uint64_t extent_bytes) {
  const uint64_t max_units = extent_bytes / kDriveUnitBytes;
  uint64_t units = 0;
  for (const ExtentRef& e : extents) {
    if (e.units == 0 || e.units > max_units) return false;
    units += e.units;  // no wrap: at most 2^16 extents of 2^32 units
  }
  return units == UnitsFor(value_bytes);
}

}  // namespace memkv::drive
