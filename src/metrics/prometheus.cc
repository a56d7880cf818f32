#include "metrics/prometheus.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/utf8.h"

namespace memkv::metrics {
namespace {

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// `{a="x",b="y"}` plus an optional trailing le label; "" when there are none.
std::string LabelText(const Labels& labels, std::string_view le = {}) {
  if (labels.empty() && le.empty()) return {};
  std::string out = "{";
  for (const Label& label : labels) {
    if (out.size() > 1) out += ',';
    out.append(label.name);
    out += "=\"";
    out += EscapeLabelValue(label.value);
    out += '"';
  }
  if (!le.empty()) {
    if (out.size() > 1) out += ',';
    out += "le=\"";
    out.append(le);
    out += '"';
  }
  out += '}';
  return out;
}

void AppendSample(std::string* out, std::string_view name, std::string_view suffix,
                  const std::string& labels, std::string_view value) {
  out->append(name);
  out->append(suffix);
  out->append(labels);
  *out += ' ';
  out->append(value);
  *out += '\n';
}

}  // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty() || !(IsNameStart(name[0]) || name[0] == ':')) return false;
  for (char c : name) {
    if (!IsNameStart(c) && !IsDigit(c) && c != ':') return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || !IsNameStart(name[0])) return false;
  for (char c : name) {
    if (!IsNameStart(c) && !IsDigit(c)) return false;
  }
  return true;
}

Status CheckFamily(std::string_view name, MetricType type, std::string_view help) {
  std::string what = "metric family '" + std::string(name) + "' (" + std::string(MetricTypeName(type)) + ")";
  if (!IsValidMetricName(name)) return InvalidArgument(what + ": name must match [a-zA-Z_:][a-zA-Z0-9_:]*");
  bool total = name.ends_with("_total");
  if (type == MetricType::kCounter && !total) {
    return InvalidArgument(what + ": a counter's name ends in _total");
  }
  if (type != MetricType::kCounter && total) return InvalidArgument(what + ": only counters end in _total");
  if (type != MetricType::kHistogram &&
      (name.ends_with("_bucket") || name.ends_with("_sum") || name.ends_with("_count"))) {
    return InvalidArgument(what + ": _bucket, _sum and _count are histogram series suffixes");
  }
  if (help.empty()) return InvalidArgument(what + ": HELP text is empty");
  return Status::Ok();
}

Status CheckLabels(std::string_view family, MetricType type, const Labels& labels) {
  for (size_t i = 0; i < labels.size(); ++i) {
    std::string_view label = labels[i].name;
    std::string what = "metric family '" + std::string(family) + "' label '" + std::string(label) + "'";
    if (!IsValidLabelName(label)) return InvalidArgument(what + ": name must match [a-zA-Z_][a-zA-Z0-9_]*");
    if (label.starts_with("__")) return InvalidArgument(what + ": names starting with __ are reserved");
    if (type == MetricType::kHistogram && label == "le") {
      return InvalidArgument(what + ": le is the histogram's bucket label");
    }
    for (size_t j = 0; j < i; ++j) {
      if (labels[j].name == label) return InvalidArgument(what + ": given twice");
    }
  }
  return Status::Ok();
}

std::string EscapeLabelValue(std::string_view raw) {
  // Label values must be UTF-8: bytes that are not become \xNN first (base/utf8.h).
  std::string printable;
  std::string_view value = raw;
  if (!IsValidUtf8(raw)) {
    printable = PrintableUtf8(raw);
    value = printable;
  }
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string EscapeHelp(std::string_view raw) {
  std::string printable;
  std::string_view help = raw;
  if (!IsValidUtf8(raw)) {
    printable = PrintableUtf8(raw);
    help = printable;
  }
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string FormatDouble(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Integers up to 2^53 are exact in a double: print them plainly ("1024",
  // not "1.024e+03"); 0.0 and -0.0 both print "0".
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (value == std::trunc(value) && std::fabs(value) <= kExactIntegers) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);  // shortest round-trip form
  assert(ec == std::errc());
  (void)ec;
  return std::string(buf, end);
}

PrometheusWriter::Family* PrometheusWriter::Begin(std::string_view name, MetricType type,
                                                  std::string_view help, const Labels& labels) {
  auto it = index_.find(std::string(name));
  Family* family = nullptr;
  if (it != index_.end()) {
    family = &families_[it->second];
    assert(family->type == type && "a metric family keeps one type");
    if (family->type != type) family = nullptr;
  } else {
    [[maybe_unused]] Status status = CheckFamily(name, type, help);
    assert(status.ok() && "metric family breaks the naming rules of metrics/prometheus.h");
    if (status.ok()) {
      index_.emplace(std::string(name), families_.size());
      family = &families_.emplace_back(Family{std::string(name), type, std::string(help), {}});
    }
  }
  if (family != nullptr) {
    [[maybe_unused]] Status status = CheckLabels(name, type, labels);
    assert(status.ok() && "metric labels break the naming rules of metrics/prometheus.h");
    if (!status.ok()) family = nullptr;
  }
  if (family == nullptr) ++dropped_;
  return family;
}

void PrometheusWriter::AddCounter(std::string_view name, std::string_view help, const Labels& labels,
                                  uint64_t value, double divisor) {
  Family* family = Begin(name, MetricType::kCounter, help, labels);
  if (family == nullptr) return;
  AppendSample(&family->samples, name, "", LabelText(labels),
               divisor == 1.0 ? std::to_string(value) : FormatDouble(double(value) / divisor));
}

void PrometheusWriter::AddGauge(std::string_view name, std::string_view help, const Labels& labels,
                                double value) {
  Family* family = Begin(name, MetricType::kGauge, help, labels);
  if (family == nullptr) return;
  AppendSample(&family->samples, name, "", LabelText(labels), FormatDouble(value));
}

void PrometheusWriter::AddHistogram(std::string_view name, std::string_view help, const Labels& labels,
                                    const HistogramSnapshot& snapshot, double divisor) {
  Family* family = Begin(name, MetricType::kHistogram, help, labels);
  if (family == nullptr) return;
  assert(snapshot.cumulative.size() == snapshot.bounds.size());
  std::string* out = &family->samples;
  size_t buckets = std::min(snapshot.bounds.size(), snapshot.cumulative.size());
  for (size_t i = 0; i < buckets; ++i) {
    std::string le = FormatDouble(static_cast<double>(snapshot.bounds[i]) / divisor);
    AppendSample(out, name, "_bucket", LabelText(labels, le), std::to_string(snapshot.cumulative[i]));
  }
  AppendSample(out, name, "_bucket", LabelText(labels, "+Inf"), std::to_string(snapshot.count));
  std::string plain = LabelText(labels);
  AppendSample(out, name, "_sum", plain, FormatDouble(static_cast<double>(snapshot.sum) / divisor));
  AppendSample(out, name, "_count", plain, std::to_string(snapshot.count));
}

std::string PrometheusWriter::Text() const {
  std::string out;
  for (const Family& family : families_) {
    out += "# HELP ";
    out += family.name;
    out += ' ';
    out += EscapeHelp(family.help);
    out += "\n# TYPE ";
    out += family.name;
    out += ' ';
    out += MetricTypeName(family.type);
    out += '\n';
    out += family.samples;
  }
  return out;
}

}  // namespace memkv::metrics
