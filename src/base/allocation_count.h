// Counts the allocations (operator new) a piece of code makes on the calling
// thread, for tests that hold a path to "allocates nothing more than ...".
// Linking allocation_count.cc replaces the global operator new and delete of
// the whole test binary with malloc/free plus a thread-local counter: a test
// binary lists it in its SOURCES (it is in no library).
#ifndef MEMKV_BASE_ALLOCATION_COUNT_H_
#define MEMKV_BASE_ALLOCATION_COUNT_H_

#include <cstdint>
#include <functional>

namespace memkv {

// How many times `f` called operator new on this thread.
uint64_t AllocationsOf(const std::function<void()>& f);

}  // namespace memkv

#endif  // MEMKV_BASE_ALLOCATION_COUNT_H_
