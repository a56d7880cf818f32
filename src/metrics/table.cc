#include "metrics/table.h"

#include <cassert>
#include <set>

namespace memkv::metrics {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

// The `...`-quoted words of a markdown cell, in order.
std::vector<std::string> Quoted(std::string_view cell) {
  std::vector<std::string> out;
  while (true) {
    const size_t open = cell.find('`');
    if (open == std::string_view::npos) break;
    const size_t close = cell.find('`', open + 1);
    if (close == std::string_view::npos) break;
    out.emplace_back(cell.substr(open + 1, close - open - 1));
    cell.remove_prefix(close + 1);
  }
  return out;
}

// The cells of a markdown table row `| a | b |`.
std::vector<std::string_view> Cells(std::string_view line) {
  std::vector<std::string_view> out;
  line = Trim(line);
  if (line.starts_with('|')) line.remove_prefix(1);
  if (line.ends_with('|')) line.remove_suffix(1);
  while (true) {
    const size_t bar = line.find('|');
    out.push_back(Trim(line.substr(0, bar)));
    if (bar == std::string_view::npos) break;
    line.remove_prefix(bar + 1);
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

}  // namespace

bool Samples::Fits(MetricType type, const Labels& labels) {
  bool fits = type == type_;
  const std::vector<std::string_view> names = SplitLabelNames(labels_);
  fits = fits && names.size() == labels.size();
  for (size_t i = 0; fits && i < names.size(); ++i) fits = names[i] == labels[i].name;
  assert(fits && "a metric table row's reader emitted a sample of another type or with other labels");
  if (!fits) ++dropped_;
  return fits;
}

void Samples::Capture(const Labels& labels, uint64_t count, double value) {
  CapturedSample& sample = capture_->emplace_back();
  for (const Label& label : labels) {
    if (!sample.label_values.empty()) sample.label_values += ',';
    sample.label_values += label.value;
  }
  sample.type = type_;
  sample.count = count;
  sample.value = value;
}

void Samples::Counter(const Labels& labels, uint64_t value, double divisor) {
  if (!Fits(MetricType::kCounter, labels)) return;
  if (capture_ != nullptr) {
    Capture(labels, value, double(value) / divisor);
  } else {
    writer_->AddCounter(name_, help_, labels, value, divisor);
  }
}

void Samples::Gauge(const Labels& labels, double value) {
  if (!Fits(MetricType::kGauge, labels)) return;
  if (capture_ != nullptr) {
    Capture(labels, 0, value);
  } else {
    writer_->AddGauge(name_, help_, labels, value);
  }
}

void Samples::Histogram(const Labels& labels, const HistogramSnapshot& snapshot, double divisor) {
  if (Fits(MetricType::kHistogram, labels) && capture_ == nullptr) {
    writer_->AddHistogram(name_, help_, labels, snapshot, divisor);
  }
}

std::vector<std::string_view> SplitLabelNames(std::string_view labels) {
  std::vector<std::string_view> out;
  while (!labels.empty()) {
    const size_t comma = labels.find(',');
    out.push_back(Trim(labels.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    labels.remove_prefix(comma + 1);
  }
  return out;
}

Status CheckTable(std::span<const MetricInfo> table) {
  std::set<std::string_view> seen;
  for (const MetricInfo& row : table) {
    MEMKV_RETURN_IF_ERROR(CheckFamily(row.name, row.type, row.help));
    Labels labels;
    for (std::string_view name : SplitLabelNames(row.labels)) labels.push_back({name, ""});
    MEMKV_RETURN_IF_ERROR(CheckLabels(row.name, row.type, labels));
    if (!seen.insert(row.name).second) {
      return InvalidArgument("metric family '" + std::string(row.name) + "': two rows of one table");
    }
  }
  return Status::Ok();
}

std::vector<DocumentedMetric> ParseDocumentedMetrics(std::string_view markdown, std::string_view section) {
  std::vector<DocumentedMetric> out;
  const size_t level = section.find_first_not_of('#');
  bool inside = false;
  while (!markdown.empty()) {
    const size_t end = markdown.find('\n');
    const std::string_view line = markdown.substr(0, end);
    markdown.remove_prefix(end == std::string_view::npos ? markdown.size() : end + 1);
    if (line.starts_with('#')) {
      const size_t hashes = line.find_first_not_of('#');
      if (Trim(line) == section) {
        inside = true;
      } else if (hashes <= level) {
        inside = false;
      }
      continue;
    }
    if (!inside || !Trim(line).starts_with("| `")) continue;
    const std::vector<std::string_view> cells = Cells(line);
    if (cells.size() < 3) continue;
    for (std::string& name : Quoted(cells[0])) {
      out.push_back({std::move(name), std::string(cells[1]), Quoted(cells[2])});
    }
  }
  return out;
}

std::vector<std::string> CheckTableAgainstDocs(std::span<const MetricInfo> table,
                                               std::span<const DocumentedMetric> documented) {
  std::vector<std::string> problems;
  for (const MetricInfo& row : table) {
    const DocumentedMetric* doc = nullptr;
    for (const DocumentedMetric& d : documented) {
      if (d.name == row.name) doc = &d;
    }
    std::vector<std::string> labels;
    for (std::string_view label : SplitLabelNames(row.labels)) labels.emplace_back(label);
    const std::string what = std::string(row.name) + " (" + std::string(MetricTypeName(row.type)) + ", labels '" +
                             Join(labels) + "')";
    if (doc == nullptr) {
      problems.push_back(what + ": exported but not documented");
      continue;
    }
    if (doc->type != MetricTypeName(row.type)) problems.push_back(what + ": documented as a " + doc->type);
    if (doc->labels != labels) problems.push_back(what + ": documented with labels '" + Join(doc->labels) + "'");
  }
  for (const DocumentedMetric& d : documented) {
    bool exported = false;
    for (const MetricInfo& row : table) exported = exported || d.name == row.name;
    if (!exported) problems.push_back(d.name + ": documented but no table row exports it");
  }
  return problems;
}

}  // namespace memkv::metrics
