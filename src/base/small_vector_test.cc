#include "base/small_vector.h"

#include <gtest/gtest.h>

#include <span>
#include <utility>
#include <vector>

#include "base/allocation_count.h"

namespace memkv {
namespace {

struct Piece {
  uint64_t offset = 0;
  uint64_t length = 0;
  bool operator==(const Piece&) const = default;
};

using Pieces = SmallVector<Piece, 1>;

std::vector<Piece> Copy(std::span<const Piece> runs) { return {runs.begin(), runs.end()}; }

TEST(SmallVectorTest, TheFirstNElementsAllocateNothing) {
  Pieces one;
  EXPECT_EQ(AllocationsOf([&] { one.push_back({1, 2}); }), 0u);
  EXPECT_FALSE(one.on_heap());
  SmallVector<Piece, 3> three;
  EXPECT_EQ(AllocationsOf([&] {
              for (uint64_t i = 0; i < 3; ++i) three.push_back({i, i});
            }),
            0u);
  EXPECT_EQ(Copy(three), (std::vector<Piece>{{0, 0}, {1, 1}, {2, 2}}));
}

TEST(SmallVectorTest, GrowsOntoTheHeapKeepingItsElementsInOrder) {
  Pieces runs;
  for (uint64_t i = 0; i < 100; ++i) runs.push_back({i, 2 * i});
  ASSERT_EQ(runs.size(), 100u);
  EXPECT_TRUE(runs.on_heap());
  for (uint64_t i = 0; i < 100; ++i) EXPECT_EQ(runs[i], (Piece{i, 2 * i}));
  EXPECT_EQ(runs.back(), (Piece{99, 198}));
  // Pushing one of its own elements while it grows copies it first.
  Pieces self{{7, 7}};
  self.push_back(self.back());
  EXPECT_EQ(Copy(self), (std::vector<Piece>{{7, 7}, {7, 7}}));
}

TEST(SmallVectorTest, ClearKeepsTheRoom) {
  Pieces runs;
  runs.reserve(8);
  runs.push_back({1, 1});
  runs.clear();
  EXPECT_TRUE(runs.empty());
  EXPECT_EQ(runs.capacity(), 8u);
  EXPECT_EQ(AllocationsOf([&] {
              for (uint64_t i = 0; i < 8; ++i) runs.push_back({i, i});
            }),
            0u);
}

TEST(SmallVectorTest, MovesTakeTheElementsAndLeaveTheSourceEmpty) {
  Pieces inline_src{{1, 2}};
  Pieces a(std::move(inline_src));
  EXPECT_EQ(Copy(a), (std::vector<Piece>{{1, 2}}));
  EXPECT_TRUE(inline_src.empty());

  Pieces heap_src{{1, 1}, {2, 2}, {3, 3}};
  ASSERT_TRUE(heap_src.on_heap());
  const Piece* block = heap_src.data();
  Pieces b;
  EXPECT_EQ(AllocationsOf([&] { b = std::move(heap_src); }), 0u);
  EXPECT_EQ(b.data(), block) << "the heap block moves, not the elements";
  EXPECT_EQ(Copy(b), (std::vector<Piece>{{1, 1}, {2, 2}, {3, 3}}));
  EXPECT_TRUE(heap_src.empty());
  EXPECT_FALSE(heap_src.on_heap());
  heap_src.push_back({4, 4});  // usable again
  EXPECT_EQ(Copy(heap_src), (std::vector<Piece>{{4, 4}}));

  // Over a vector that had its own heap block: that block is freed (the
  // sanitizer build would report a leak).
  b = std::move(a);
  EXPECT_EQ(Copy(b), (std::vector<Piece>{{1, 2}}));
  EXPECT_FALSE(b.on_heap());
}

TEST(SmallVectorTest, CopiesAreEqualAndIndependent) {
  Pieces heap{{1, 1}, {2, 2}};
  Pieces copy(heap);
  EXPECT_EQ(copy, heap);
  copy[0].length = 9;
  EXPECT_EQ(heap[0].length, 1u);
  EXPECT_FALSE(copy == heap);
  Pieces assigned{{5, 5}};
  assigned = heap;
  EXPECT_EQ(assigned, heap);
  assigned = Pieces{};
  EXPECT_TRUE(assigned.empty());
  EXPECT_EQ(Pieces{}, Pieces{});
}

TEST(SmallVectorTest, ASpanViewsIt) {
  const Pieces runs{{3, 4}, {5, 6}};
  std::span<const Piece> view = runs;
  ASSERT_EQ(view.size(), 2u);
  EXPECT_EQ(view[1], (Piece{5, 6}));
}

}  // namespace
}  // namespace memkv
