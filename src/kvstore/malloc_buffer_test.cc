#include "kvstore/malloc_buffer.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace memkv::kvstore {
namespace {

// The VmFlags line of /proc/self/smaps for the mapping that holds `p`.
std::string VmFlagsAt(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = at >= begin && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

TEST(MallocBufferTest, SmallReceiveBuffersArePlainMallocBlocks) {
  MallocBuffer b = MallocBuffer::AllocateForReceive(64 << 10);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), 64u << 10);
  std::memset(b.data(), 1, b.size());
}

// A large receive buffer starts on a huge page and asks for huge pages over
// its whole 2 MiB units; it is still a block the caller frees with free().
TEST(MallocBufferTest, LargeReceiveBuffersAskForHugePages) {
  constexpr size_t kSize = (8u << 20) + 12345;
  MallocBuffer b = MallocBuffer::AllocateForReceive(kSize);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kHugePageBytes, 0u);
  EXPECT_EQ(b.size(), kSize);
  std::memset(b.data(), 2, b.size());
  if (::access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0) {
    const std::string flags = VmFlagsAt(b.data() + (4u << 20));
    EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  }
  b.Shrink(3u << 20);  // realloc of an aligned block
  EXPECT_EQ(b.size(), 3u << 20);
  EXPECT_EQ(b.data()[(3u << 20) - 1], 2);
  std::free(b.Release());
}

}  // namespace
}  // namespace memkv::kvstore
