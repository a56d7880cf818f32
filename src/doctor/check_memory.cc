// mem.memlock, mem.hugepages, mem.max_mr: whether the server can register its
// DRAM pool (memory.max_size) with the device at start.
#include "doctor/checks_internal.h"
#include "doctor/sysfs.h"

namespace memkv::doctor::internal {
namespace {

constexpr uint64_t kHugePage = 2ull << 20;

// Free 2 MiB hugetlb pages a new mapping can still reserve: free minus the
// ones promised to other mappings (HugePages_Rsvd).
std::optional<uint64_t> FreeHugePages(HostProbe& probe) {
  const std::string dir = "/sys/kernel/mm/hugepages/hugepages-2048kB/";
  Result<std::string> free_text = probe.ReadFile(dir + "free_hugepages");
  if (free_text.ok()) {
    std::optional<uint64_t> free_pages = ParseUint(*free_text);
    Result<std::string> resv_text = probe.ReadFile(dir + "resv_hugepages");
    std::optional<uint64_t> resv = resv_text.ok() ? ParseUint(*resv_text) : std::optional<uint64_t>(0);
    if (!free_pages || !resv) return std::nullopt;
    return *free_pages > *resv ? *free_pages - *resv : 0;
  }
  Result<std::string> meminfo = probe.ReadFile("/proc/meminfo");
  if (!meminfo.ok() || meminfo->find("Hugepagesize:       2048 kB") == std::string::npos) return std::nullopt;
  auto field = [&](const std::string& name) -> std::optional<uint64_t> {
    size_t at = meminfo->find(name);
    if (at == std::string::npos) return std::nullopt;
    std::string rest = meminfo->substr(at + name.size());
    return ParseUint(rest.substr(0, rest.find('\n')));
  };
  std::optional<uint64_t> free_pages = field("HugePages_Free:"), resv = field("HugePages_Rsvd:");
  if (!free_pages) return std::nullopt;
  uint64_t r = resv.value_or(0);
  return *free_pages > r ? *free_pages - r : 0;
}

void CheckMemlock(Ctx& ctx) {
  const uint64_t pool = ctx.state.pool_bytes;
  Finding f = MakeFinding("mem.memlock", Layer::kMemkv, Severity::kOk, "locked-memory limit (ulimit -l)");
  f.expected = "unlimited, or >= " + Bytes(pool) + " (memory.max_size)";
  Result<MemlockLimit> m = ctx.probe.Memlock();
  if (!m.ok()) {
    f.severity = Severity::kInfo;
    f.observed = "unknown (" + m.status().message() + ")";
    ctx.report.Add(std::move(f));
    return;
  }
  f.observed = m->unlimited ? "unlimited" : Bytes(m->soft_bytes);
  if (m->cap_ipc_lock) f.observed += " (this process has CAP_IPC_LOCK, which lifts it)";
  if (!m->unlimited && m->soft_bytes < pool && !m->cap_ipc_lock) {
    f.severity = Severity::kError;
    f.message = "Registering the " + Bytes(pool) + " pool locks it in memory: with this limit memkv start fails at "
                "ibv_reg_mr. Raise it for the user the server runs as.";
    f.fix = {"ulimit -l unlimited", "LimitMEMLOCK=infinity  # in the memkv systemd unit"};
  }
  ctx.report.Add(std::move(f));
}

void CheckHugePages(Ctx& ctx) {
  // With an RDMA device the pool is registered (pinned), so `memkv start`
  // maps it on 2 MiB hugetlb pages and refuses when too few are free
  // (docs/configuration.md, "Memory backing"); transparent hugepages do not
  // count.
  const uint64_t pool = ctx.state.pool_bytes;
  const uint64_t needed = (pool + kHugePage - 1) / kHugePage;
  Finding f = MakeFinding("mem.hugepages", Layer::kMemkv, Severity::kOk, "2 MiB hugepages for the pinned pool");
  f.expected = ">= " + std::to_string(needed) + " free 2 MiB hugepages (memory.max_size " + Bytes(pool) + ")";
  std::optional<uint64_t> free_pages = FreeHugePages(ctx.probe);
  f.observed = free_pages ? std::to_string(*free_pages) + " free 2 MiB hugepages (" + Bytes(*free_pages * kHugePage) + ")"
                          : "free hugepages unknown";
  if (!free_pages) {
    f.severity = Severity::kInfo;
    f.message = "doctor cannot see the hugepage counts (/sys/kernel/mm/hugepages, /proc/meminfo).";
  } else if (*free_pages < needed) {
    f.severity = Severity::kError;
    f.message = "memkv start refuses: the pool is registered with the RDMA device, so it must be 2 MiB hugepages, "
                "and memory.max_size " + Bytes(pool) + " needs " + std::to_string(needed) + " free but only " +
                std::to_string(*free_pages) + " are free.";
    f.fix = {"sysctl -w vm.nr_hugepages=" + std::to_string(needed) + "  # plus what other programs hold",
             "echo 'vm.nr_hugepages = " + std::to_string(needed) + "' > /etc/sysctl.d/90-memkv.conf",
             "or lower memory.max_size"};
  }
  ctx.report.Add(std::move(f));
}

void CheckMaxMr(Ctx& ctx) {
  const verbs::PortInfo& port = ctx.state.port;
  const uint64_t pool = ctx.state.pool_bytes;
  Finding f = MakeFinding("mem.max_mr", Layer::kMemkv, Severity::kOk,
                          "memory.max_size against the largest region " + port.device + " registers");
  f.observed = "pool " + Bytes(pool) + ", max_mr_size " + Bytes(port.max_mr_size);
  f.expected = "pool <= max_mr_size";
  if (port.max_mr_size == 0) {
    f.severity = Severity::kInfo;
    f.observed = "pool " + Bytes(pool) + ", max_mr_size unknown";
  } else if (pool > port.max_mr_size) {
    f.severity = Severity::kError;
    f.message = "memkv start refuses: the pool is registered as one region.";
    f.fix = {"memory.max_size: " + Bytes(port.max_mr_size / kHugePage * kHugePage)};
  }
  ctx.report.Add(std::move(f));
}

}  // namespace

void CheckMemory(Ctx& ctx) {
  CheckMemlock(ctx);
  CheckHugePages(ctx);
  CheckMaxMr(ctx);
}

}  // namespace memkv::doctor::internal
