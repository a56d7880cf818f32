// Hugepages for the DRAM pool: what the host offers and what the pool asks for.
//
// The pool (MemoryStore) is one mapping that the RDMA transport registers
// whole. Backed by 2 MiB hugetlb pages the NIC translates 512x fewer pages and
// the memory is reserved up front (the mmap fails rather than a later fault);
// transparent hugepages (THP) are the best effort second choice, 4 KiB pages
// the last. docs/configuration.md ("Memory backing") is the user's view.
//
// HugePageReader reads the 2 MiB hugetlb counters and the THP setting under a
// root directory: "/" in production, a fixture tree in tests. Plain file
// reads, no state; any thread.
//
// PlanPoolBacking is the pure decision MemoryStore::Create makes before it
// maps the pool. Its FailedPrecondition (require-hugetlb without enough free
// pages) is the message `memkv start` refuses with, so it names both figures
// and the sysctl that fixes it.
#ifndef MEMKV_STORAGE_HUGEPAGES_H_
#define MEMKV_STORAGE_HUGEPAGES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/units.h"
#include "memkv/status.h"

namespace memkv::storage {

inline constexpr uint64_t kHugePageBytes = 2 * kMiB;

// Whole 2 MiB pages needed to back `bytes` (rounded up).
uint64_t HugePagesFor(uint64_t bytes);

// The host's 2 MiB hugetlb pool (vm.nr_hugepages).
struct HugePageCounts {
  uint64_t total = 0;     // nr_hugepages / HugePages_Total
  uint64_t free = 0;      // free_hugepages / HugePages_Free; counts reserved pages too
  uint64_t reserved = 0;  // resv_hugepages / HugePages_Rsvd: promised to mappings, not yet faulted
  std::string source;     // the directory or file the figures came from, for messages

  // What a new mapping can still reserve: free pages not promised to others.
  uint64_t available() const { return free > reserved ? free - reserved : 0; }
};

// /sys/kernel/mm/transparent_hugepage/enabled: the bracketed choice.
enum class ThpMode { kAlways, kMadvise, kNever, kUnknown };
std::string_view ThpModeName(ThpMode mode);  // "always", "madvise", "never", "unknown"

class HugePageReader {
 public:
  // `root` is prefixed to every path ("/" or "" for the host itself).
  explicit HugePageReader(std::string root = "/");

  // From <root>/sys/kernel/mm/hugepages/hugepages-2048kB/{nr,free,resv}_hugepages,
  // else <root>/proc/meminfo when its default Hugepagesize is 2048 kB.
  // Unavailable naming what was tried when neither can be read.
  Result<HugePageCounts> Read2MiB() const;
  // kUnknown when the file is missing or unparsable (a kernel without THP).
  ThpMode ReadThp() const;

 private:
  std::string Path(std::string_view absolute) const;
  std::string root_;
};

// MemoryStoreOptions::hugepages.
enum class HugePagePolicy {
  kAuto,     // hugetlb when enough 2 MiB pages are free, else THP, else 4 KiB pages
  kRequire,  // hugetlb or fail: the pinned shapes (RDMA registration, direct I/O)
  kNever,    // 4 KiB pages only, THP refused too (MADV_NOHUGEPAGE)
};
std::string_view HugePagePolicyName(HugePagePolicy policy);  // "auto", "require-hugetlb", "never"

// The policy `memkv start` uses: the pool must be hugetlb-backed when it is
// pinned, i.e. registered with an RDMA device or used for O_DIRECT drive I/O.
HugePagePolicy PoolPolicyFor(bool rdma_registers_pool, bool direct_io);

// What backs a mapped pool.
enum class PageKind { kHugetlb2MiB, kTransparent, kSmall };
std::string_view PageKindName(PageKind kind);  // "hugetlb 2MiB", "transparent hugepages", "4 KiB pages"

struct BackingPlan {
  bool try_hugetlb = false;
  // Why hugetlb is not tried (for the log line); empty when it is.
  std::string why_not_hugetlb;
};

// kAuto: try hugetlb iff the counts were read and cover the pool. kNever:
// never. kRequire: try hugetlb, or FailedPrecondition (NotEnoughHugePages)
// when the counts do not cover the pool or cannot be read.
Result<BackingPlan> PlanPoolBacking(HugePagePolicy policy, uint64_t pool_bytes,
                                    const Result<HugePageCounts>& counts);

// FailedPrecondition: "memory.max_size 8 GiB needs 4096 free 2 MiB hugepages
// but only 512 are free (1 GiB): sysctl -w vm.nr_hugepages=4096 (or lower
// memory.max_size)". The sysctl figure keeps the pages others use.
Status NotEnoughHugePages(uint64_t pool_bytes, const HugePageCounts& counts);

}  // namespace memkv::storage

#endif  // MEMKV_STORAGE_HUGEPAGES_H_
