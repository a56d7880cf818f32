// HugePageReader against fixture sysfs/procfs trees, the backing decision
// (auto / require-hugetlb / never x enough free / too few / unreadable), and
// MemoryStore::Create's page backing where it does not depend on the host
// having hugepages (tests/hugepages_test.cc maps real hugetlb pages).
#include "storage/hugepages.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/temp_dir.h"
#include "storage/memory_store.h"

namespace memkv::storage {
namespace {

constexpr char kSysDir[] = "/sys/kernel/mm/hugepages/hugepages-2048kB";
constexpr char kThpFile[] = "/sys/kernel/mm/transparent_hugepage/enabled";

// A fresh host-root directory tree; removed on destruction.
class FakeRoot {
 public:
  FakeRoot() : root_(dir_.path()) { EXPECT_FALSE(root_.empty()) << "no temporary directory"; }
  FakeRoot(const FakeRoot&) = delete;
  FakeRoot& operator=(const FakeRoot&) = delete;

  void Write(const std::string& absolute, const std::string& text) const {
    std::filesystem::path p = root_ + absolute;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  // The sysfs counters, as the kernel prints them.
  void Sysfs(uint64_t nr, uint64_t free_pages, uint64_t resv) const {
    Write(std::string(kSysDir) + "/nr_hugepages", std::to_string(nr) + "\n");
    Write(std::string(kSysDir) + "/free_hugepages", std::to_string(free_pages) + "\n");
    Write(std::string(kSysDir) + "/resv_hugepages", std::to_string(resv) + "\n");
  }
  void Thp(const std::string& line) const { Write(kThpFile, line + "\n"); }
  const std::string& path() const { return root_; }

 private:
  testing::TempDir dir_;  // before root_, which it initializes
  std::string root_;
};

HugePageCounts Counts(uint64_t total, uint64_t free_pages, uint64_t reserved = 0) {
  HugePageCounts c;
  c.total = total;
  c.free = free_pages;
  c.reserved = reserved;
  c.source = "fixture";
  return c;
}

// --- HugePageReader -----------------------------------------------------------

TEST(HugePageReader, ReadsTheSysfsCounters) {
  FakeRoot root;
  root.Sysfs(600, 512, 12);
  Result<HugePageCounts> c = HugePageReader(root.path()).Read2MiB();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->total, 600u);
  EXPECT_EQ(c->free, 512u);
  EXPECT_EQ(c->reserved, 12u);
  EXPECT_EQ(c->available(), 500u);  // reserved pages are counted as free but promised
  EXPECT_EQ(c->source, root.path() + kSysDir);
}

TEST(HugePageReader, RootWithTrailingSlashReadsTheSameTree) {
  FakeRoot root;
  root.Sysfs(4, 3, 0);
  Result<HugePageCounts> c = HugePageReader(root.path() + "/").Read2MiB();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->available(), 3u);
}

TEST(HugePageReader, MissingResvFileMeansNothingReserved) {
  FakeRoot root;
  root.Write(std::string(kSysDir) + "/nr_hugepages", "8\n");
  root.Write(std::string(kSysDir) + "/free_hugepages", "8\n");
  Result<HugePageCounts> c = HugePageReader(root.path()).Read2MiB();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->reserved, 0u);
  EXPECT_EQ(c->available(), 8u);
}

TEST(HugePageReader, FallsBackToMeminfoWhenSysfsIsMissing) {
  FakeRoot root;
  root.Write("/proc/meminfo",
             "MemTotal:       24000000 kB\n"
             "HugePages_Total:      64\n"
             "HugePages_Free:       32\n"
             "HugePages_Rsvd:        4\n"
             "HugePages_Surp:        0\n"
             "Hugepagesize:       2048 kB\n");
  Result<HugePageCounts> c = HugePageReader(root.path()).Read2MiB();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->total, 64u);
  EXPECT_EQ(c->free, 32u);
  EXPECT_EQ(c->reserved, 4u);
  EXPECT_EQ(c->source, root.path() + "/proc/meminfo");
}

TEST(HugePageReader, MeminfoOfAnotherDefaultSizeIsNotTakenFor2MiB) {
  FakeRoot root;
  root.Write("/proc/meminfo",
             "HugePages_Total:       4\nHugePages_Free:        4\nHugepagesize:    1048576 kB\n");
  Result<HugePageCounts> c = HugePageReader(root.path()).Read2MiB();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("Hugepagesize 1048576 kB, not 2048 kB"), std::string::npos)
      << c.status().message();
}

TEST(HugePageReader, NothingReadableIsUnavailableNamingThePaths) {
  FakeRoot root;
  Result<HugePageCounts> c = HugePageReader(root.path()).Read2MiB();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.status().message().find(root.path() + kSysDir + "/nr_hugepages"), std::string::npos)
      << c.status().message();
  EXPECT_NE(c.status().message().find(root.path() + "/proc/meminfo"), std::string::npos) << c.status().message();
}

TEST(HugePageReader, GarbageCountsAreUnavailable) {
  FakeRoot root;
  root.Write(std::string(kSysDir) + "/nr_hugepages", "lots\n");
  root.Write(std::string(kSysDir) + "/free_hugepages", "-1\n");
  Result<HugePageCounts> c = HugePageReader(root.path()).Read2MiB();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("not counts"), std::string::npos) << c.status().message();
}

TEST(HugePageReader, ReadsTheBracketedThpChoice) {
  FakeRoot root;
  HugePageReader reader(root.path());
  EXPECT_EQ(reader.ReadThp(), ThpMode::kUnknown);  // no file: a kernel without THP
  root.Thp("[always] madvise never");
  EXPECT_EQ(reader.ReadThp(), ThpMode::kAlways);
  root.Thp("always [madvise] never");
  EXPECT_EQ(reader.ReadThp(), ThpMode::kMadvise);
  root.Thp("always madvise [never]");
  EXPECT_EQ(reader.ReadThp(), ThpMode::kNever);
  root.Thp("always madvise never");
  EXPECT_EQ(reader.ReadThp(), ThpMode::kUnknown);
}

// --- The decision -------------------------------------------------------------

TEST(HugePagesFor, RoundsUpToWholePages) {
  EXPECT_EQ(HugePagesFor(0), 0u);
  EXPECT_EQ(HugePagesFor(1), 1u);
  EXPECT_EQ(HugePagesFor(2 * kMiB), 1u);
  EXPECT_EQ(HugePagesFor(3 * kMiB), 2u);
  EXPECT_EQ(HugePagesFor(8 * kGiB), 4096u);
}

TEST(PoolPolicyFor, PinnedShapesRequireHugetlb) {
  EXPECT_EQ(PoolPolicyFor(/*rdma_registers_pool=*/false, /*direct_io=*/false), HugePagePolicy::kAuto);
  EXPECT_EQ(PoolPolicyFor(true, false), HugePagePolicy::kRequire);
  EXPECT_EQ(PoolPolicyFor(false, true), HugePagePolicy::kRequire);
  EXPECT_EQ(PoolPolicyFor(true, true), HugePagePolicy::kRequire);
}

struct PlanCase {
  HugePagePolicy policy;
  int counts;  // 0: enough free, 1: too few, 2: unreadable
  bool ok;
  bool try_hugetlb;
};

TEST(PlanPoolBacking, PolicyTimesFreePages) {
  const uint64_t pool = 64 * kMiB;  // 32 pages
  const Result<HugePageCounts> kCounts[] = {Counts(40, 40, 8), Counts(40, 40, 9),
                                            Unavailable("no hugetlb in this kernel")};
  const PlanCase cases[] = {
      {HugePagePolicy::kAuto, 0, true, true},     {HugePagePolicy::kAuto, 1, true, false},
      {HugePagePolicy::kAuto, 2, true, false},    {HugePagePolicy::kRequire, 0, true, true},
      {HugePagePolicy::kRequire, 1, false, false}, {HugePagePolicy::kRequire, 2, false, false},
      {HugePagePolicy::kNever, 0, true, false},   {HugePagePolicy::kNever, 1, true, false},
      {HugePagePolicy::kNever, 2, true, false},
  };
  for (const PlanCase& c : cases) {
    SCOPED_TRACE(std::string(HugePagePolicyName(c.policy)) + " counts " + std::to_string(c.counts));
    Result<BackingPlan> plan = PlanPoolBacking(c.policy, pool, kCounts[c.counts]);
    ASSERT_EQ(plan.ok(), c.ok) << plan.status().ToString();
    if (!plan.ok()) {
      EXPECT_EQ(plan.status().code(), StatusCode::kFailedPrecondition);
      continue;
    }
    EXPECT_EQ(plan->try_hugetlb, c.try_hugetlb);
    EXPECT_EQ(plan->why_not_hugetlb.empty(), c.try_hugetlb) << plan->why_not_hugetlb;
  }
}

TEST(PlanPoolBacking, AutoSaysWhyItSkipsHugetlb) {
  Result<BackingPlan> plan = PlanPoolBacking(HugePagePolicy::kAuto, 64 * kMiB, Counts(10, 10));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->why_not_hugetlb, "10 free 2 MiB hugepages, 32 needed");
}

TEST(PlanPoolBacking, RequireRefusalNamesBothFiguresAndTheSysctl) {
  Result<BackingPlan> plan = PlanPoolBacking(HugePagePolicy::kRequire, 8 * kGiB, Counts(512, 512));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "memory.max_size 8 GiB needs 4096 free 2 MiB hugepages but only 512 are free (1 GiB): "
            "sysctl -w vm.nr_hugepages=4096 (or lower memory.max_size)");
}

TEST(PlanPoolBacking, RequireRefusalKeepsPagesOthersUse) {
  // 1000 configured, 488 in use by another program, 12 of the free ones
  // reserved: 500 usable, 3596 short. Setting nr_hugepages to 4096 would
  // not be enough; 1000 + 3596 is.
  Result<BackingPlan> plan = PlanPoolBacking(HugePagePolicy::kRequire, 8 * kGiB, Counts(1000, 512, 12));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "memory.max_size 8 GiB needs 4096 free 2 MiB hugepages but only 500 are free (1000 MiB; 12 more are "
            "reserved by other mappings): sysctl -w vm.nr_hugepages=4596 (or lower memory.max_size)");
}

TEST(PlanPoolBacking, RequireWithUnreadableCountsRefusesNamingWhy) {
  Result<BackingPlan> plan = PlanPoolBacking(HugePagePolicy::kRequire, 64 * kMiB, Unavailable("no sysfs here"));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(plan.status().message().find("needs 32 free 2 MiB hugepages but their count cannot be read (no sysfs "
                                         "here): sysctl -w vm.nr_hugepages=32"),
            std::string::npos)
      << plan.status().message();
}

TEST(PlanPoolBacking, ExactlyEnoughIsEnough) {
  EXPECT_TRUE(PlanPoolBacking(HugePagePolicy::kRequire, 3 * kMiB, Counts(2, 2))->try_hugetlb);
  EXPECT_FALSE(PlanPoolBacking(HugePagePolicy::kRequire, 3 * kMiB, Counts(2, 1)).ok());
}

// --- MemoryStore::Create with a fixture host --------------------------------
// Fixtures say how many hugepages are free; the mapping is the real kernel's.

MemoryStoreOptions FixtureOptions(const FakeRoot& root, HugePagePolicy policy, uint64_t bytes = 8 * kMiB) {
  MemoryStoreOptions o;
  o.max_size_bytes = bytes;
  o.block_size_bytes = 2 * kMiB;
  o.hugepages = policy;
  o.host_root = root.path();
  return o;
}

// Whether this host could back `bytes` with hugetlb right now; tests that
// need the kernel to refuse skip when it would not.
// Surplus pages (vm.nr_overcommit_hugepages) count as could.
bool HostHasFreeHugePages(uint64_t bytes) {
  Result<HugePageCounts> c = HugePageReader("/").Read2MiB();
  if (c.ok() && c->available() >= HugePagesFor(bytes)) return true;
  std::ifstream overcommit("/proc/sys/vm/nr_overcommit_hugepages");
  uint64_t surplus = 0;
  return (overcommit >> surplus) && surplus > 0;
}

TEST(MemoryStoreBacking, RequireWithTooFewFreePagesRefusesBeforeMapping) {
  FakeRoot root;
  root.Sysfs(2, 2, 0);
  Result<std::unique_ptr<MemoryStore>> store = MemoryStore::Create(FixtureOptions(root, HugePagePolicy::kRequire));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(),
            "memory.max_size 8 MiB needs 4 free 2 MiB hugepages but only 2 are free (4 MiB): "
            "sysctl -w vm.nr_hugepages=4 (or lower memory.max_size)");
}

TEST(MemoryStoreBacking, AutoWithTooFewFreePagesUsesTransparentHugepages) {
  FakeRoot root;
  root.Sysfs(0, 0, 0);
  root.Thp("always [madvise] never");
  Result<std::unique_ptr<MemoryStore>> store = MemoryStore::Create(FixtureOptions(root, HugePagePolicy::kAuto));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const PoolBacking& b = (*store)->backing();
  EXPECT_EQ(b.kind, PageKind::kTransparent);
  EXPECT_EQ((*store)->Stats().page_kind, PageKind::kTransparent);
  EXPECT_EQ(b.mapping_bytes, 8 * kMiB);
  EXPECT_EQ(b.detail,
            "transparent hugepages (THP enabled: madvise; hugetlb not used: 0 free 2 MiB hugepages, 4 needed)");
  ASSERT_TRUE((*store)->Put("k", "v", 1).ok());
}

TEST(MemoryStoreBacking, AutoWithThpOffSaysFourKiBPages) {
  FakeRoot root;
  root.Sysfs(0, 0, 0);
  root.Thp("always madvise [never]");
  Result<std::unique_ptr<MemoryStore>> store = MemoryStore::Create(FixtureOptions(root, HugePagePolicy::kAuto));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->backing().kind, PageKind::kSmall);
  EXPECT_EQ(PageKindName((*store)->Stats().page_kind), "4 KiB pages");
  EXPECT_EQ((*store)->backing().detail, "4 KiB pages (THP never; hugetlb not used: 0 free 2 MiB hugepages, 4 needed)");
}

TEST(MemoryStoreBacking, NeverIgnoresFreeHugepages) {
  FakeRoot root;
  root.Sysfs(100, 100, 0);
  root.Thp("[always] madvise never");
  Result<std::unique_ptr<MemoryStore>> store = MemoryStore::Create(FixtureOptions(root, HugePagePolicy::kNever));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->backing().kind, PageKind::kSmall);
  EXPECT_EQ((*store)->backing().detail, "4 KiB pages (hugepages off: policy never)");
}

TEST(MemoryStoreBacking, AutoFallsBackWhenTheKernelRefusesHugetlb) {
  // The fixture claims plenty free; the real kernel has too few, so the
  // hugetlb mmap fails and auto carries on with THP.
  const uint64_t bytes = 512 * kMiB;
  if (HostHasFreeHugePages(bytes)) GTEST_SKIP() << "this host has 256 free 2 MiB hugepages; the kernel would not refuse";
  FakeRoot root;
  root.Sysfs(1000, 1000, 0);
  root.Thp("always [madvise] never");
  Result<std::unique_ptr<MemoryStore>> store =
      MemoryStore::Create(FixtureOptions(root, HugePagePolicy::kAuto, bytes));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->backing().kind, PageKind::kTransparent);
  EXPECT_NE((*store)->backing().detail.find("hugetlb not used: mmap(512 MiB, MAP_HUGETLB|MAP_HUGE_2MB) for 256 2 MiB "
                                            "hugepages: "),
            std::string::npos)
      << (*store)->backing().detail;
}

TEST(MemoryStoreBacking, RequireFailsWhenTheKernelRefusesHugetlb) {
  const uint64_t bytes = 512 * kMiB;
  if (HostHasFreeHugePages(bytes)) GTEST_SKIP() << "this host has 256 free 2 MiB hugepages; the kernel would not refuse";
  FakeRoot root;
  root.Sysfs(1000, 1000, 0);
  Result<std::unique_ptr<MemoryStore>> store =
      MemoryStore::Create(FixtureOptions(root, HugePagePolicy::kRequire, bytes));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("memory.max_size 512 MiB: mmap(512 MiB, MAP_HUGETLB|MAP_HUGE_2MB)"),
            std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("although 1000 were free per " + root.path()), std::string::npos)
      << store.status().message();
}

}  // namespace
}  // namespace memkv::storage
