// The AES-256-GCM codec (value_codec.h; drive_crypto.h; docs/storage.md,
// "Encryption at rest"): a segment is sealed on its copy into the staging
// buffer and opened on its copy out, one pass over the bytes each way.
#include <algorithm>
#include <atomic>
#include <string>
#include <unordered_map>

#include "base/bytes.h"
#include "base/iov.h"
#include "base/mutex.h"
#include "drive/value_codec.h"

namespace memkv::drive {
namespace {

// Plaintext hashed and sealed (or opened and hashed) in slices of this many
// bytes: both passes over a slice while it is in the core's cache.
constexpr uint64_t kCryptSliceBytes = 64 << 10;

class AesGcmCodec final : public ValueCodec {
 public:
  AesGcmCodec(const MasterKey& master, std::vector<CodecDrive> drives)
      : master_(master), drives_(std::move(drives)),
        nonce_counters_(std::make_unique<std::atomic<uint64_t>[]>(drives_.size())) {}

  std::string_view name() const override { return "aes-256-gcm"; }
  bool seals() const override { return true; }
  uint64_t piece_bytes() const override { return kSealSegmentBytes; }

  std::vector<SealSegment> Segments(std::span<const ExtentRef> extents, uint64_t value_bytes) const override {
    return SealSegments(extents, value_bytes);
  }
  size_t SealCount(std::span<const ExtentRef> extents, uint64_t value_bytes) const override {
    size_t n = 0;
    uint64_t start = 0;
    for (const ExtentRef& e : extents) {
      if (start >= value_bytes) break;
      const uint64_t end = std::min(start + uint64_t(e.units) * kDriveUnitBytes, value_bytes);
      // Cuts at every multiple of kSealSegmentBytes inside (start, end).
      n += 1 + (end - 1) / kSealSegmentBytes - start / kSealSegmentBytes;
      start = end;
    }
    return n;
  }
  uint64_t SealRecordBytes(uint64_t value_bytes, uint64_t extents) const override {
    return SealsBytes(value_bytes / kSealSegmentBytes + extents);
  }

  void Encode(const CodedValue& v, const SealSegment& g, size_t index, uint64_t offset, uint64_t bytes,
              std::span<const iovec> src, uint64_t src_from, uint8_t* out, ChecksumStream* sum,
              std::span<SegmentSeal> seals) override {
    (void)offset;  // the whole segment: offset == g.offset, bytes == g.bytes
    (void)bytes;
    SegmentCipher& cipher = ThreadCipher();
    SegmentSeal& seal = seals[index];
    seal.nonce = NextNonce(g.drive);
    cipher.Begin(true, DataKeyOf(v.key, g.drive), seal.nonce, v.key, v.value_bytes, g.offset);
    ForEachIovPiece(src, g.offset - src_from, g.bytes, [&](const uint8_t* in, uint64_t n, uint64_t done) {
      for (uint64_t at = 0; at < n; at += kCryptSliceBytes) {
        const uint64_t k = std::min<uint64_t>(kCryptSliceBytes, n - at);
        sum->Update(in + at, k);
        cipher.Update(in + at, out + done + at, k);
      }
    });
    seal.tag = cipher.FinishSeal();
  }

  Status Decode(const CodedValue& v, const SealSegment& g, size_t index, uint64_t offset, uint64_t bytes,
                const uint8_t* in, std::span<const iovec> dst, uint64_t dst_from, ChecksumStream* sum,
                std::span<const SegmentSeal> seals) override {
    (void)offset;
    (void)bytes;
    const SegmentSeal& seal = seals[index];
    SegmentCipher& cipher = ThreadCipher();
    cipher.Begin(false, DataKeyOf(v.key, g.drive), seal.nonce, v.key, v.value_bytes, g.offset);
    ForEachIovPiece(dst, g.offset - dst_from, g.bytes, [&](uint8_t* out, uint64_t n, uint64_t done) {
      for (uint64_t at = 0; at < n; at += kCryptSliceBytes) {
        const uint64_t k = std::min<uint64_t>(kCryptSliceBytes, n - at);
        cipher.Update(in + done + at, out + at, k);
        sum->Update(out + at, k);
      }
    });
    if (cipher.FinishOpen(seal.tag)) return Status::Ok();
    return AuthFailed("segment at offset " + std::to_string(g.offset) + " (" +
                      std::to_string(g.bytes) + " bytes) on drive " + std::to_string(g.drive) +
                      " failed its authentication tag: written under another key (its tenant removed "
                      "from the config, or another master key) or changed on the drive");
  }

  void SetTenants(std::shared_ptr<const TenantMap> tenants) override {
    MutexLock lock(keys_mu_);
    tenants_ = std::move(tenants);
  }

 private:
  // The data key on `drive` of the tenant `key` belongs to. Derived once per
  // tenant name (an HKDF per drive, microseconds), then a lookup.
  DataKey DataKeyOf(std::string_view key, uint32_t drive) {
    MutexLock lock(keys_mu_);
    std::string name;
    if (tenants_ != nullptr) {
      const uint32_t t = tenants_->Find(key);
      if (t != TenantMap::kNone) name = (*tenants_)[t].name;
    }
    auto it = data_keys_.find(name);
    if (it == data_keys_.end()) {
      std::vector<DataKey> keys(drives_.size());
      for (size_t i = 0; i < drives_.size(); ++i) {
        if (drives_[i].present) keys[i] = DeriveDataKey(master_, drives_[i].encryption_id, name);
      }
      it = data_keys_.emplace(std::move(name), std::move(keys)).first;
    }
    return it->second[drive];
  }

  // The open epoch of the drive, then a counter of this open.
  std::array<uint8_t, 12> NextNonce(uint32_t drive) {
    std::array<uint8_t, 12> nonce{};
    StoreLe32(nonce.data(), drives_[drive].open_epoch);
    StoreLe64(nonce.data() + 4, nonce_counters_[drive].fetch_add(1, std::memory_order_relaxed));
    return nonce;
  }

  const MasterKey master_;
  const std::vector<CodecDrive> drives_;
  std::unique_ptr<std::atomic<uint64_t>[]> nonce_counters_;  // by drive index
  Mutex keys_mu_;
  std::shared_ptr<const TenantMap> tenants_ MEMKV_GUARDED_BY(keys_mu_);  // null: every key is the administrator's
  // Data keys by tenant name, one per drive (by index).
  std::unordered_map<std::string, std::vector<DataKey>> data_keys_ MEMKV_GUARDED_BY(keys_mu_);
};

}  // namespace

std::unique_ptr<ValueCodec> CreateAesGcmCodec(const MasterKey& master, std::vector<CodecDrive> drives) {
  return std::make_unique<AesGcmCodec>(master, std::move(drives));
}

}  // namespace memkv::drive
