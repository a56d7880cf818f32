// EncodeBatch against msgpack written out by hand, byte for byte: what a
// msgspec decoder of vLLM's structs reads.
#include "events/encoder.h"

#include <gtest/gtest.h>

#include <initializer_list>

namespace memkv::events {
namespace {

// Bytes from pieces: each a byte list or a text.
struct Bytes {
  std::string out;
  Bytes& B(std::initializer_list<int> bytes) {
    for (int b : bytes) out.push_back(static_cast<char>(b));
    return *this;
  }
  // A fixstr (shorter than 32 bytes): its length in the tag byte.
  Bytes& S(std::string_view s) {
    out.push_back(static_cast<char>(0xa0 | s.size()));
    out += s;
    return *this;
  }
};

// [1.5, [<events>], 0] around `events` (one event).
std::string OneEventBatch(const std::string& event) {
  Bytes b;
  b.B({0x93, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x91});
  return b.out + event + std::string(1, '\0');
}

std::string Encode(const Event& e, Encoding encoding) { return EncodeBatch(1.5, std::span(&e, 1), encoding); }

TEST(EncoderTest, AllBlocksClearedAsMapAndArray) {
  Bytes map;
  map.B({0x81}).S("type").S("AllBlocksCleared");
  EXPECT_EQ(Encode(Event::AllCleared(), Encoding::kMap), OneEventBatch(map.out));
  Bytes array;
  array.B({0x91}).S("AllBlocksCleared");
  EXPECT_EQ(Encode(Event::AllCleared(), Encoding::kArray), OneEventBatch(array.out));
}

TEST(EncoderTest, BlockStoredWithBytesHashAndIntParentAsMap) {
  Event e = Event::Stored(BlockHash::Bytes("\x01\x02"), BlockHash::Int64(-1), 4096, kMediumDram);
  Bytes want;
  want.B({0x88}).S("type").S("BlockStored");
  want.S("block_hashes").B({0x91, 0xc4, 0x02, 0x01, 0x02});
  want.S("parent_block_hash").B({0xff});
  want.S("token_ids").B({0x90});
  want.S("block_size").B({0xcd, 0x10, 0x00});
  want.S("lora_id").B({0xc0});
  want.S("medium").S("MEMKV_DRAM");
  want.S("lora_name").B({0xc0});
  EXPECT_EQ(Encode(e, Encoding::kMap), OneEventBatch(want.out));
}

TEST(EncoderTest, BlockStoredChainHeadAsArray) {
  Event e = Event::Stored(BlockHash::Uint64(0xfedcba9876543210ULL), std::nullopt, 7, kMediumDrive);
  Bytes want;
  want.B({0x98}).S("BlockStored");
  want.B({0x91, 0xcf, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10});
  want.B({0xc0, 0x90, 0x07, 0xc0}).S("MEMKV_DRIVE").B({0xc0});
  EXPECT_EQ(Encode(e, Encoding::kArray), OneEventBatch(want.out));
}

TEST(EncoderTest, BlockRemovedAsMapAndArray) {
  Event e = Event::Removed(BlockHash::Int64(300), kMediumDram);
  Bytes map;
  map.B({0x83}).S("type").S("BlockRemoved").S("block_hashes").B({0x91, 0xcd, 0x01, 0x2c});
  map.S("medium").S("MEMKV_DRAM");
  EXPECT_EQ(Encode(e, Encoding::kMap), OneEventBatch(map.out));
  Bytes array;
  array.B({0x93}).S("BlockRemoved").B({0x91, 0xcd, 0x01, 0x2c}).S("MEMKV_DRAM");
  EXPECT_EQ(Encode(e, Encoding::kArray), OneEventBatch(array.out));
}

TEST(EncoderTest, SeveralEventsAndAnEmptyBatch) {
  std::vector<Event> events = {Event::AllCleared(), Event::AllCleared()};
  Bytes clear;
  clear.B({0x91}).S("AllBlocksCleared");
  Bytes want;
  want.B({0x93, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x92});
  EXPECT_EQ(EncodeBatch(1.5, events, Encoding::kArray), want.out + clear.out + clear.out + std::string(1, '\0'));
  Bytes empty;
  empty.B({0x93, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x90, 0x00});
  EXPECT_EQ(EncodeBatch(1.5, {}, Encoding::kMap), empty.out);
}

TEST(EncoderTest, HashesFromPutsAndKeys) {
  // kInt64 hashes are 8 bytes little-endian in a put.
  EXPECT_EQ(BlockHash::FromPut(std::string("\xfe\xff\xff\xff\xff\xff\xff\xff", 8), HashKind::kInt64),
            BlockHash::Int64(-2));
  EXPECT_EQ(BlockHash::FromPut("abc", HashKind::kBytes), BlockHash::Bytes("abc"));
  EXPECT_EQ(BlockHash::FromPut("abc", HashKind::kInt64), BlockHash::Bytes("abc"));
  EXPECT_EQ(BlockHash::OfKey("k").kind, BlockHash::Kind::kUint64);
  EXPECT_EQ(BlockHash::OfKey("k"), BlockHash::OfKey("k"));
  EXPECT_NE(BlockHash::OfKey("k"), BlockHash::OfKey("l"));
  EXPECT_EQ(BlockHash::ForValue("k", "", HashKind::kBytes), BlockHash::OfKey("k"));
  EXPECT_EQ(BlockHash::ForValue("k", "h", HashKind::kBytes), BlockHash::Bytes("h"));
}

TEST(EncoderTest, ValueEventsTakeTheHashesAPutCarried) {
  const std::string le_minus_two("\xfe\xff\xff\xff\xff\xff\xff\xff", 8);
  Event stored = ValueStored("k", 4096, le_minus_two, std::string("\x05\0\0\0\0\0\0\0", 8), HashKind::kInt64,
                             kMediumDrive);
  EXPECT_EQ(stored.kind, Event::Kind::kStored);
  EXPECT_EQ(stored.block_hashes, std::vector<BlockHash>{BlockHash::Int64(-2)});
  EXPECT_EQ(stored.parent_hash, BlockHash::Int64(5));
  EXPECT_EQ(stored.block_size, 4096u);
  EXPECT_EQ(stored.medium, kMediumDrive);
  Event plain = ValueStored("k", 1, "", "", HashKind::kBytes, kMediumDram);
  EXPECT_EQ(plain.block_hashes, std::vector<BlockHash>{BlockHash::OfKey("k")});
  EXPECT_FALSE(plain.parent_hash.has_value());
  Event removed = ValueRemoved("k", "abc", HashKind::kBytes, kMediumDram);
  EXPECT_EQ(removed.kind, Event::Kind::kRemoved);
  EXPECT_EQ(removed.block_hashes, std::vector<BlockHash>{BlockHash::Bytes("abc")});
  EXPECT_EQ(removed.medium, kMediumDram);
}

TEST(EncoderTest, ParseEncodingNamesTheAllowedValues) {
  EXPECT_EQ(*ParseEncoding("map"), Encoding::kMap);
  EXPECT_EQ(*ParseEncoding("array"), Encoding::kArray);
  Result<Encoding> bad = ParseEncoding("json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'json'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("map, array"), std::string::npos);
}

}  // namespace
}  // namespace memkv::events
