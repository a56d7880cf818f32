// PrometheusWriter: renders metric samples as the Prometheus text exposition
// format, version 0.0.4 (what GET /metrics returns, kPrometheusContentType).
//
// A scrape creates one writer, adds every sample (in any order), then calls
// Text(). Samples are grouped by family: each family is written once, as
// `# HELP`, `# TYPE` and then all its samples in the order they were added;
// families appear in the order they were first added.
//
// Names and conventions (checked by CheckFamily/CheckLabels):
//   - metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
//     [a-zA-Z_][a-zA-Z0-9_]* and do not start with "__" (reserved);
//   - a counter's name ends in "_total"; no other type's name does, and no
//     non-histogram name ends in "_bucket", "_sum" or "_count";
//   - a histogram sample carries no "le" label (the writer adds it);
//   - every family has HELP text and keeps one type;
//   - a sample repeats no label name.
// Units are suffixes in base units (`_seconds`, `_bytes`): latency histograms
// recorded in nanoseconds are added with divisor kNanosPerSecond under a
// `_seconds` name.
// Breaking a rule is a programming error, because names are literals in the
// code: debug builds assert; release builds leave the offending family or
// sample out (counted by dropped()) so that one bad metric cannot make
// Prometheus reject the whole scrape.
//
// Escaping: label values escape backslash, double quote and newline; HELP
// text escapes backslash and newline. Both are UTF-8 in the exposition: a
// byte of a label value or HELP text that is not part of well-formed UTF-8 is
// written as the characters \xNN first (PrintableUtf8 of base/utf8.h), so a
// key namespace of any bytes never makes Prometheus reject the scrape. Numbers: integers (counters, bucket
// counts, integral gauges) are written without exponent; other doubles in the
// shortest form that round-trips, with "+Inf", "-Inf" and "NaN".
//
// Thread-safety: a writer is not thread-safe; use one per scrape. Label and
// name views need only outlive the call that takes them.
#ifndef MEMKV_METRICS_PROMETHEUS_H_
#define MEMKV_METRICS_PROMETHEUS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "memkv/status.h"
#include "metrics/histogram.h"

namespace memkv::metrics {

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { kCounter, kGauge, kHistogram };
// "counter", "gauge", "histogram": the `# TYPE` word.
std::string_view MetricTypeName(MetricType type);

struct Label {
  std::string_view name;
  std::string_view value;
};
using Labels = std::vector<Label>;

bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);
// InvalidArgument naming the family and the rule it breaks.
Status CheckFamily(std::string_view name, MetricType type, std::string_view help);
Status CheckLabels(std::string_view family, MetricType type, const Labels& labels);

// Text forms used by the writer; exposed for tests and other text writers.
std::string EscapeLabelValue(std::string_view value);
std::string EscapeHelp(std::string_view help);
std::string FormatDouble(double value);

class PrometheusWriter {
 public:
  PrometheusWriter() = default;
  PrometheusWriter(const PrometheusWriter&) = delete;
  PrometheusWriter& operator=(const PrometheusWriter&) = delete;

  // `help` is the family's; the first call for a family sets it. The value
  // is written divided by `divisor` (kNanosPerSecond for a nanosecond
  // counter exported in seconds); with 1, as the integer it is.
  void AddCounter(std::string_view name, std::string_view help, const Labels& labels, uint64_t value,
                  double divisor = 1.0);
  void AddGauge(std::string_view name, std::string_view help, const Labels& labels, double value);
  // Bounds and the sum are divided by `divisor` (kNanosPerSecond for a
  // nanosecond histogram exported in seconds); counts are written as is.
  void AddHistogram(std::string_view name, std::string_view help, const Labels& labels,
                    const HistogramSnapshot& snapshot, double divisor = 1.0);

  // The exposition: every family added so far, each line ending in '\n'.
  std::string Text() const;
  // Families and samples left out for breaking the rules above (release builds).
  size_t dropped() const { return dropped_; }

 private:
  struct Family {
    std::string name;
    MetricType type;
    std::string help;
    std::string samples;  // rendered sample lines
  };

  // The family to append to, or nullptr (and dropped_ counted) when the name,
  // type, help or labels break a rule.
  Family* Begin(std::string_view name, MetricType type, std::string_view help, const Labels& labels);

  std::vector<Family> families_;
  std::unordered_map<std::string, size_t> index_;  // name -> families_ position
  size_t dropped_ = 0;
};

}  // namespace memkv::metrics

#endif  // MEMKV_METRICS_PROMETHEUS_H_
