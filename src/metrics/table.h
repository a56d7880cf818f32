// Metric tables: each metric a component exports is described once, as one
// MetricDescriptor row: its name, type, label names, HELP text and how to read
// its samples from the component's snapshot (`Source`). The exporters iterate
// the table (WriteTable), the tests check the table against docs/metrics.md
// (ParseDocumentedMetrics, CheckTableAgainstDocs), so adding a metric is one
// row plus the increment where it happens.
//
// The tables themselves live with their components (the server's in
// src/server/metrics_table.cc, the client's in src/client/client_metrics.cc);
// this layer knows only the row shape, the Prometheus writer and the docs
// format. A component that also has a JSON status document (the server)
// writes its table as Fact rows (facts.h), whose families are these rows.
//
// A row's reader emits zero or more samples through Samples. A family whose
// reader emits nothing (drive metrics in memory mode, no completion errors yet)
// is left out of the exposition, as Prometheus expects. Families appear in
// table order and samples in the order the reader emits them.
//
// Thread-safety: tables are immutable; WriteTable runs on the caller's thread
// with a writer of its own (prometheus.h).
#ifndef MEMKV_METRICS_TABLE_H_
#define MEMKV_METRICS_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/status.h"
#include "metrics/histogram.h"
#include "metrics/prometheus.h"

namespace memkv::metrics {

// A sample kept by a capturing Samples: what a status field shows
// (facts.h). Histograms are not captured.
struct CapturedSample {
  std::string label_values;  // comma-separated, in label order ("dram"; "" when unlabelled)
  MetricType type = MetricType::kCounter;
  uint64_t count = 0;  // a counter's value
  double value = 0;    // a gauge's value
};

// The sink a row's reader writes its samples into: the row's family, on one
// writer, or a list of captured samples. A sample of the wrong type for the
// row, or whose label names differ from the row's, breaks the table: debug
// builds assert, release builds drop the sample (counted by dropped()).
class Samples {
 public:
  Samples(PrometheusWriter* writer, std::string_view name, MetricType type, std::string_view help,
          std::string_view labels)
      : writer_(writer), name_(name), type_(type), help_(help), labels_(labels) {}
  Samples(std::vector<CapturedSample>* capture, MetricType type, std::string_view labels)
      : capture_(capture), type_(type), labels_(labels) {}

  // See PrometheusWriter::AddCounter for `divisor`; a captured sample keeps
  // the count as given and the divided value.
  void Counter(const Labels& labels, uint64_t value, double divisor = 1.0);
  void Gauge(const Labels& labels, double value);
  // See PrometheusWriter::AddHistogram for `divisor`.
  void Histogram(const Labels& labels, const HistogramSnapshot& snapshot, double divisor = 1.0);
  size_t dropped() const { return dropped_; }

 private:
  bool Fits(MetricType type, const Labels& labels);
  void Capture(const Labels& labels, uint64_t count, double value);

  PrometheusWriter* writer_ = nullptr;
  std::vector<CapturedSample>* capture_ = nullptr;
  std::string_view name_;
  MetricType type_;
  std::string_view help_;
  std::string_view labels_;
  size_t dropped_ = 0;
};

// One metric family. `labels` names its labels in the order samples carry
// them, comma-separated ("op,transport"; "" for none).
template <typename Source>
struct MetricDescriptor {
  std::string_view name;
  MetricType type;
  std::string_view labels;
  std::string_view help;
  void (*read)(const Source& source, Samples& out);
};

// Every row's samples, in table order. Returns the samples dropped for not
// fitting their row (0 unless a reader is broken); the writer's dropped()
// counts those that break the Prometheus rules.
template <typename Source>
size_t WriteTable(std::span<const MetricDescriptor<Source>> table, const Source& source, PrometheusWriter* writer) {
  size_t dropped = 0;
  for (const MetricDescriptor<Source>& row : table) {
    Samples out(writer, row.name, row.type, row.help, row.labels);
    row.read(source, out);
    dropped += out.dropped();
  }
  return dropped;
}

// The label names of a descriptor's `labels` text, in order.
std::vector<std::string_view> SplitLabelNames(std::string_view labels);

// What a row publishes, without its reader: what the docs and the checks need.
struct MetricInfo {
  std::string_view name;
  MetricType type;
  std::string_view labels;
  std::string_view help;
};

template <typename Source>
std::vector<MetricInfo> Infos(std::span<const MetricDescriptor<Source>> table) {
  std::vector<MetricInfo> out;
  out.reserve(table.size());
  for (const MetricDescriptor<Source>& row : table) out.push_back({row.name, row.type, row.labels, row.help});
  return out;
}

// InvalidArgument naming the first row that breaks the rules of prometheus.h
// (name, type suffix, HELP, label names) or repeats a name.
Status CheckTable(std::span<const MetricInfo> table);

// A metric as docs/metrics.md lists it: one row of a markdown table
// `| name | type | labels | meaning |`, whose name cell may list several
// backquoted names sharing the row.
struct DocumentedMetric {
  std::string name;
  std::string type;                 // as written: "counter", "gauge", "histogram"
  std::vector<std::string> labels;  // the backquoted names in the labels cell
};

// The metrics documented under the heading `section` ("## Server") of a
// markdown text, up to the next heading of the same level; every table row
// whose first cell starts with a backquoted name counts.
std::vector<DocumentedMetric> ParseDocumentedMetrics(std::string_view markdown, std::string_view section);

// One line per disagreement between a table and its documented metrics: a
// row missing from the docs, documented with another type or other labels,
// and a documented metric no row exports. Empty when they agree.
std::vector<std::string> CheckTableAgainstDocs(std::span<const MetricInfo> table,
                                               std::span<const DocumentedMetric> documented);

}  // namespace memkv::metrics

#endif  // MEMKV_METRICS_TABLE_H_
