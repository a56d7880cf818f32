// Encryption at rest of the drive tier (docs/storage.md, "Encryption at
// rest"): the master key file, the data key of each tenant on each drive
// (HKDF-SHA256), the key check value a superblock keeps, and AES-256-GCM over
// one seal segment of a value. OpenSSL's libcrypto underneath (AES-NI and
// carry-less multiply where the CPU has them).
//
// A value on an encrypted drive is cut into seal segments (SealSegments):
// at every extent boundary and every kSealSegmentBytes of the value, so a
// segment lies on one drive and a read of whole segments checks every byte
// it hands out. Each segment is sealed on its own, with its own nonce and
// tag, under the data key of the value's tenant on the segment's drive; the
// authenticated data binds it to its key, the value's length and its offset.
#ifndef MEMKV_DRIVE_DRIVE_CRYPTO_H_
#define MEMKV_DRIVE_DRIVE_CRYPTO_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "drive/format.h"
#include "memkv/status.h"

namespace memkv::drive {

using MasterKey = std::array<uint8_t, 32>;
using DataKey = std::array<uint8_t, 32>;

// Value bytes per seal segment at most (a multiple of the 4 KiB unit). A
// streamed read or write of an encrypted value moves whole segments: every
// piece but the last ends on a multiple of it.
inline constexpr uint64_t kSealSegmentBytes = 1 << 20;

// Reads the master key: a file of exactly 32 bytes (raw), or of 64 hex
// characters (surrounding whitespace ignored). InvalidArgument or IoError
// naming the path and what is allowed.
Result<MasterKey> ReadMasterKeyFile(const std::string& path);
// The master key of `text` as ReadMasterKeyFile reads a file's contents.
Result<MasterKey> ParseMasterKey(std::string_view text, const std::string& what);

// HKDF-SHA256: salt = the drive's encryption id, info = "memkv drive value
// v1" | 0x00 | tenant name (empty for the administrator's keys).
DataKey DeriveDataKey(const MasterKey& master, const Uuid& encryption_id, std::string_view tenant);
// HMAC-SHA256(the administrator's data key, "memkv key check")[0..16]: kept
// in the superblock so that a wrong master key is refused at open.
std::array<uint8_t, 16> KeyCheckValue(const MasterKey& master, const Uuid& encryption_id);

// One segment of a value: its value bytes [offset, offset + bytes), on `drive`.
struct SealSegment {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint32_t drive = 0;
};
std::vector<SealSegment> SealSegments(std::span<const ExtentRef> extents, uint64_t value_bytes);

// AES-256-GCM over one segment, fed in pieces. Not thread-safe: one per
// thread (ThreadCipher).
class SegmentCipher {
 public:
  SegmentCipher();
  ~SegmentCipher();
  SegmentCipher(const SegmentCipher&) = delete;
  SegmentCipher& operator=(const SegmentCipher&) = delete;

  // Starts a segment of the value under `key` of `value_bytes`, at `offset`.
  void Begin(bool encrypt, const DataKey& data_key, const std::array<uint8_t, 12>& nonce, std::string_view key,
             uint64_t value_bytes, uint64_t offset);
  // out[0, n) = the cipher of in[0, n) (in == out allowed).
  void Update(const uint8_t* in, uint8_t* out, size_t n);
  // Encrypting: the tag.
  std::array<uint8_t, 16> FinishSeal();
  // Decrypting: whether the segment matches `tag`.
  bool FinishOpen(const std::array<uint8_t, 16>& tag);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// This thread's cipher.
SegmentCipher& ThreadCipher();

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_DRIVE_CRYPTO_H_
