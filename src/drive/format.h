// On-drive structures of the extent store, byte by byte in docs/storage.md.
//
// Every structure is little-endian, versioned and ends in an XXH3-64 checksum,
// so a torn, stale or foreign block is recognised and never taken as data:
//   Superblock      4 KiB at offset 0 of each drive; written once, by Format.
//   JournalArea     4 KiB header of each of the two journal areas.
//   JournalRecord   variable length, 8-byte aligned, appended inside an area.
// The data area after the journals is a run of 4 KiB units holding only value
// bytes: an extent is a run of units, named by a put record (ExtentRef), and
// checked on read against the record's checksum of the whole value.
// Pure functions: no I/O, no allocation beyond the returned values; safe from
// any thread. The decoders accept arbitrary bytes (fuzzable).
#ifndef MEMKV_DRIVE_FORMAT_H_
#define MEMKV_DRIVE_FORMAT_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/put_options.h"
#include "memkv/status.h"

namespace memkv::drive {

// The format this binary writes, and the oldest it still reads. A binary
// refuses a drive whose version is newer than kDriveFormatVersion, and one
// older than kMinReadableDriveFormatVersion. Version 1 (a 4 KiB header in
// front of every extent, fixed-size slots) is not read: its drives are
// reformatted (docs/storage.md, "Versions").
inline constexpr uint32_t kDriveFormatVersion = 2;
inline constexpr uint32_t kMinReadableDriveFormatVersion = 2;

// Superblock and journal area header are each one 4 KiB block, and the data
// area is cut into units of the same size, so every offset stays aligned for
// O_DIRECT on 512- and 4096-byte devices.
inline constexpr uint32_t kDriveHeaderBytes = 4096;
inline constexpr uint32_t kDriveUnitBytes = 4096;
// Keys are 1..kMaxDriveKeyBytes bytes (the wire's limit, proto/frame.h).
inline constexpr size_t kMaxDriveKeyBytes = 1024;
// A value spans at most this many extents (its journal record must fit in an area).
inline constexpr uint32_t kMaxExtentsPerValue = 65536;
// Unit numbers are stored in 48 bits (1 EiB of 4 KiB units per drive).
inline constexpr uint64_t kMaxUnitsPerDrive = 0xFFFFFFFFFFFFull;

struct Uuid {
  std::array<uint8_t, 16> bytes{};

  static Uuid Random();  // from getrandom(2)
  bool IsZero() const;
  std::string ToString() const;  // 8-4-4-4-12 hex
  bool operator==(const Uuid&) const = default;
};

struct Superblock {
  uint32_t format_version = kDriveFormatVersion;
  Uuid store_uuid;
  Uuid drive_uuid;
  uint32_t drive_index = 0;
  uint32_t drive_count = 1;
  uint32_t logical_block_bytes = 0;   // the device's, at format time
  uint64_t extent_bytes = 0;          // storage.block_size: the most data bytes of one extent
  uint64_t unit_bytes = kDriveUnitBytes;
  uint64_t created_unix_ns = 0;
  uint64_t device_bytes = 0;          // size of the file or device at format time
  uint64_t journal_offset = 0;        // area 0; area 1 follows it
  uint64_t journal_area_bytes = 0;    // each area, header included
  uint64_t data_offset = 0;           // unit 0
  uint64_t unit_count = 0;
  // Encryption at rest (docs/storage.md, "Encryption at rest"); all zero on
  // a drive formatted without it.
  bool encrypted = false;
  // Incremented and made durable at every open of an encrypted drive before
  // its first write: the first 4 bytes of every nonce used in that open.
  uint32_t open_epoch = 0;
  Uuid encryption_id;                  // the HKDF salt of this drive's data keys
  std::array<uint8_t, 16> key_check{};  // KeyCheckValue of the master key

  uint64_t journal_area_offset(int area) const { return journal_offset + uint64_t(area) * journal_area_bytes; }
  uint64_t unit_offset(uint64_t unit) const { return data_offset + unit * unit_bytes; }
};

// Writes exactly kDriveHeaderBytes into `out`.
void EncodeSuperblock(const Superblock& sb, std::span<uint8_t, kDriveHeaderBytes> out);
// NotFound when the block holds no MemKV magic (not formatted); UnsupportedVersion
// naming both versions and what to do when it is newer than this binary or
// older than it reads; Corruption on a bad checksum or an impossible geometry.
// `where` names the drive in messages.
Result<Superblock> DecodeSuperblock(std::span<const uint8_t> block, std::string_view where);

struct JournalAreaHeader {
  uint32_t format_version = kDriveFormatVersion;
  uint64_t epoch = 0;            // the area with the higher valid epoch is active
  uint64_t nonce = 0;            // random per start of an area; the first record links to it
  Uuid store_uuid;
  Uuid drive_uuid;
  uint64_t base_sequence = 0;    // the store's next sequence when the area was started
  uint64_t base_generation = 0;  // likewise for generations
};

void EncodeJournalAreaHeader(const JournalAreaHeader& h, std::span<uint8_t, kDriveHeaderBytes> out);
// Corruption (or UnsupportedVersion) when the block is not a valid area header.
Result<JournalAreaHeader> DecodeJournalAreaHeader(std::span<const uint8_t> block);

enum class RecordType : uint8_t { kPut = 1, kDelete = 2, kDriveOffline = 3 };

// One extent of a value: `units` units from unit `unit` of drive `drive`.
// A value's extents hold its bytes in order; each but the last is full
// (units * kDriveUnitBytes value bytes), the last holds the rest, zero-padded
// to its end. ExtentsCoverValue says whether a list is well formed.
struct ExtentRef {
  uint32_t drive = 0;  // drive index
  uint64_t unit = 0;   // first unit
  uint32_t units = 0;  // 1 .. extent_bytes / kDriveUnitBytes
  bool operator==(const ExtentRef&) const = default;
};

// Units a value of `value_bytes` takes.
inline uint64_t UnitsFor(uint64_t value_bytes) {
  return value_bytes / kDriveUnitBytes + (value_bytes % kDriveUnitBytes != 0);
}
// True when `extents` can hold a value of `value_bytes` stored in extents of
// at most `extent_bytes`: every extent 1 .. extent_bytes / kDriveUnitBytes
// units long, UnitsFor(value_bytes) units in all. (Not whether they fit a
// drive: the allocator checks that.)
bool ExtentsCoverValue(std::span<const ExtentRef> extents, uint64_t value_bytes, uint64_t extent_bytes);

// What a put said about its value besides its bytes (PutOptions), as the
// journal keeps it: the expiry as a wall-clock instant, so that it means the
// same after a restart. Encoded as an optional tail of the put record,
// present only when something is set (format.cc, docs/storage.md).
struct ValueAttrs {
  int64_t expires_at_ms = 0;  // ms since the epoch; 0: never
  uint64_t ttl_ms = 0;        // the TTL as applied (a pin's is re-armed on hits)
  Retention retention = Retention::kNormal;
  HashKind hash_kind = HashKind::kBytes;
  std::string parent_key;     // at most kMaxDriveKeyBytes
  std::string block_hash;     // at most kMaxBlockHashBytes
  std::string parent_hash;    // at most kMaxBlockHashBytes

  bool empty() const {
    return expires_at_ms == 0 && ttl_ms == 0 && retention == Retention::kNormal && hash_kind == HashKind::kBytes &&
           parent_key.empty() && block_hash.empty() && parent_hash.empty();
  }
  bool expired(int64_t now_ms) const { return expires_at_ms != 0 && now_ms >= expires_at_ms; }
  bool operator==(const ValueAttrs&) const = default;
};

// Encoded bytes of the attribute tail (0 when `a` is empty).
size_t AttrsTailBytes(const ValueAttrs& a);
// Encoded bytes of a put record's seals (0 when there are none).
size_t SealsBytes(size_t seals);

// How one seal segment of an encrypted value was sealed (drive_crypto.h):
// its AES-256-GCM nonce and tag.
struct SegmentSeal {
  std::array<uint8_t, 12> nonce{};
  std::array<uint8_t, 16> tag{};
  bool operator==(const SegmentSeal&) const = default;
};

struct JournalRecord {
  RecordType type = RecordType::kPut;
  uint64_t sequence = 0;        // commit order, store-wide; the highest wins per key
  // kPut
  uint64_t generation = 0;      // the write's id (eviction deletes only the version it chose)
  uint64_t value_bytes = 0;
  uint64_t value_checksum = 0;  // Checksum() of the whole value
  std::vector<ExtentRef> extents;
  ValueAttrs attrs;             // empty: a plain put (no tail; what older binaries wrote)
  std::vector<SegmentSeal> seals;  // an encrypted value's, one per seal segment; empty on a plain drive
  // kPut, kDelete
  std::string key;
  // kDriveOffline: the drive whose journal and extents are stale from here on
  Uuid drive_uuid;
  uint32_t drive_index = 0;
};

inline constexpr size_t kRecordHeadBytes = 56;
// Encoded size of a record (a multiple of 8).
size_t EncodedRecordBytes(const JournalRecord& r);
// Appends the encoding of `r` and returns its checksum. Records form a chain:
// each carries a `link`, the checksum of the record before it in the area (the
// area's nonce for the first one), so bytes left over from an earlier use of
// the area, or from a batch cut short by a crash, never pass for records.
uint64_t EncodeRecord(const JournalRecord& r, uint64_t link, std::vector<uint8_t>* out);
// Decodes one record at the front of `bytes`. Returns false (and leaves *out
// unspecified) when the bytes there are not a complete, valid record with
// this link: wrong magic, link or checksum, truncated, or malformed. Replay
// stops at the first false: that is the end of the log. On success *consumed
// is its length and *checksum the link for the next record.
bool DecodeRecord(std::span<const uint8_t> bytes, uint64_t link, JournalRecord* out, size_t* consumed,
                  uint64_t* checksum);

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_FORMAT_H_
