// Checks a realistic exposition with the real `promtool check metrics`, which
// parses it as Prometheus does and lints names (counters end in _total, units
// are base-unit suffixes, HELP present). Any line promtool prints fails the
// test, so lint warnings count as errors.
//
// Without promtool (Debian package `prometheus`, scripts/install-deps.sh) the
// test skips, unless MEMKV_REQUIRE_PROMTOOL=1, when it fails.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "metrics/prometheus.h"

namespace memkv::metrics {
namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CommandResult RunShell(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string TempDir() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

// What a server with two workers and one drive might expose.
std::string RealisticExposition() {
  PrometheusWriter w;
  Histogram get_latency = Histogram::ForLatencyNanos();
  Histogram put_latency = Histogram::ForLatencyNanos();
  Histogram value_size = Histogram::ForSizesBytes();
  for (uint64_t i = 1; i <= 5000; ++i) {
    get_latency.Observe(i * 997);
    put_latency.Observe(i * i * 113);
    value_size.Observe(i * 4099);
  }
  for (const char* op : {"get", "put", "delete"}) {
    for (const char* code : {"Ok", "NotFound", "DeadlineExceeded"}) {
      w.AddCounter("memkv_requests_total", "Requests answered, by operation and status.",
                   {{"op", op}, {"code", code}}, 12345);
    }
  }
  w.AddHistogram("memkv_request_duration_seconds", "Time from request read to response queued.",
                 {{"op", "get"}}, get_latency.Snapshot(), kNanosPerSecond);
  w.AddGauge("memkv_memory_used_bytes", "DRAM holding values.", {}, 3.5 * (1ull << 30));
  w.AddHistogram("memkv_request_duration_seconds", "Time from request read to response queued.",
                 {{"op", "put"}}, put_latency.Snapshot(), kNanosPerSecond);
  w.AddHistogram("memkv_value_size_bytes", "Sizes of values stored.", {}, value_size.Snapshot());
  w.AddCounter("memkv_network_received_bytes_total", "Bytes read from clients.", {{"transport", "tcp"}},
               1ull << 40);
  w.AddCounter("memkv_network_received_bytes_total", "Bytes read from clients.", {{"transport", "rdma"}},
               0);
  for (const char* worker : {"0", "1"}) {
    w.AddGauge("memkv_connections", "Open client connections.", {{"worker", worker}}, 17);
  }
  w.AddGauge("memkv_drive_up", "1 when the drive answers I/O, else 0.\nSee docs/storage.md \\ drives.",
             {{"path", "/dev/disk/by-id/nvme \"odd\"\\name\n"}}, 1);
  w.AddGauge("memkv_evictions_per_second", "Evictions in the last interval, per second.", {}, 0.125);
  w.AddGauge("memkv_start_time_seconds", "Unix time the server started.", {}, 1795341600.25);
  EXPECT_EQ(w.dropped(), 0u);
  return w.Text();
}

bool PromtoolRequired() {
  const char* v = std::getenv("MEMKV_REQUIRE_PROMTOOL");
  return v != nullptr && std::string_view(v) == "1";
}

// Returns from the test: skipped, or failed under MEMKV_REQUIRE_PROMTOOL=1.
#define SKIP_WITHOUT_PROMTOOL()                                                                   \
  do {                                                                                            \
    if (RunShell("command -v promtool").exit_code == 0) break;                                    \
    if (PromtoolRequired()) FAIL() << "promtool not found and MEMKV_REQUIRE_PROMTOOL=1: "          \
                                      "apt-get install prometheus (scripts/install-deps.sh)";     \
    GTEST_SKIP() << "promtool not found (apt-get install prometheus, or scripts/install-deps.sh); " \
                    "set MEMKV_REQUIRE_PROMTOOL=1 to make this a failure";                        \
  } while (0)

TEST(PromtoolTest, RealisticExpositionPassesCheckMetrics) {
  SKIP_WITHOUT_PROMTOOL();
  std::string path = TempDir() + "/memkv_metrics_XXXXXX";
  int fd = ::mkstemp(path.data());
  ASSERT_GE(fd, 0) << "mkstemp " << path;
  std::string text = RealisticExposition();
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);

  CommandResult r = RunShell("promtool check metrics < '" + path + "'");
  ::unlink(path.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.output << "\n--- exposition ---\n" << text;
  EXPECT_EQ(r.output, "") << "promtool printed lint findings\n--- exposition ---\n" << text;
}

// The check has teeth: promtool does reject what the writer must never emit.
TEST(PromtoolTest, PromtoolFlagsALintProblem) {
  SKIP_WITHOUT_PROMTOOL();
  CommandResult r =
      RunShell("printf '# TYPE memkv_requests counter\\nmemkv_requests 1\\n' | promtool check metrics");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("_total"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace memkv::metrics
