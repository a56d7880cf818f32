#include "metrics/facts.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <set>

namespace memkv::metrics {

std::string_view StatusSection(std::string_view path) {
  const size_t dot = path.find('.');
  return dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
}

std::string_view StatusKey(std::string_view path) {
  const size_t dot = path.find('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

void WriteSampleJson(const CapturedSample& sample, JsonWriter& w) {
  if (sample.type == MetricType::kCounter) {
    w.Number(sample.count);
    return;
  }
  // Below 2^53 a double holds every integer exactly: a byte or key count
  // read through a gauge is written as the integer it was.
  constexpr double kExactIntegers = 9007199254740992.0;
  const double v = sample.value;
  if (std::isfinite(v) && std::trunc(v) == v && std::fabs(v) < kExactIntegers) {
    w.Number(int64_t(v));
  } else {
    w.Number(v);
  }
}

std::vector<std::string> CheckFacts(std::span<const FactInfo> facts) {
  std::vector<std::string> problems;
  std::vector<MetricInfo> families;
  std::set<std::string_view> paths;
  std::map<std::string_view, int> objects;  // section -> Object rows
  std::set<std::string_view> sections;      // sections fields use
  auto path_seen = [&](std::string_view path) {
    if (path.empty()) {
      problems.push_back("a status field without a path");
      return;
    }
    if (!paths.insert(path).second) problems.push_back("status field '" + std::string(path) + "': two rows show it");
    if (!StatusSection(path).empty()) sections.insert(StatusSection(path));
  };
  for (const FactInfo& f : facts) {
    const std::string row = f.metric.name.empty() ? "a row" : "family '" + std::string(f.metric.name) + "'";
    if (!f.metric.name.empty()) families.push_back(f.metric);
    if (!f.object.empty()) ++objects[f.object];
    for (std::string_view path : f.fields) path_seen(path);
    for (const auto& [path, sample] : f.samples) {
      path_seen(path);
      if (f.metric.name.empty() || f.metric.type == MetricType::kHistogram) {
        problems.push_back(row + ": status field '" + std::string(path) + "' shows a sample of no counter or gauge");
        continue;
      }
      const size_t labels = SplitLabelNames(f.metric.labels).size();
      const size_t values = sample.empty() ? 0 : SplitLabelNames(sample).size();
      if (labels != values) {
        problems.push_back(row + ": status field '" + std::string(path) + "' names sample '" + std::string(sample) +
                           "', not one value per label of '" + std::string(f.metric.labels) + "'");
      }
    }
  }
  if (Status status = CheckTable(families); !status.ok()) problems.push_back(status.message());
  for (std::string_view section : sections) {
    if (!objects.count(section)) problems.push_back("status section '" + std::string(section) + "' has no Object row");
  }
  for (const auto& [section, rows] : objects) {
    if (rows > 1) problems.push_back("status section '" + std::string(section) + "' has two Object rows");
    if (paths.count(section)) problems.push_back("status section '" + std::string(section) + "' is also a field");
  }
  return problems;
}

}  // namespace memkv::metrics
