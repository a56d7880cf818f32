#include "storage/hugepages.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/parse_number.h"

namespace memkv::storage {
namespace {

constexpr std::string_view kHugetlbDir = "/sys/kernel/mm/hugepages/hugepages-2048kB";
constexpr std::string_view kMeminfo = "/proc/meminfo";
constexpr std::string_view kThpEnabled = "/sys/kernel/mm/transparent_hugepage/enabled";

// The whole file, or an error naming it and errno.
Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Unavailable(path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A decimal count, surrounding whitespace allowed ("512\n").
std::optional<uint64_t> ParseCount(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return ParseDecimal(text);
}

// "HugePages_Free:      512" -> 512, from a /proc/meminfo text.
std::optional<uint64_t> MeminfoField(std::string_view meminfo, std::string_view name) {
  size_t line = 0;
  while (line < meminfo.size()) {
    size_t eol = meminfo.find('\n', line);
    std::string_view l = meminfo.substr(line, eol == std::string_view::npos ? std::string_view::npos : eol - line);
    if (l.size() > name.size() && l.substr(0, name.size()) == name && l[name.size()] == ':') {
      std::string_view value = l.substr(name.size() + 1);
      if (value.ends_with(" kB")) value.remove_suffix(3);
      return ParseCount(value);
    }
    if (eol == std::string_view::npos) break;
    line = eol + 1;
  }
  return std::nullopt;
}

}  // namespace

uint64_t HugePagesFor(uint64_t bytes) { return bytes / kHugePageBytes + (bytes % kHugePageBytes != 0 ? 1 : 0); }

std::string_view ThpModeName(ThpMode mode) {
  switch (mode) {
    case ThpMode::kAlways: return "always";
    case ThpMode::kMadvise: return "madvise";
    case ThpMode::kNever: return "never";
    case ThpMode::kUnknown: break;
  }
  return "unknown";
}

std::string_view HugePagePolicyName(HugePagePolicy policy) {
  switch (policy) {
    case HugePagePolicy::kAuto: return "auto";
    case HugePagePolicy::kRequire: return "require-hugetlb";
    case HugePagePolicy::kNever: return "never";
  }
  return "?";
}

std::string_view PageKindName(PageKind kind) {
  switch (kind) {
    case PageKind::kHugetlb2MiB: return "hugetlb 2MiB";
    case PageKind::kTransparent: return "transparent hugepages";
    case PageKind::kSmall: return "4 KiB pages";
  }
  return "?";
}

HugePagePolicy PoolPolicyFor(bool rdma_registers_pool, bool direct_io) {
  return rdma_registers_pool || direct_io ? HugePagePolicy::kRequire : HugePagePolicy::kAuto;
}

HugePageReader::HugePageReader(std::string root) : root_(std::move(root)) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string HugePageReader::Path(std::string_view absolute) const { return root_ + std::string(absolute); }

Result<HugePageCounts> HugePageReader::Read2MiB() const {
  const std::string dir = Path(kHugetlbDir);
  Result<std::string> nr = ReadText(dir + "/nr_hugepages");
  Result<std::string> free_pages = ReadText(dir + "/free_hugepages");
  if (nr.ok() && free_pages.ok()) {
    std::optional<uint64_t> total = ParseCount(*nr), free_count = ParseCount(*free_pages);
    if (!total || !free_count) {
      return Unavailable(dir + ": nr_hugepages '" + *nr + "' / free_hugepages '" + *free_pages +
                         "' are not counts");
    }
    HugePageCounts counts;
    counts.total = *total;
    counts.free = *free_count;
    // resv_hugepages is absent on some old kernels; nothing reserved then.
    Result<std::string> resv = ReadText(dir + "/resv_hugepages");
    if (resv.ok()) counts.reserved = ParseCount(*resv).value_or(0);
    counts.source = dir;
    return counts;
  }
  // /proc/meminfo describes only the default hugepage size.
  const std::string sysfs_error = (!nr.ok() ? nr : free_pages).status().message();
  const std::string meminfo_path = Path(kMeminfo);
  Result<std::string> meminfo = ReadText(meminfo_path);
  if (!meminfo.ok()) {
    return Unavailable("cannot read the 2 MiB hugepage counts: " + sysfs_error +
                       "; " + meminfo.status().message());
  }
  std::optional<uint64_t> size_kb = MeminfoField(*meminfo, "Hugepagesize");
  std::optional<uint64_t> total = MeminfoField(*meminfo, "HugePages_Total");
  std::optional<uint64_t> free_count = MeminfoField(*meminfo, "HugePages_Free");
  if (size_kb != kHugePageBytes / kKiB || !total || !free_count) {
    return Unavailable("cannot read the 2 MiB hugepage counts: " + sysfs_error +
                       "; " + meminfo_path + " has " +
                       (size_kb ? "Hugepagesize " + std::to_string(*size_kb) + " kB, not 2048 kB"
                                : std::string("no Hugepagesize/HugePages_* lines")));
  }
  HugePageCounts counts;
  counts.total = *total;
  counts.free = *free_count;
  counts.reserved = MeminfoField(*meminfo, "HugePages_Rsvd").value_or(0);
  counts.source = meminfo_path;
  return counts;
}

ThpMode HugePageReader::ReadThp() const {
  Result<std::string> text = ReadText(Path(kThpEnabled));
  if (!text.ok()) return ThpMode::kUnknown;
  size_t open = text->find('['), close = text->find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return ThpMode::kUnknown;
  std::string_view choice = std::string_view(*text).substr(open + 1, close - open - 1);
  if (choice == "always") return ThpMode::kAlways;
  if (choice == "madvise") return ThpMode::kMadvise;
  if (choice == "never") return ThpMode::kNever;
  return ThpMode::kUnknown;
}

Status NotEnoughHugePages(uint64_t pool_bytes, const HugePageCounts& counts) {
  const uint64_t needed = HugePagesFor(pool_bytes);
  const uint64_t available = counts.available();
  std::string message = "memory.max_size " + FormatSize(pool_bytes) + " needs " + std::to_string(needed) +
                        " free 2 MiB hugepages but only " + std::to_string(available) + " are free (" +
                        FormatSize(available * kHugePageBytes);
  if (counts.reserved > 0) {
    message += "; " + std::to_string(counts.reserved) + " more are reserved by other mappings";
  }
  // Pages in use elsewhere stay in use: grow the pool by the shortfall.
  const uint64_t target = counts.total + (needed > available ? needed - available : 0);
  message += "): sysctl -w vm.nr_hugepages=" + std::to_string(target) + " (or lower memory.max_size)";
  return FailedPrecondition(std::move(message));
}

Result<BackingPlan> PlanPoolBacking(HugePagePolicy policy, uint64_t pool_bytes,
                                    const Result<HugePageCounts>& counts) {
  BackingPlan plan;
  const uint64_t needed = HugePagesFor(pool_bytes);
  switch (policy) {
    case HugePagePolicy::kNever:
      plan.why_not_hugetlb = "hugepages off: policy never";
      return plan;
    case HugePagePolicy::kRequire:
      if (!counts.ok()) {
        return FailedPrecondition("memory.max_size " + FormatSize(pool_bytes) + " needs " + std::to_string(needed) +
                                  " free 2 MiB hugepages but their count cannot be read (" +
                                  counts.status().message() + "): sysctl -w vm.nr_hugepages=" +
                                  std::to_string(needed) + " (or lower memory.max_size)");
      }
      if (counts->available() < needed) return NotEnoughHugePages(pool_bytes, *counts);
      plan.try_hugetlb = true;
      return plan;
    case HugePagePolicy::kAuto:
      if (!counts.ok()) {
        plan.why_not_hugetlb = "2 MiB hugepage count unknown (" + counts.status().message() + ")";
      } else if (counts->available() < needed) {
        plan.why_not_hugetlb = std::to_string(counts->available()) + " free 2 MiB hugepages, " +
                               std::to_string(needed) + " needed";
      } else {
        plan.try_hugetlb = true;
      }
      return plan;
  }
  return plan;
}

}  // namespace memkv::storage
