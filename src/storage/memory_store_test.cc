#include "storage/memory_store.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/bytes.h"
#include "base/checksum.h"
#include "base/units.h"

namespace memkv::storage {
namespace {

// Most tests count in blocks of this size: values that are whole blocks take
// exactly that room, so the arithmetic stays readable.
constexpr uint64_t kChunk = 4096;

std::unique_ptr<MemoryStore> MakeStore(uint64_t chunks, uint64_t chunk_size = kChunk) {
  auto store = MemoryStore::Create(
      MemoryStoreOptions{.max_size_bytes = chunks * chunk_size, .block_size_bytes = chunk_size});
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

// The room a value of `size` bytes takes.
uint64_t Room(uint64_t size) { return (size + kPoolUnitBytes - 1) / kPoolUnitBytes * kPoolUnitBytes; }

// Free room, in kChunk blocks (fractions truncated).
uint64_t FreeChunks(const MemoryStore& store) { return store.Stats().free_bytes / kChunk; }

// Bytes that differ per position and per seed, so a value read back from the
// wrong chunk, offset or version does not compare equal by accident.
std::vector<uint8_t> Pattern(size_t size, uint32_t seed) {
  std::vector<uint8_t> v(size);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < size; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

std::vector<uint8_t> ReadAll(const ReadHandle& h) {
  std::vector<uint8_t> out(h.size());
  h.CopyTo(out.data());
  return out;
}

Status PutBytes(MemoryStore& store, std::string_view key, const std::vector<uint8_t>& v) {
  return store.Put(key, v.data(), v.size());
}

std::vector<uint8_t> GetBytes(MemoryStore& store, std::string_view key) {
  auto h = store.Get(key);
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  return h.ok() ? ReadAll(*h) : std::vector<uint8_t>{};
}

// --- Create -----------------------------------------------------------------

TEST(MemoryStoreCreate, RejectsBlockSizesThatAreNotWholeUnits) {
  for (uint64_t block : {uint64_t{0}, uint64_t{100}}) {
    auto r = MemoryStore::Create({.max_size_bytes = 1 << 20, .block_size_bytes = block});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("multiple of 64"), std::string::npos) << r.status().message();
  }
}

TEST(MemoryStoreCreate, RejectsPoolSmallerThanOneChunk) {
  auto r = MemoryStore::Create({.max_size_bytes = kChunk - 1, .block_size_bytes = kChunk});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(MemoryStoreCreate, RoundsPoolDownToWholeChunks) {
  auto r =
      MemoryStore::Create({.max_size_bytes = 10 * kChunk + kChunk / 2, .block_size_bytes = kChunk});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  MemoryStore& store = **r;
  MemoryStoreStats s = store.Stats();
  EXPECT_EQ(s.pool_bytes, 10 * kChunk);
  EXPECT_EQ(s.free_bytes, 10 * kChunk);
  EXPECT_EQ(s.largest_free_bytes, 10 * kChunk);
  EXPECT_EQ(s.free_runs, 1u);
  EXPECT_EQ(s.used_bytes, 0u);
  EXPECT_EQ(s.fragmentation(), 0.0);
  EXPECT_EQ(s.block_size_bytes, kChunk);
  EXPECT_EQ(store.pool_bytes(), 10 * kChunk);
  EXPECT_NE(store.pool_base(), nullptr);
}

TEST(MemoryStoreCreate, MmapFailureIsInternalNamingTheSize) {
  // 4 EiB: beyond any x86-64/arm64 user address space, so mmap must fail.
  auto r = MemoryStore::Create({.max_size_bytes = 1ULL << 62, .block_size_bytes = 1ULL << 40});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("mmap"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(std::to_string(1ULL << 62)), std::string::npos)
      << r.status().message();
}

// --- Round trips ------------------------------------------------------------

class MemoryStoreRoundTrip : public ::testing::TestWithParam<uint64_t> {};

TEST_P(MemoryStoreRoundTrip, BytesComeBackExactly) {
  auto store = MakeStore(8);
  uint64_t size = GetParam();
  std::vector<uint8_t> value = Pattern(size, 7);
  ASSERT_TRUE(PutBytes(*store, "k", value).ok());

  MemoryStoreStats s = store->Stats();
  EXPECT_EQ(s.free_bytes, 8 * kChunk - Room(size));
  EXPECT_EQ(s.keys, 1u);
  EXPECT_EQ(s.used_bytes, Room(size));
  EXPECT_EQ(s.value_bytes, size);

  auto h = store->Get("k");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->size(), size);
  EXPECT_EQ(h->checksum(), Checksum(value.data(), value.size()));
  EXPECT_EQ(ReadAll(*h), value);
  // The iovecs cover exactly the value and lie inside the registered pool.
  uint64_t total = 0;
  auto* lo = static_cast<uint8_t*>(store->pool_base());
  for (const iovec& v : h->iov()) {
    auto* p = static_cast<uint8_t*>(v.iov_base);
    EXPECT_GE(p, lo);
    EXPECT_LE(p + v.iov_len, lo + store->pool_bytes());
    total += v.iov_len;
  }
  EXPECT_EQ(total, size);
  EXPECT_EQ(store->Stats().hits, 1u);
}

INSTANTIATE_TEST_SUITE_P(Sizes, MemoryStoreRoundTrip,
                         ::testing::Values(0, 1, kChunk - 1, kChunk, kChunk + 1, 3 * kChunk + 17,
                                           8 * kChunk));

TEST(MemoryStore, TwoPhasePutIsInvisibleUntilCommit) {
  auto store = MakeStore(8);
  std::vector<uint8_t> value = Pattern(2 * kChunk + 5, 3);
  auto put = store->BeginPut(value.size());
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(put->size(), value.size());
  size_t off = 0;
  for (const iovec& v : put->iov()) {  // as readv() would
    std::memcpy(v.iov_base, value.data() + off, v.iov_len);
    off += v.iov_len;
  }
  ASSERT_EQ(off, value.size());
  EXPECT_FALSE(store->Exists("k"));
  EXPECT_EQ(store->Get("k").status().code(), StatusCode::kNotFound);

  ASSERT_TRUE(store->CommitPut(std::move(*put), "k", Checksum(value.data(), value.size())).ok());
  EXPECT_TRUE(store->Exists("k"));
  EXPECT_EQ(GetBytes(*store, "k"), value);
}

TEST(MemoryStore, BinaryKeysAreDistinct) {
  auto store = MakeStore(4);
  std::string a("\0\1\2", 3), b("\0\1\3", 3);
  ASSERT_TRUE(PutBytes(*store, a, Pattern(10, 1)).ok());
  ASSERT_TRUE(PutBytes(*store, b, Pattern(10, 2)).ok());
  EXPECT_EQ(GetBytes(*store, a), Pattern(10, 1));
  EXPECT_EQ(GetBytes(*store, b), Pattern(10, 2));
}

TEST(MemoryStore, OverwriteReplacesValueAndFreesOldChunks) {
  auto store = MakeStore(8);
  ASSERT_TRUE(PutBytes(*store, "k", Pattern(3 * kChunk, 1)).ok());
  ASSERT_TRUE(PutBytes(*store, "k", Pattern(kChunk + 1, 2)).ok());
  EXPECT_EQ(GetBytes(*store, "k"), Pattern(kChunk + 1, 2));
  MemoryStoreStats s = store->Stats();
  EXPECT_EQ(s.keys, 1u);
  EXPECT_EQ(s.value_bytes, kChunk + 1);
  EXPECT_EQ(s.used_bytes, Room(kChunk + 1));
  EXPECT_EQ(s.free_bytes, 8 * kChunk - Room(kChunk + 1));
  EXPECT_EQ(s.evictions, 0u);
}

// A put that replaces a value keeps the index's node and repoints it at the
// new value's key; the old value's key (on the heap: longer than a string
// keeps inline) is freed with it, and the key is still found.
TEST(MemoryStore, OverwrittenKeyIsFoundAfterTheOldValueIsFreed) {
  auto store = MakeStore(8);
  const std::string key(64, 'k');
  for (uint8_t round = 1; round <= 4; ++round) {
    ASSERT_TRUE(PutBytes(*store, key, Pattern(kChunk, round)).ok());
    ASSERT_TRUE(PutBytes(*store, "other" + std::to_string(round), Pattern(10, round)).ok());
  }
  EXPECT_EQ(GetBytes(*store, key), Pattern(kChunk, 4));
  EXPECT_EQ(store->ValueSize(key), std::optional<uint64_t>(kChunk));
  EXPECT_EQ(store->Stats().keys, 5u);
  ASSERT_TRUE(store->Delete(key).ok());
  EXPECT_FALSE(store->Exists(key));
  EXPECT_EQ(store->Stats().keys, 4u);
}

TEST(MemoryStore, DeleteRemovesValueAndFreesChunks) {
  auto store = MakeStore(8);
  ASSERT_TRUE(PutBytes(*store, "k", Pattern(2 * kChunk, 1)).ok());
  ASSERT_TRUE(store->Delete("k").ok());
  EXPECT_FALSE(store->Exists("k"));
  EXPECT_EQ(store->Get("k").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Delete("k").code(), StatusCode::kNotFound);
  MemoryStoreStats s = store->Stats();
  EXPECT_EQ(s.free_bytes, 8 * kChunk);
  EXPECT_EQ(s.keys, 0u);
  EXPECT_EQ(s.used_bytes, 0u);
  EXPECT_EQ(s.value_bytes, 0u);
}

TEST(MemoryStore, HitsAndMissesCountGetsButNotExists) {
  auto store = MakeStore(4);
  ASSERT_TRUE(PutBytes(*store, "a", Pattern(5, 1)).ok());
  EXPECT_TRUE(store->Get("a").ok());
  EXPECT_FALSE(store->Get("b").ok());
  EXPECT_FALSE(store->Get("c").ok());
  EXPECT_TRUE(store->Exists("a"));
  EXPECT_FALSE(store->Exists("b"));
  MemoryStoreStats s = store->Stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
}

// --- Pins: delete / overwrite while read ------------------------------------

// Fills every block not held by a pin, several times over, with 0xAA bytes.
void ChurnPool(MemoryStore& store, int rounds) {
  std::vector<uint8_t> filler(kChunk, 0xAA);
  for (int i = 0; i < rounds; ++i) {
    ASSERT_TRUE(PutBytes(store, "fill" + std::to_string(i), filler).ok());
  }
}

TEST(MemoryStore, DeleteWhileReadHandleHeldKeepsBytesUntilRelease) {
  auto store = MakeStore(8);
  std::vector<uint8_t> value = Pattern(3 * kChunk - 10, 42);
  ASSERT_TRUE(PutBytes(*store, "k", value).ok());
  auto h = store->Get("k");
  ASSERT_TRUE(h.ok());

  ASSERT_TRUE(store->Delete("k").ok());
  EXPECT_FALSE(store->Exists("k"));
  EXPECT_EQ(FreeChunks(*store), 5u);  // the pinned 3 stay out

  // Only 5 blocks can be had while the pin lasts.
  EXPECT_EQ(store->BeginPut(6 * kChunk).status().code(), StatusCode::kResourceExhausted);
  ChurnPool(*store, 20);
  EXPECT_EQ(ReadAll(*h), value);
  EXPECT_EQ(ChecksumIov(h->iov()), h->checksum());
  EXPECT_EQ(store->Stats().free_bytes, 0u);

  *h = ReadHandle();  // release the pin
  MemoryStoreStats s = store->Stats();
  EXPECT_EQ(FreeChunks(*store), 3u);
  EXPECT_EQ(s.free_bytes + s.keys * kChunk, s.pool_bytes);  // fillers are 1 block each
}

TEST(MemoryStore, OverwriteWhileReadHandleHeldKeepsOldBytes) {
  auto store = MakeStore(8);
  std::vector<uint8_t> old_value = Pattern(2 * kChunk, 1);
  std::vector<uint8_t> new_value = Pattern(2 * kChunk, 2);
  ASSERT_TRUE(PutBytes(*store, "k", old_value).ok());
  auto h = store->Get("k");
  ASSERT_TRUE(h.ok());

  ASSERT_TRUE(PutBytes(*store, "k", new_value).ok());
  EXPECT_EQ(GetBytes(*store, "k"), new_value);
  EXPECT_EQ(FreeChunks(*store), 4u);
  ASSERT_TRUE(store->Delete("k").ok());
  ChurnPool(*store, 20);
  EXPECT_EQ(ReadAll(*h), old_value);

  *h = ReadHandle();
  EXPECT_EQ(FreeChunks(*store), 2u);
}

TEST(MemoryStore, RoomReturnsOnlyWhenLastOfSeveralPinsGoes) {
  auto store = MakeStore(4);
  ASSERT_TRUE(PutBytes(*store, "k", Pattern(2 * kChunk, 1)).ok());
  auto h1 = store->Get("k");
  auto h2 = store->Get("k");
  ASSERT_TRUE(h1.ok() && h2.ok());
  ReadHandle moved = std::move(*h1);  // the moved-from handle must not unpin
  *h1 = ReadHandle();
  ASSERT_TRUE(store->Delete("k").ok());
  EXPECT_EQ(FreeChunks(*store), 2u);
  *h2 = ReadHandle();
  EXPECT_EQ(FreeChunks(*store), 2u);
  EXPECT_EQ(ReadAll(moved), Pattern(2 * kChunk, 1));
  moved = ReadHandle();
  EXPECT_EQ(FreeChunks(*store), 4u);
}

// --- Eviction ---------------------------------------------------------------

TEST(MemoryStore, EvictsLeastRecentlyUsedFirst) {
  auto store = MakeStore(5);
  for (const char* k : {"a", "b", "c", "d"})
    ASSERT_TRUE(PutBytes(*store, k, Pattern(kChunk, 1)).ok());
  ASSERT_TRUE(store->Get("a").ok());                            // a: read, now recent
  ASSERT_TRUE(PutBytes(*store, "b", Pattern(kChunk, 2)).ok());  // b: overwrite counts as use
  ASSERT_TRUE(PutBytes(*store, "e", Pattern(kChunk, 1)).ok());  // takes the last free block
  EXPECT_EQ(store->Stats().evictions, 0u);
  // Oldest first: c, d, a, b, e. Two blocks must go.
  ASSERT_TRUE(PutBytes(*store, "f", Pattern(2 * kChunk, 1)).ok());
  EXPECT_FALSE(store->Exists("c"));
  EXPECT_FALSE(store->Exists("d"));
  EXPECT_TRUE(store->Exists("a"));
  EXPECT_TRUE(store->Exists("b"));
  EXPECT_TRUE(store->Exists("e"));
  EXPECT_EQ(store->Stats().evictions, 2u);
  ASSERT_TRUE(PutBytes(*store, "g", Pattern(kChunk, 1)).ok());
  EXPECT_FALSE(store->Exists("a"));
  EXPECT_TRUE(store->Exists("b"));
  MemoryStoreStats s = store->Stats();
  EXPECT_EQ(s.evictions, 3u);
  EXPECT_EQ(s.keys, 4u);
  EXPECT_EQ(s.free_bytes, 0u);
  EXPECT_EQ(GetBytes(*store, "b"), Pattern(kChunk, 2));
}

// BeginPut does not know the key yet, so overwriting in a full pool may evict
// the very value being replaced; the new value still lands.
TEST(MemoryStore, OverwriteInFullPoolMayEvictTheOldValue) {
  auto store = MakeStore(2);
  ASSERT_TRUE(PutBytes(*store, "a", Pattern(kChunk, 1)).ok());
  ASSERT_TRUE(PutBytes(*store, "b", Pattern(kChunk, 1)).ok());
  ASSERT_TRUE(PutBytes(*store, "a", Pattern(kChunk, 2)).ok());
  EXPECT_EQ(GetBytes(*store, "a"), Pattern(kChunk, 2));
  EXPECT_TRUE(store->Exists("b"));
  EXPECT_EQ(store->Stats().evictions, 1u);
  EXPECT_EQ(store->Stats().keys, 2u);
}

TEST(MemoryStore, EvictionSkipsPinnedValues) {
  auto store = MakeStore(4);
  for (const char* k : {"a", "b", "c", "d"})
    ASSERT_TRUE(PutBytes(*store, k, Pattern(kChunk, 1)).ok());
  auto h = store->Get("a");
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(store->Get("b").ok());  // b most recent; a pinned; c oldest unpinned
  ASSERT_TRUE(PutBytes(*store, "e", Pattern(2 * kChunk, 1)).ok());
  EXPECT_TRUE(store->Exists("a"));
  EXPECT_TRUE(store->Exists("b"));
  EXPECT_FALSE(store->Exists("c"));
  EXPECT_FALSE(store->Exists("d"));
  EXPECT_EQ(ReadAll(*h), Pattern(kChunk, 1));
}

TEST(MemoryStore, ValueLargerThanPoolIsTooLarge) {
  auto store = MakeStore(4);
  uint64_t size = 4 * kChunk + 1;
  auto r = store->BeginPut(size);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooLarge);
  EXPECT_NE(r.status().message().find(FormatSize(size)), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(FormatSize(4 * kChunk)), std::string::npos)
      << r.status().message();
  // Exactly the pool fits, evicting everything else.
  ASSERT_TRUE(PutBytes(*store, "a", Pattern(kChunk, 1)).ok());
  ASSERT_TRUE(PutBytes(*store, "big", Pattern(4 * kChunk, 2)).ok());
  EXPECT_FALSE(store->Exists("a"));
  EXPECT_EQ(GetBytes(*store, "big"), Pattern(4 * kChunk, 2));
}

TEST(MemoryStore, EverythingPinnedIsResourceExhaustedAndEvictsNothing) {
  auto store = MakeStore(4);
  ASSERT_TRUE(PutBytes(*store, "a", Pattern(2 * kChunk, 1)).ok());
  ASSERT_TRUE(PutBytes(*store, "b", Pattern(kChunk, 2)).ok());
  ASSERT_TRUE(PutBytes(*store, "c", Pattern(kChunk, 3)).ok());
  auto ha = store->Get("a");
  auto hb = store->Get("b");
  ASSERT_TRUE(ha.ok() && hb.ok());

  // c alone is evictable: 1 block, so 2 cannot be had.
  auto r = store->BeginPut(2 * kChunk);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("pinned"), std::string::npos) << r.status().message();
  EXPECT_TRUE(store->Exists("c"));  // refused before evicting anything
  EXPECT_EQ(store->Stats().evictions, 0u);

  *hb = ReadHandle();
  ASSERT_TRUE(PutBytes(*store, "d", Pattern(2 * kChunk, 4)).ok());
  EXPECT_TRUE(store->Exists("a"));
  EXPECT_FALSE(store->Exists("b"));
  EXPECT_FALSE(store->Exists("c"));
  EXPECT_EQ(ReadAll(*ha), Pattern(2 * kChunk, 1));
}

TEST(MemoryStore, PendingPutsAreNotEvictable) {
  auto store = MakeStore(4);
  auto p1 = store->BeginPut(3 * kChunk);
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(store->BeginPut(2 * kChunk).status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(store->BeginPut(kChunk).ok());  // dropped at once
  EXPECT_EQ(FreeChunks(*store), 1u);
}

TEST(MemoryStore, DroppedPendingPutReturnsItsRoom) {
  auto store = MakeStore(8);
  {
    auto p = store->BeginPut(3 * kChunk + 1);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(store->Stats().free_bytes, 8 * kChunk - Room(3 * kChunk + 1));
    EXPECT_EQ(store->Stats().used_bytes, Room(3 * kChunk + 1));  // in flight counts as consumed
    EXPECT_EQ(store->Stats().value_bytes, 0u);
  }
  EXPECT_EQ(FreeChunks(*store), 8u);

  // Moves hand ownership over exactly once; assigning over a pending put
  // releases the one it held.
  auto a = store->BeginPut(2 * kChunk);
  auto b = store->BeginPut(kChunk);
  ASSERT_TRUE(a.ok() && b.ok());
  PendingPut moved = std::move(*a);
  EXPECT_EQ(FreeChunks(*store), 5u);
  moved = std::move(*b);
  EXPECT_EQ(FreeChunks(*store), 7u);
  moved = PendingPut();
  EXPECT_EQ(FreeChunks(*store), 8u);
  EXPECT_EQ(store->Stats().keys, 0u);
}

TEST(MemoryStore, CommitPutRejectsPutFromElsewhere) {
  auto store = MakeStore(4);
  auto other = MakeStore(4);
  EXPECT_EQ(store->CommitPut(PendingPut(), "k", 0).code(), StatusCode::kInvalidArgument);
  auto foreign = other->BeginPut(kChunk);
  ASSERT_TRUE(foreign.ok());
  EXPECT_EQ(store->CommitPut(std::move(*foreign), "k", 0).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(store->Exists("k"));
  EXPECT_EQ(FreeChunks(*store), 4u);
  EXPECT_EQ(FreeChunks(*other), 4u);  // went home when dropped
}

// --- Packing ----------------------------------------------------------------

TEST(MemoryStorePacking, SmallValuesShareTheRoomOfOneBlock) {
  auto store = MakeStore(16);  // 64 KiB
  for (int i = 0; i < 400; ++i) {
    ASSERT_TRUE(PutBytes(*store, "k" + std::to_string(i), Pattern(100, i)).ok());
  }
  MemoryStoreStats s = store->Stats();
  EXPECT_EQ(s.evictions, 0u);
  EXPECT_EQ(s.keys, 400u);
  EXPECT_EQ(s.value_bytes, 400u * 100);
  EXPECT_EQ(s.used_bytes, 400u * Room(100));
  for (int i = 0; i < 400; i += 37) EXPECT_EQ(GetBytes(*store, "k" + std::to_string(i)), Pattern(100, i));
}

TEST(MemoryStorePacking, AFullPoolEvictsAboutTheSizeAskedFor) {
  auto store = MakeStore(16);  // 64 KiB of 1 KiB values
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(PutBytes(*store, "k" + std::to_string(i), Pattern(1024, i)).ok());
  EXPECT_EQ(store->Stats().free_bytes, 0u);
  ASSERT_TRUE(PutBytes(*store, "big", Pattern(4096, 99)).ok());
  MemoryStoreStats s = store->Stats();
  EXPECT_EQ(s.evictions, 4u);  // the four oldest, no more
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(store->Exists("k" + std::to_string(i)));
  EXPECT_TRUE(store->Exists("k4"));
  // An 8-byte put into the full pool evicts one small value, not a block's worth.
  ASSERT_TRUE(PutBytes(*store, "tiny", Pattern(8, 1)).ok());
  EXPECT_EQ(store->Stats().evictions, 5u);
  EXPECT_EQ(GetBytes(*store, "big"), Pattern(4096, 99));
}

TEST(MemoryStorePacking, FragmentedRoomStillTakesAValueInPieces) {
  auto store = MakeStore(16);
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(PutBytes(*store, "k" + std::to_string(i), Pattern(1024, i)).ok());
  for (int i = 0; i < 64; i += 2) ASSERT_TRUE(store->Delete("k" + std::to_string(i)).ok());
  MemoryStoreStats s = store->Stats();
  EXPECT_EQ(s.free_bytes, 32u * 1024);
  EXPECT_EQ(s.free_runs, 32u);
  EXPECT_EQ(s.largest_free_bytes, 1024u);
  EXPECT_DOUBLE_EQ(s.fragmentation(), 1.0 - 1.0 / 32);
  // 8 KiB fits in eight 1 KiB holes with nothing evicted, and reads back whole.
  std::vector<uint8_t> value = Pattern(8192, 5);
  ASSERT_TRUE(PutBytes(*store, "spread", value).ok());
  EXPECT_EQ(store->Stats().evictions, 0u);
  auto h = store->Get("spread");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->iov().size(), 8u);
  EXPECT_EQ(ReadAll(*h), value);
}

TEST(MemoryStorePacking, ValuesOfTargetSizesCostTheirOwnSizeInAFullPool) {
  // 2 MiB + 1 is the worst case for fixed blocks (two of them); packed it
  // costs one unit more than its bytes.
  for (uint64_t size : {uint64_t{4096}, uint64_t{65536}, uint64_t{(2ULL << 20) + 1}}) {
    auto store = MakeStore(16, 1ULL << 20);  // 16 MiB
    std::vector<uint8_t> value = Pattern(size, 3);
    int i = 0;
    while (store->Stats().evictions == 0) ASSERT_TRUE(PutBytes(*store, "k" + std::to_string(i++), value).ok());
    MemoryStoreStats s = store->Stats();
    EXPECT_LE(s.bytes_per_value_byte(), 1.0 + 64.0 / static_cast<double>(size)) << size;
    EXPECT_GE(static_cast<double>(s.value_bytes), 0.99 * static_cast<double>(s.pool_bytes) - size) << size;
  }
}

// --- Prefault ---------------------------------------------------------------

TEST(MemoryStorePrefault, EveryPageIsResidentAfterCreateAndProgressReachesTheEnd) {
  constexpr uint64_t kPool = 64ULL << 20;
  uint64_t last_done = 0, last_total = 0;
  int calls = 0;
  auto r = MemoryStore::Create({.max_size_bytes = kPool,
                                .block_size_bytes = 2ULL << 20,
                                .hugepages = HugePagePolicy::kNever,
                                .prefault = true,
                                .prefault_progress = [&](uint64_t done, uint64_t total) {
                                  EXPECT_GE(done, last_done);
                                  last_done = done;
                                  last_total = total;
                                  ++calls;
                                }});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  MemoryStore& store = **r;
  EXPECT_GT(store.backing().prefault_nanos, 0u);
  EXPECT_GE(calls, 1);
  EXPECT_EQ(last_done, kPool);
  EXPECT_EQ(last_total, kPool);
  const size_t pages = kPool / 4096;
  std::vector<unsigned char> resident(pages);
  ASSERT_EQ(mincore(store.pool_base(), kPool, resident.data()), 0) << std::strerror(errno);
  EXPECT_EQ(static_cast<size_t>(std::count_if(resident.begin(), resident.end(), [](unsigned char c) { return c & 1; })),
            pages);
}

TEST(MemoryStorePrefault, OffLeavesThePoolUntouched) {
  auto r = MemoryStore::Create({.max_size_bytes = 8ULL << 20, .block_size_bytes = 2ULL << 20,
                                .hugepages = HugePagePolicy::kNever});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->backing().prefault_nanos, 0u);
  std::vector<unsigned char> resident((8ULL << 20) / 4096);
  ASSERT_EQ(mincore((*r)->pool_base(), 8ULL << 20, resident.data()), 0);
  EXPECT_EQ(std::count_if(resident.begin(), resident.end(), [](unsigned char c) { return c & 1; }), 0);
}

// --- Corruption -------------------------------------------------------------

TEST(MemoryStore, ChecksumMismatchIsAMissNeverWrongBytes) {
  auto store = MakeStore(8);
  ASSERT_TRUE(PutBytes(*store, "k", Pattern(2 * kChunk + 3, 1)).ok());
  ASSERT_TRUE(store->CorruptForTesting("k").ok());
  auto r = store->Get("k");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("checksum mismatch"), std::string::npos)
      << r.status().message();
  MemoryStoreStats s = store->Stats();
  EXPECT_EQ(s.checksum_failures, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 0u);
  EXPECT_EQ(s.keys, 0u);
  EXPECT_EQ(s.free_bytes, 8 * kChunk);
  EXPECT_FALSE(store->Exists("k"));  // dropped, so the next read is a plain miss
  EXPECT_EQ(store->Get("k").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Stats().checksum_failures, 1u);
}

TEST(MemoryStore, ChecksumMismatchWhilePinnedFreesRoomAfterRelease) {
  auto store = MakeStore(4);
  ASSERT_TRUE(PutBytes(*store, "k", Pattern(kChunk, 1)).ok());
  auto h = store->Get("k");  // verified before the corruption
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(store->CorruptForTesting("k").ok());
  EXPECT_FALSE(store->Get("k").ok());
  EXPECT_EQ(store->Stats().checksum_failures, 1u);
  EXPECT_EQ(FreeChunks(*store), 3u);
  *h = ReadHandle();
  EXPECT_EQ(FreeChunks(*store), 4u);
}

class ManualClock final : public Clock {
 public:
  Nanos NowNanos() const override { return now.load(); }
  std::atomic<Nanos> now{1'000'000'000};
};

// memory.read_check_interval_ms: a value whose bytes matched within the
// interval is not hashed again after a send; once the interval has passed
// it is, and a corrupt one is dropped. A check at Get (kNow) always hashes.
TEST(MemoryStore, ACheckLeftForLaterHashesAValueAtMostOncePerInterval) {
  constexpr Nanos kInterval = 1'000'000'000;
  ManualClock clock;
  auto created = MemoryStore::Create(MemoryStoreOptions{.max_size_bytes = 8 * kChunk,
                                                        .block_size_bytes = kChunk,
                                                        .read_check_interval_ns = kInterval,
                                                        .clock = &clock});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  MemoryStore& store = **created;
  ASSERT_TRUE(PutBytes(store, "k", Pattern(kChunk + 5, 1)).ok());

  auto check_later = [&store] {
    auto h = store.Get("k", ReadCheck::kLater);
    return h.ok() ? h->CheckLater() : h.status();
  };
  EXPECT_TRUE(check_later().ok()) << "never checked: hashed";
  EXPECT_EQ(store.Stats().later_checks, 1u);
  ASSERT_TRUE(store.CorruptForTesting("k").ok());

  clock.now += kInterval - 1;
  EXPECT_TRUE(check_later().ok()) << "matched within the interval: not hashed again";
  EXPECT_EQ(store.Stats().later_checks, 1u);
  EXPECT_EQ(store.Stats().later_checks_skipped, 1u);
  EXPECT_TRUE(store.Exists("k"));
  EXPECT_FALSE(store.Get("k").ok()) << "a check at Get ignores the interval";
  EXPECT_EQ(store.Stats().checksum_failures, 1u);

  ASSERT_TRUE(PutBytes(store, "k", Pattern(3000, 2)).ok());
  EXPECT_TRUE(check_later().ok()) << "a new value was never checked: hashed";
  ASSERT_TRUE(store.CorruptForTesting("k").ok());
  clock.now += kInterval;
  Status late = check_later();
  EXPECT_EQ(late.code(), StatusCode::kCorruption) << "the interval has passed: hashed, and found out";
  EXPECT_FALSE(store.Exists("k"));
  EXPECT_EQ(store.Stats().checksum_failures, 2u);
  EXPECT_EQ(store.Stats().later_checks, 3u);
  EXPECT_EQ(store.Stats().later_checks_skipped, 1u);
}

TEST(MemoryStore, ANegativeReadCheckIntervalIsRefused) {
  auto created = MemoryStore::Create(MemoryStoreOptions{
      .max_size_bytes = 8 * kChunk, .block_size_bytes = kChunk, .read_check_interval_ns = -1});
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(created.status().message().find("read_check_interval_ns"), std::string::npos);
}

TEST(MemoryStore, ACheckLeftForLaterHandsOutTheBytesAndDropsThemOnceUsedIfCorrupt) {
  auto store = MakeStore(8);
  ASSERT_TRUE(PutBytes(*store, "bad", Pattern(kChunk + 5, 1)).ok());
  ASSERT_TRUE(PutBytes(*store, "good", Pattern(3000, 2)).ok());
  ASSERT_TRUE(store->CorruptForTesting("bad").ok());

  // The bytes come back unchecked, under the checksum they were stored with:
  // the reader that hashes them finds the mismatch.
  auto bad = store->Get("bad", ReadCheck::kLater);
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  std::vector<uint8_t> copy(bad->size());
  bad->CopyTo(copy.data());
  EXPECT_NE(Checksum(copy.data(), copy.size()), bad->checksum());
  EXPECT_EQ(store->Stats().checksum_failures, 0u) << "nothing hashed yet";

  Status checked = bad->CheckLater();
  EXPECT_EQ(checked.code(), StatusCode::kCorruption) << checked.ToString();
  EXPECT_NE(checked.message().find("checksum mismatch"), std::string::npos) << checked.message();
  EXPECT_EQ(store->Stats().checksum_failures, 1u);
  EXPECT_FALSE(store->Exists("bad")) << "dropped once found out";
  EXPECT_TRUE(bad->CheckLater().ok()) << "checked once";
  const uint64_t free_while_pinned = store->Stats().free_bytes;
  *bad = ReadHandle();
  EXPECT_GT(store->Stats().free_bytes, free_while_pinned) << "its room comes back with the last pin";

  auto good = store->Get("good", ReadCheck::kLater);
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(good->CheckLater().ok());
  EXPECT_TRUE(store->Exists("good"));
  auto now = store->Get("good");
  ASSERT_TRUE(now.ok());
  EXPECT_TRUE(now->CheckLater().ok()) << "checked at Get: nothing left to do";
  EXPECT_EQ(store->Stats().checksum_failures, 1u);
}

TEST(MemoryStore, CorruptForTestingNeedsAByte) {
  auto store = MakeStore(4);
  EXPECT_EQ(store->CorruptForTesting("absent").code(), StatusCode::kNotFound);
  ASSERT_TRUE(store->Put("empty", nullptr, 0).ok());
  EXPECT_EQ(store->CorruptForTesting("empty").code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(store->Get("empty").ok());
}

// --- Concurrency ------------------------------------------------------------

// A stress value: [key id u32][version u32][size u64] then bytes derived from
// all three, so a torn, mixed or misplaced read cannot pass Verify().
constexpr size_t kHeader = 16;

std::vector<uint8_t> StressValue(uint32_t key_id, uint32_t version, size_t size) {
  std::vector<uint8_t> v(size);
  if (size == 0) return v;
  StoreLe32(v.data(), key_id);
  StoreLe32(v.data() + 4, version);
  StoreLe64(v.data() + 8, size);
  for (size_t i = kHeader; i < size; ++i)
    v[i] = static_cast<uint8_t>(key_id * 131 + version * 31 + i * 7);
  return v;
}

// Empty string when `v` is a whole, consistent value of `key_id`.
std::string Verify(uint32_t key_id, const std::vector<uint8_t>& v) {
  if (v.empty()) return "";  // empty values are written too
  if (v.size() < kHeader) return "short value " + std::to_string(v.size());
  if (LoadLe32(v.data()) != key_id) return "value of another key";
  if (LoadLe64(v.data() + 8) != v.size()) return "size mismatch";
  uint32_t version = LoadLe32(v.data() + 4);
  for (size_t i = kHeader; i < v.size(); ++i) {
    if (v[i] != static_cast<uint8_t>(key_id * 131 + version * 31 + i * 7)) {
      return "torn byte at " + std::to_string(i);
    }
  }
  return "";
}

TEST(MemoryStoreStress, ConcurrentMixedOpsNeverTearAndAccountForEveryUnit) {
  constexpr uint64_t kSmallChunk = 256;
  constexpr uint32_t kKeys = 24;
  constexpr int kThreads = 8;
  constexpr int kOpsPerThread = 3000;
  // ~3.5 blocks a value, 24 keys, 40 blocks: eviction all the time.
  auto store = MakeStore(40, kSmallChunk);

  std::atomic<uint32_t> next_version{1};
  std::atomic<uint64_t> gets{0};
  std::atomic<int> failures{0};
  auto worker = [&](int thread_id) {
    std::mt19937 rng(thread_id);
    ReadHandle kept;  // sometimes held across later ops, to keep pins around
    uint32_t kept_key = 0;
    for (int op = 0; op < kOpsPerThread; ++op) {
      uint32_t key_id = rng() % kKeys;
      std::string key = "key" + std::to_string(key_id);
      int dice = static_cast<int>(rng() % 100);
      if (dice < 45) {
        gets.fetch_add(1, std::memory_order_relaxed);
        auto h = store->Get(key);
        if (!h.ok()) {
          if (h.status().code() != StatusCode::kNotFound) failures++;
          continue;
        }
        if (!Verify(key_id, ReadAll(*h)).empty()) failures++;
        if (rng() % 4 == 0) {
          kept = std::move(*h);
          kept_key = key_id;
        }
      } else if (dice < 80) {
        size_t size = (rng() % 20 == 0) ? 0 : kHeader + rng() % (5 * kSmallChunk);
        std::vector<uint8_t> v = StressValue(key_id, next_version++, size);
        auto put = store->BeginPut(size);
        if (!put.ok()) {
          // Everything pinned or pending for a moment is legitimate here.
          if (put.status().code() != StatusCode::kResourceExhausted) failures++;
          continue;
        }
        size_t off = 0;
        for (const iovec& seg : put->iov()) {
          std::memcpy(seg.iov_base, v.data() + off, seg.iov_len);
          off += seg.iov_len;
        }
        if (rng() % 8 == 0) continue;  // dropped uncommitted
        if (!store->CommitPut(std::move(*put), key, Checksum(v.data(), v.size())).ok()) failures++;
      } else if (dice < 92) {
        Status s = store->Delete(key);
        if (!s.ok() && s.code() != StatusCode::kNotFound) failures++;
      } else {
        store->Exists(key);
      }
      // A kept handle must stay intact whatever happened to its key since.
      if (kept.size() > 0 && rng() % 8 == 0) {
        if (!Verify(kept_key, ReadAll(kept)).empty()) failures++;
        kept = ReadHandle();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();

  EXPECT_EQ(failures.load(), 0);
  // Every unit is either free or held by a live value; nothing leaked or
  // was freed twice (which would push free_bytes past the pool).
  uint64_t held = 0, bytes = 0, live = 0;
  for (uint32_t k = 0; k < kKeys; ++k) {
    auto h = store->Get("key" + std::to_string(k));
    gets++;
    if (!h.ok()) continue;
    EXPECT_EQ(Verify(k, ReadAll(*h)), "");
    held += Room(h->size());
    bytes += h->size();
    live++;
  }
  MemoryStoreStats s = store->Stats();
  EXPECT_EQ(s.free_bytes + held, s.pool_bytes);
  EXPECT_EQ(s.used_bytes, held);
  EXPECT_EQ(s.keys, live);
  EXPECT_EQ(s.value_bytes, bytes);
  EXPECT_EQ(s.checksum_failures, 0u);
  EXPECT_EQ(s.hits + s.misses, gets.load());
  EXPECT_GT(s.evictions, 0u);  // the test exercised eviction
}

}  // namespace
}  // namespace memkv::storage
