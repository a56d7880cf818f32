// The plain codec and the factory (value_codec.h).
#include "drive/value_codec.h"

#include <algorithm>

#include "base/iov.h"

namespace memkv::drive {
namespace {

class PlainCodec final : public ValueCodec {
 public:
  std::string_view name() const override { return "plain"; }
  bool seals() const override { return false; }
  uint64_t piece_bytes() const override { return kDriveUnitBytes; }

  // One segment per extent: a piece's bytes are copied in one go.
  std::vector<SealSegment> Segments(std::span<const ExtentRef> extents, uint64_t value_bytes) const override {
    std::vector<SealSegment> out;
    out.reserve(extents.size());
    uint64_t start = 0;
    for (const ExtentRef& e : extents) {
      if (start >= value_bytes) break;
      const uint64_t end = std::min(start + uint64_t(e.units) * kDriveUnitBytes, value_bytes);
      out.push_back({start, end - start, e.drive});
      start = end;
    }
    return out;
  }
  size_t SealCount(std::span<const ExtentRef>, uint64_t) const override { return 0; }
  uint64_t SealRecordBytes(uint64_t, uint64_t) const override { return 0; }

  void Encode(const CodedValue&, const SealSegment&, size_t, uint64_t offset, uint64_t bytes,
              std::span<const iovec> src, uint64_t src_from, uint8_t* out, ChecksumStream* sum,
              std::span<SegmentSeal>) override {
    CopyFromIov(src, offset - src_from, out, bytes);
    sum->Update(out, bytes);
  }
  Status Decode(const CodedValue&, const SealSegment&, size_t, uint64_t offset, uint64_t bytes, const uint8_t* in,
                std::span<const iovec> dst, uint64_t dst_from, ChecksumStream* sum,
                std::span<const SegmentSeal>) override {
    sum->Update(in, bytes);
    CopyToIov(dst, offset - dst_from, in, bytes);
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<ValueCodec> CreatePlainCodec() { return std::make_unique<PlainCodec>(); }

std::unique_ptr<ValueCodec> CreateValueCodec(const std::optional<MasterKey>& master_key,
                                             std::vector<CodecDrive> drives) {
  if (master_key.has_value()) return CreateAesGcmCodec(*master_key, std::move(drives));
  return CreatePlainCodec();
}

}  // namespace memkv::drive
