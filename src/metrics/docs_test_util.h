// Test helper: a metric table against its section of docs/metrics.md, read
// from the source tree (found from the test's working directory upwards).
// Header-only, for the tests beside each table (server, client).
#ifndef MEMKV_METRICS_DOCS_TEST_UTIL_H_
#define MEMKV_METRICS_DOCS_TEST_UTIL_H_

#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/table.h"

namespace memkv::metrics::testing {

// One line per disagreement between `table` and the section `section`
// ("## Server") of docs/metrics.md, each prefixed with where it is; also when
// the page cannot be found or the section lists nothing. Empty when they
// agree.
inline std::vector<std::string> DocsProblems(std::span<const MetricInfo> table, std::string_view section) {
  const std::filesystem::path relative = "docs/metrics.md";
  std::filesystem::path dir = std::filesystem::current_path();
  while (!std::filesystem::exists(dir / relative) && dir.has_parent_path() && dir != dir.parent_path()) {
    dir = dir.parent_path();
  }
  std::ifstream in(dir / relative);
  if (!in) return {"docs/metrics.md not found above " + std::filesystem::current_path().string()};
  std::stringstream text;
  text << in.rdbuf();
  const std::vector<DocumentedMetric> documented = ParseDocumentedMetrics(text.str(), section);
  const std::string where = "docs/metrics.md, " + std::string(section) + ": ";
  if (documented.empty()) return {where + "lists no metric"};
  std::vector<std::string> problems = CheckTableAgainstDocs(table, documented);
  for (std::string& p : problems) p = where + p;
  return problems;
}

}  // namespace memkv::metrics::testing

#endif  // MEMKV_METRICS_DOCS_TEST_UTIL_H_
