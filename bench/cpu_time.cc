#include "bench/cpu_time.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "base/parse_number.h"

namespace memkv::bench {
namespace {

// Fields after the command's ')': state is field 3, so utime (field 14) and
// stime (field 15) are the 12th and 13th.
constexpr int kUtimeAfterComm = 11;  // 0-based among the fields after ')'

double Seconds(const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; }

}  // namespace

Result<double> ParseProcStatCpuSeconds(std::string_view stat, long ticks_per_second) {
  if (ticks_per_second <= 0) return InvalidArgument("/proc stat: clock ticks per second must be positive");
  const size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return InvalidArgument("/proc stat: no ')' after the command name");
  std::string_view rest = stat.substr(paren + 1);
  uint64_t ticks[2] = {0, 0};
  int field = 0;
  while (!rest.empty() && field <= kUtimeAfterComm + 1) {
    const size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const size_t end = std::min(rest.find_first_of(" \n"), rest.size());
    const std::string_view token = rest.substr(0, end);
    if (field == kUtimeAfterComm || field == kUtimeAfterComm + 1) {
      std::optional<uint64_t> count = ParseDecimal(token);
      if (!count) {
        return InvalidArgument("/proc stat: field " + std::to_string(field + 3) + " is '" + std::string(token) +
                               "', not a tick count");
      }
      ticks[field - kUtimeAfterComm] = *count;
    }
    rest.remove_prefix(end);
    ++field;
  }
  if (field <= kUtimeAfterComm + 1) {
    return InvalidArgument("/proc stat: " + std::to_string(field + 2) + " fields, utime and stime are 14 and 15");
  }
  return double(ticks[0] + ticks[1]) / double(ticks_per_second);
}

Result<double> ProcessCpuSeconds(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  std::ifstream in(path);
  if (!in) return NotFound("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  Result<double> seconds = ParseProcStatCpuSeconds(text.str(), ::sysconf(_SC_CLK_TCK));
  if (!seconds.ok()) return InvalidArgument(path + ": " + seconds.status().message());
  return seconds;
}

double SelfCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return Seconds(u.ru_utime) + Seconds(u.ru_stime);
}

}  // namespace memkv::bench
