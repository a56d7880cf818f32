// InputBuffer: room for two small frames, so one recv takes a small put
// whole; no growth for large frames or for a peer that has not authenticated.
#include "server/session_buffer.h"

#include <gtest/gtest.h>

#include <cstring>

namespace memkv::server {
namespace {

TEST(InputBufferTest, StartsSmallAndMakesRoomForTwoSmallFrames) {
  InputBuffer in;
  size_t room = 0;
  ASSERT_NE(in.Space(/*grow=*/true, &room), nullptr);
  EXPECT_EQ(room, InputBuffer::kInitialBytes);
  in.FitFrames(86 + 4096);  // a header and meta of 86 bytes, a 4 KiB value
  ASSERT_NE(in.Space(/*grow=*/true, &room), nullptr);
  EXPECT_GE(room, 2 * (86 + 4096));
  EXPECT_LE(in.capacity(), InputBuffer::kMaxMallocBytes);
}

TEST(InputBufferTest, KeepsUnparsedBytesWhenItGrows) {
  InputBuffer in;
  size_t room = 0;
  uint8_t* space = in.Space(true, &room);
  ASSERT_NE(space, nullptr);
  std::memcpy(space, "headermeta", 10);
  in.Commit(10);
  in.Consume(6);
  in.FitFrames(InputBuffer::kSmallFrameBytes);
  ASSERT_NE(in.Space(true, &room), nullptr);
  EXPECT_EQ(in.capacity(), 2 * InputBuffer::kSmallFrameBytes);
  ASSERT_EQ(in.size(), 4u);
  EXPECT_EQ(std::memcmp(in.data(), "meta", 4), 0);
}

TEST(InputBufferTest, LargeFramesAndUnauthenticatedPeersDoNotGrowIt) {
  InputBuffer in;
  size_t room = 0;
  in.FitFrames(InputBuffer::kSmallFrameBytes + 1);  // its payload is read straight into the pool
  ASSERT_NE(in.Space(true, &room), nullptr);
  EXPECT_EQ(in.capacity(), InputBuffer::kInitialBytes);
  InputBuffer peer;
  peer.FitFrames(4096);
  ASSERT_NE(peer.Space(/*grow=*/false, &room), nullptr);
  EXPECT_EQ(peer.capacity(), InputBuffer::kInitialBytes);
}

TEST(InputBufferTest, AReleasedBufferComesBackAtTheSizeItWas) {
  InputBuffer in;
  size_t room = 0;
  in.FitFrames(4096);
  ASSERT_NE(in.Space(true, &room), nullptr);
  const size_t fitted = in.capacity();
  EXPECT_TRUE(in.Release());
  EXPECT_EQ(in.capacity(), 0u);
  ASSERT_NE(in.Space(true, &room), nullptr);
  EXPECT_EQ(in.capacity(), fitted);
}

}  // namespace
}  // namespace memkv::server
