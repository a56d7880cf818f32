#include "events/encoder.h"

#include <msgpack.h>

namespace memkv::events {
namespace {

// msgpack-c's packer over a growing buffer; the payload is copied out once.
class Packer {
 public:
  Packer() {
    msgpack_sbuffer_init(&buf_);
    msgpack_packer_init(&pk_, &buf_, msgpack_sbuffer_write);
  }
  ~Packer() { msgpack_sbuffer_destroy(&buf_); }
  Packer(const Packer&) = delete;
  Packer& operator=(const Packer&) = delete;

  void Array(size_t n) { msgpack_pack_array(&pk_, n); }
  void Map(size_t n) { msgpack_pack_map(&pk_, n); }
  void Nil() { msgpack_pack_nil(&pk_); }
  void Double(double v) { msgpack_pack_double(&pk_, v); }
  void Uint(uint64_t v) { msgpack_pack_uint64(&pk_, v); }
  void Int(int64_t v) { msgpack_pack_int64(&pk_, v); }
  void Str(std::string_view s) {
    msgpack_pack_str(&pk_, s.size());
    msgpack_pack_str_body(&pk_, s.data(), s.size());
  }
  void Bin(std::string_view b) {
    msgpack_pack_bin(&pk_, b.size());
    msgpack_pack_bin_body(&pk_, b.data(), b.size());
  }
  std::string Take() const { return std::string(buf_.data, buf_.size); }

 private:
  msgpack_sbuffer buf_;
  msgpack_packer pk_;
};

void PackHash(const BlockHash& h, Packer& p) {
  switch (h.kind) {
    case BlockHash::Kind::kBytes: p.Bin(h.bytes); return;
    case BlockHash::Kind::kInt64: p.Int(static_cast<int64_t>(h.value)); return;
    case BlockHash::Kind::kUint64: p.Uint(h.value); return;
  }
}

void PackHashes(const Event& e, Packer& p) {
  p.Array(e.block_hashes.size());
  for (const BlockHash& h : e.block_hashes) PackHash(h, p);
}

void PackMedium(const Event& e, Packer& p) {
  if (e.medium.empty()) {
    p.Nil();
  } else {
    p.Str(e.medium);
  }
}

std::string_view Tag(Event::Kind kind) {
  switch (kind) {
    case Event::Kind::kStored: return "BlockStored";
    case Event::Kind::kRemoved: return "BlockRemoved";
    case Event::Kind::kAllCleared: break;
  }
  return "AllBlocksCleared";
}

// One field: its name first in map encoding, nothing in array encoding.
struct Fields {
  Packer& p;
  Encoding encoding;
  void Name(std::string_view name) {
    if (encoding == Encoding::kMap) p.Str(name);
  }
};

// vLLM's fields in declaration order; those without a default are always
// sent (a decoder requires them), those with one are left out.
void PackEvent(const Event& e, Encoding encoding, Packer& p) {
  Fields f{p, encoding};
  size_t fields = e.kind == Event::Kind::kStored ? 7 : e.kind == Event::Kind::kRemoved ? 2 : 0;
  if (encoding == Encoding::kMap) {
    p.Map(fields + 1);
    p.Str("type");
  } else {
    p.Array(fields + 1);
  }
  p.Str(Tag(e.kind));
  if (e.kind == Event::Kind::kAllCleared) return;
  f.Name("block_hashes");
  PackHashes(e, p);
  if (e.kind == Event::Kind::kStored) {
    f.Name("parent_block_hash");
    e.parent_hash ? PackHash(*e.parent_hash, p) : p.Nil();
    f.Name("token_ids");
    p.Array(0);  // MemKV does not know a block's tokens
    f.Name("block_size");
    p.Uint(e.block_size);
    f.Name("lora_id");
    p.Nil();
  }
  f.Name("medium");
  PackMedium(e, p);
  if (e.kind == Event::Kind::kStored) {
    f.Name("lora_name");
    p.Nil();
  }
}

}  // namespace

std::string_view EncodingName(Encoding encoding) { return encoding == Encoding::kMap ? "map" : "array"; }

Result<Encoding> ParseEncoding(std::string_view text) {
  for (Encoding e : {Encoding::kMap, Encoding::kArray}) {
    if (text == EncodingName(e)) return e;
  }
  return Status(StatusCode::kInvalidArgument,
                "'" + std::string(text) + "' is not an event encoding; allowed: map, array");
}

std::string EncodeBatch(double ts, std::span<const Event> events, Encoding encoding) {
  Packer p;
  p.Array(3);
  p.Double(ts);
  p.Array(events.size());
  for (const Event& e : events) PackEvent(e, encoding, p);
  p.Uint(0);  // data_parallel_rank
  return p.Take();
}

}  // namespace memkv::events
