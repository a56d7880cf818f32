#include "metrics/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace memkv::metrics {
namespace {

TEST(PrometheusWriterTest, SmallRegistryExactText) {
  const uint64_t bounds[] = {1000, 1'000'000};  // 1 µs, 1 ms
  auto latency = Histogram::Create(bounds);
  ASSERT_TRUE(latency.ok());
  latency->Observe(1000);           // on the 1 µs bound
  latency->Observe(5000);           // 5 µs
  latency->Observe(2'000'000'000);  // 2 s: +Inf only

  PrometheusWriter w;
  w.AddCounter("memkv_requests_total", "Requests handled, by operation.", {{"op", "get"}}, 3);
  w.AddGauge("memkv_memory_used_bytes", "DRAM in use.", {}, 1048576);
  // Added later, written with the first sample of its family.
  w.AddCounter("memkv_requests_total", "Requests handled, by operation.", {{"op", "put"}}, 0);
  w.AddHistogram("memkv_request_duration_seconds", "Time from request read to response queued.",
                 {{"op", "get"}}, latency->Snapshot(), kNanosPerSecond);
  w.AddGauge("memkv_connections", "Open client connections.", {{"worker", "0"}, {"transport", "tcp"}}, 2);

  EXPECT_EQ(w.Text(),
            "# HELP memkv_requests_total Requests handled, by operation.\n"
            "# TYPE memkv_requests_total counter\n"
            "memkv_requests_total{op=\"get\"} 3\n"
            "memkv_requests_total{op=\"put\"} 0\n"
            "# HELP memkv_memory_used_bytes DRAM in use.\n"
            "# TYPE memkv_memory_used_bytes gauge\n"
            "memkv_memory_used_bytes 1048576\n"
            "# HELP memkv_request_duration_seconds Time from request read to response queued.\n"
            "# TYPE memkv_request_duration_seconds histogram\n"
            "memkv_request_duration_seconds_bucket{op=\"get\",le=\"1e-06\"} 1\n"
            "memkv_request_duration_seconds_bucket{op=\"get\",le=\"0.001\"} 2\n"
            "memkv_request_duration_seconds_bucket{op=\"get\",le=\"+Inf\"} 3\n"
            "memkv_request_duration_seconds_sum{op=\"get\"} 2.000006\n"
            "memkv_request_duration_seconds_count{op=\"get\"} 3\n"
            "# HELP memkv_connections Open client connections.\n"
            "# TYPE memkv_connections gauge\n"
            "memkv_connections{worker=\"0\",transport=\"tcp\"} 2\n");
  EXPECT_EQ(w.dropped(), 0u);
}

TEST(PrometheusWriterTest, EmptyWriterWritesNothing) { EXPECT_EQ(PrometheusWriter().Text(), ""); }

TEST(PrometheusWriterTest, ByteHistogramBoundsAreIntegers) {
  Histogram sizes = Histogram::ForSizesBytes();
  sizes.Observe(64);
  sizes.Observe(3u << 20);
  PrometheusWriter w;
  w.AddHistogram("memkv_value_size_bytes", "Value sizes.", {}, sizes.Snapshot());
  std::string text = w.Text();
  EXPECT_NE(text.find("memkv_value_size_bytes_bucket{le=\"64\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("memkv_value_size_bytes_bucket{le=\"4194304\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("memkv_value_size_bytes_bucket{le=\"1073741824\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("memkv_value_size_bytes_sum 3145792\n"), std::string::npos) << text;
}

TEST(PrometheusWriterTest, NanosecondCounterIsWrittenInSeconds) {
  PrometheusWriter w;
  w.AddCounter("memkv_worker_poll_seconds_total", "Time polled.", {}, 1'500'000, kNanosPerSecond);
  w.AddCounter("memkv_idle_seconds_total", "Time idle.", {}, 0, kNanosPerSecond);
  std::string text = w.Text();
  EXPECT_NE(text.find("memkv_worker_poll_seconds_total 0.0015\n"), std::string::npos) << text;
  EXPECT_NE(text.find("memkv_idle_seconds_total 0\n"), std::string::npos) << text;
}

TEST(PrometheusEscapingTest, LabelValueBytesThatAreNotUtf8AreWrittenAsHexEscapes) {
  EXPECT_EQ(EscapeLabelValue("caf\xc3\xa9"), "caf\xc3\xa9");
  // \xff becomes the characters \xff, whose backslash the label then escapes.
  EXPECT_EQ(EscapeLabelValue("a\xff\"b"), "a\\\\xff\\\"b");
  EXPECT_EQ(EscapeHelp("h\xc0\xafx"), "h\\\\xc0\\\\xafx");
}

TEST(PrometheusEscapingTest, LabelValuesEscapeBackslashQuoteAndNewline) {
  EXPECT_EQ(EscapeLabelValue("plain /path:1"), "plain /path:1");
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  PrometheusWriter w;
  w.AddGauge("memkv_drive_up", "Whether a drive answers.", {{"path", "C:\\dev\\\"x\"\n"}}, 1);
  EXPECT_EQ(w.Text(),
            "# HELP memkv_drive_up Whether a drive answers.\n"
            "# TYPE memkv_drive_up gauge\n"
            "memkv_drive_up{path=\"C:\\\\dev\\\\\\\"x\\\"\\n\"} 1\n");
}

TEST(PrometheusEscapingTest, HelpEscapesBackslashAndNewlineButNotQuotes) {
  EXPECT_EQ(EscapeHelp("one\ntwo \\ \"three\""), "one\\ntwo \\\\ \"three\"");
}

TEST(PrometheusFormatTest, NumbersParseInPrometheus) {
  EXPECT_EQ(FormatDouble(0), "0");
  EXPECT_EQ(FormatDouble(-0.0), "0");
  EXPECT_EQ(FormatDouble(1024), "1024");
  EXPECT_EQ(FormatDouble(-3), "-3");
  EXPECT_EQ(FormatDouble(1e15), "1000000000000000");
  EXPECT_EQ(FormatDouble(0.5), "0.5");
  EXPECT_EQ(FormatDouble(1e-6), "1e-06");
  EXPECT_EQ(FormatDouble(0.25e-3), "0.00025");
  EXPECT_EQ(FormatDouble(1e20), "1e+20");
  EXPECT_EQ(FormatDouble(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatDouble(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatDouble(std::nan("")), "NaN");
  // Latency bounds divided down to seconds print as their decimal selves.
  EXPECT_EQ(FormatDouble(2000 / kNanosPerSecond), "2e-06");
  EXPECT_EQ(FormatDouble(200'000'000 / kNanosPerSecond), "0.2");
}

TEST(PrometheusNamesTest, MetricAndLabelNameGrammar) {
  for (const char* good : {"a", "_x", ":agg:rate5m", "memkv_requests_total", "A9_:"}) {
    EXPECT_TRUE(IsValidMetricName(good)) << good;
  }
  for (const char* bad : {"", "9a", "a-b", "a b", "a.b", "é"}) EXPECT_FALSE(IsValidMetricName(bad)) << bad;
  for (const char* good : {"a", "_x", "op", "A9_"}) EXPECT_TRUE(IsValidLabelName(good)) << good;
  for (const char* bad : {"", "9a", "a:b", "a-b"}) EXPECT_FALSE(IsValidLabelName(bad)) << bad;
}

TEST(PrometheusNamesTest, ConventionsAreChecked) {
  EXPECT_TRUE(CheckFamily("memkv_requests_total", MetricType::kCounter, "h").ok());
  EXPECT_FALSE(CheckFamily("memkv_requests", MetricType::kCounter, "h").ok());
  EXPECT_FALSE(CheckFamily("memkv_up_total", MetricType::kGauge, "h").ok());
  EXPECT_FALSE(CheckFamily("memkv_keys_count", MetricType::kGauge, "h").ok());
  EXPECT_FALSE(CheckFamily("memkv_x_total", MetricType::kHistogram, "h").ok());
  EXPECT_FALSE(CheckFamily("memkv_up", MetricType::kGauge, "").ok());
  Status s = CheckFamily("memkv-up", MetricType::kGauge, "h");
  EXPECT_EQ(s.message(), "metric family 'memkv-up' (gauge): name must match [a-zA-Z_:][a-zA-Z0-9_:]*");

  EXPECT_TRUE(CheckLabels("m", MetricType::kHistogram, {{"op", "get"}, {"worker", "1"}}).ok());
  EXPECT_FALSE(CheckLabels("m", MetricType::kHistogram, {{"le", "1"}}).ok());
  EXPECT_TRUE(CheckLabels("m", MetricType::kGauge, {{"le", "1"}}).ok());
  EXPECT_FALSE(CheckLabels("m", MetricType::kGauge, {{"__name__", "x"}}).ok());
  EXPECT_FALSE(CheckLabels("m", MetricType::kGauge, {{"op", "a"}, {"op", "b"}}).ok());
  EXPECT_FALSE(CheckLabels("m", MetricType::kGauge, {{"bad-name", "a"}}).ok());
}

// A rule broken at a call site: debug builds stop there, release builds leave
// the family or sample out and keep the rest of the scrape valid.
TEST(PrometheusNamesTest, BrokenRuleAssertsInDebugAndIsDroppedInRelease) {
  PrometheusWriter w;
  w.AddGauge("memkv_up", "Up.", {}, 1);
#ifdef NDEBUG
  w.AddGauge("memkv-bad", "Bad name.", {}, 1);
  w.AddCounter("memkv_requests", "No _total.", {}, 1);
  w.AddGauge("memkv_up", "Up.", {{"bad label", "x"}}, 1);
  w.AddCounter("memkv_up", "Same name, other type.", {}, 1);
  EXPECT_EQ(w.dropped(), 4u);
  EXPECT_EQ(w.Text(), "# HELP memkv_up Up.\n# TYPE memkv_up gauge\nmemkv_up 1\n");
#else
  EXPECT_DEATH(w.AddGauge("memkv-bad", "Bad name.", {}, 1), "naming rules");
  EXPECT_DEATH(w.AddCounter("memkv_requests", "No _total.", {}, 1), "naming rules");
  EXPECT_DEATH(w.AddGauge("memkv_up", "Up.", {{"bad label", "x"}}, 1), "naming rules");
  EXPECT_DEATH(w.AddCounter("memkv_up", "Same name, other type.", {}, 1), "one type");
#endif
}

}  // namespace
}  // namespace memkv::metrics
