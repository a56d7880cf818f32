// ValueCodec: how a value's bytes are turned into the bytes on the drives and
// back, chosen once when an ExtentStore opens (CreateValueCodec) and then a
// step of the write and read paths (extent_store_write.cc,
// extent_store_read.cc), never an `if` there.
//
// Two codecs today: plain (the bytes as they are) and AES-256-GCM
// (docs/storage.md, "Encryption at rest"; drive_crypto.h). A codec cuts a
// value into segments (Segments: each lies in one extent, so on one drive),
// encodes each on its copy into a staging buffer and decodes it on its copy
// out, hashing the plaintext into the value's checksum on the way, and may
// keep a seal per segment (SegmentSeal) that the value's journal record
// carries. Encoded bytes are as long as the plaintext: a segment's place in
// its extent is its place in the value.
//
// A codec joins by implementing this interface and a case in
// CreateValueCodec; the tier does not change.
//
// Thread-safety: every method may be called from many threads at once (the
// AES codec keeps a cipher context per thread, ThreadCipher).
#ifndef MEMKV_DRIVE_VALUE_CODEC_H_
#define MEMKV_DRIVE_VALUE_CODEC_H_

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/checksum.h"
#include "base/tenant_map.h"
#include "drive/drive_crypto.h"
#include "drive/format.h"
#include "memkv/status.h"

namespace memkv::drive {

// The value a segment belongs to: what a codec binds its bytes to.
struct CodedValue {
  std::string_view key;
  uint64_t value_bytes = 0;
};

class ValueCodec {
 public:
  virtual ~ValueCodec() = default;

  // "plain", "aes-256-gcm": for messages and stats.
  virtual std::string_view name() const = 0;
  // Whether values are sealed (ExtentStoreStats::encrypted).
  virtual bool seals() const = 0;
  // A value moved in parts (ExtentWriter, ExtentReader) moves in pieces that
  // start on a multiple of this and end on one or at the value's end.
  virtual uint64_t piece_bytes() const = 0;

  // The value's segments in order: cut at least at every extent boundary.
  virtual std::vector<SealSegment> Segments(std::span<const ExtentRef> extents, uint64_t value_bytes) const = 0;
  // The seals a value in these extents keeps (0: none).
  virtual size_t SealCount(std::span<const ExtentRef> extents, uint64_t value_bytes) const = 0;
  // At most the journal bytes of the seals of a value of `extents` extents
  // (its put record's share of the journal budget).
  virtual uint64_t SealRecordBytes(uint64_t value_bytes, uint64_t extents) const = 0;

  // out[0, bytes) = the encoding of value bytes [offset, offset + bytes),
  // taken from `src` (whose first byte is value byte `src_from`); the
  // plaintext is hashed into `sum`. The range lies within segment `g`
  // (number `index`), and is the whole of it for a codec that keeps seals;
  // its seal is stored at seals[index] (seals sized to SealCount).
  virtual void Encode(const CodedValue& v, const SealSegment& g, size_t index, uint64_t offset, uint64_t bytes,
                      std::span<const iovec> src, uint64_t src_from, uint8_t* out, ChecksumStream* sum,
                      std::span<SegmentSeal> seals) = 0;
  // The reverse: value bytes [offset, offset + bytes) decoded from `in` into
  // `dst` (whose first byte is value byte `dst_from`) and hashed into `sum`.
  // AuthFailed, naming the segment (the caller adds the key), when it fails
  // its seal; dst then holds bytes that must not be handed out.
  virtual Status Decode(const CodedValue& v, const SealSegment& g, size_t index, uint64_t offset, uint64_t bytes,
                        const uint8_t* in, std::span<const iovec> dst, uint64_t dst_from, ChecksumStream* sum,
                        std::span<const SegmentSeal> seals) = 0;

  // The tenants whose keys the codec tells apart (SetTenants); null: none.
  virtual void SetTenants(std::shared_ptr<const TenantMap> tenants) { (void)tenants; }
};

// What the AES-256-GCM codec needs of each drive of the store (by index).
struct CodecDrive {
  bool present = false;        // opened: its superblock below is valid
  Uuid encryption_id;          // the HKDF salt of its data keys
  uint32_t open_epoch = 0;     // the high 4 bytes of every nonce drawn in this open
};

// The bytes as they are.
std::unique_ptr<ValueCodec> CreatePlainCodec();
// AES-256-GCM in seal segments of kSealSegmentBytes, under per-tenant data
// keys of each drive, nonces drawn per drive (drive_crypto.h).
std::unique_ptr<ValueCodec> CreateAesGcmCodec(const MasterKey& master, std::vector<CodecDrive> drives);
// The codec of a store opened with `master_key` (set: AES-256-GCM; unset: plain).
std::unique_ptr<ValueCodec> CreateValueCodec(const std::optional<MasterKey>& master_key,
                                             std::vector<CodecDrive> drives);

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_VALUE_CODEC_H_
