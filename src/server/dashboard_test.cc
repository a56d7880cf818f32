// The Grafana dashboard (deploy/grafana/memkv-dashboard.json) against the
// server's metric table (ServerMetricTable()): every PromQL query of a panel
// and every `label_values` query of a variable names families the server
// exports (a histogram by its _bucket, _sum or _count series), selects and
// groups by labels those families carry, filters the per-tenant and
// per-identity families by the $tenant and $identity variables, and uses
// only variables the dashboard defines. A renamed metric or label then
// fails here, naming the panel, instead of leaving a silently empty graph.
//
// The PromQL reader below is deliberately small: it finds metric selectors,
// their matchers, the label lists of by / without / on / ignoring /
// group_left / group_right, and $variables. It checks no more syntax than
// quotes, braces and label lists, and evaluates nothing (docs/metrics.md,
// "Dashboard").
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/json.h"
#include "metrics/table.h"
#include "server/metrics_table.h"

namespace memkv::server {
namespace {

using metrics::MetricInfo;
using metrics::MetricType;

constexpr std::string_view kDashboardPath = "deploy/grafana/memkv-dashboard.json";

// Labels Prometheus adds to every scraped series.
const std::set<std::string> kTargetLabels = {"instance", "job"};

// The text of a repository file, found from the working directory upwards
// (ctest runs in the build tree); empty when there is none.
std::string ReadRepoFile(std::string_view relative) {
  std::filesystem::path dir = std::filesystem::current_path();
  while (!std::filesystem::exists(dir / relative) && dir.has_parent_path() && dir != dir.parent_path()) {
    dir = dir.parent_path();
  }
  std::ifstream in(dir / relative);
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Matcher {
  std::string label;
  std::string value;
};

struct Selector {
  std::string metric;  // empty: a selector with no metric name ({job="x"})
  std::vector<Matcher> matchers;
};

// What the checks need from one PromQL expression.
struct PromQl {
  std::vector<Selector> selectors;
  std::vector<std::string> grouping;   // labels of by/without/on/ignoring/group_left/group_right
  std::vector<std::string> variables;  // Grafana $variables, without the '$'
  std::string error;                   // set: the expression could not be read
};

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }

class PromQlReader {
 public:
  explicit PromQlReader(std::string_view text) : s_(text) {}

  PromQl Read() {
    while (i_ < s_.size() && out_.error.empty()) {
      const char c = s_[i_];
      if (c == '"' || c == '\'' || c == '`') {
        String();
      } else if (c == '$') {
        Variable();
      } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
        while (i_ < s_.size() && (IsIdentChar(s_[i_]) || s_[i_] == '.')) ++i_;  // 0.99, 5m, 1e3
      } else if (IsIdentStart(c)) {
        Identifier();
      } else if (c == '{') {
        out_.selectors.push_back({"", Matchers()});
      } else {
        ++i_;
      }
    }
    return std::move(out_);
  }

 private:
  void SkipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  std::string Ident() {
    const size_t start = i_;
    while (i_ < s_.size() && IsIdentChar(s_[i_])) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }
  // A quoted string at i_; returns its contents (escapes kept as written).
  std::string String() {
    const char quote = s_[i_++];
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] != quote) {
      if (s_[i_] == '\\' && quote != '`') ++i_;
      ++i_;
    }
    if (i_ >= s_.size()) {
      out_.error = "unterminated string";
      return "";
    }
    std::string value(s_.substr(start, i_ - start));
    ++i_;
    for (size_t v = value.find('$'); v != std::string::npos; v = value.find('$', v + 1)) {
      PromQlReader inner(std::string_view(value).substr(v));
      inner.Variable();
      for (std::string& name : inner.out_.variables) out_.variables.push_back(std::move(name));
    }
    return value;
  }
  // $name, ${name} or ${name:format}.
  void Variable() {
    ++i_;
    const bool braced = i_ < s_.size() && s_[i_] == '{';
    if (braced) ++i_;
    std::string name = Ident();
    if (braced) {
      while (i_ < s_.size() && s_[i_] != '}') ++i_;
      ++i_;
    }
    if (name.empty()) {
      out_.error = "a '$' that starts no variable";
      return;
    }
    out_.variables.push_back(std::move(name));
  }
  void Identifier() {
    const std::string word = Ident();
    SkipSpace();
    static const std::set<std::string> kGroupings = {"by", "without", "on", "ignoring", "group_left", "group_right"};
    if (kGroupings.count(word)) {
      if (i_ < s_.size() && s_[i_] == '(') LabelList();
      return;
    }
    const bool braces = i_ < s_.size() && s_[i_] == '{';
    if (word.starts_with("memkv_")) {
      out_.selectors.push_back({word, braces ? Matchers() : std::vector<Matcher>{}});
    } else if (braces) {
      out_.selectors.push_back({word, Matchers()});  // another project's metric: reported as unknown
    }
  }
  void LabelList() {
    ++i_;
    while (out_.error.empty()) {
      SkipSpace();
      if (i_ >= s_.size()) {
        out_.error = "unclosed label list";
        return;
      }
      if (s_[i_] == ')') {
        ++i_;
        return;
      }
      if (s_[i_] == ',') {
        ++i_;
        continue;
      }
      const std::string label = Ident();
      if (label.empty()) {
        out_.error = std::string("unexpected '") + s_[i_] + "' in a label list";
        return;
      }
      out_.grouping.push_back(label);
    }
  }
  std::vector<Matcher> Matchers() {
    std::vector<Matcher> matchers;
    ++i_;  // '{'
    while (out_.error.empty()) {
      SkipSpace();
      if (i_ >= s_.size()) {
        out_.error = "unclosed '{'";
        break;
      }
      if (s_[i_] == '}') {
        ++i_;
        break;
      }
      if (s_[i_] == ',') {
        ++i_;
        continue;
      }
      Matcher m{Ident(), ""};
      SkipSpace();
      const size_t op = i_;
      while (i_ < s_.size() && (s_[i_] == '=' || s_[i_] == '!' || s_[i_] == '~')) ++i_;
      SkipSpace();
      if (m.label.empty() || op == i_ || i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'' && s_[i_] != '`')) {
        out_.error = "malformed label matcher";
        break;
      }
      m.value = String();
      matchers.push_back(std::move(m));
    }
    return matchers;
  }

  std::string_view s_;
  size_t i_ = 0;
  PromQl out_;
};

// A series name resolved against the table: its family and the labels its
// samples carry.
struct Series {
  const MetricInfo* family = nullptr;
  std::set<std::string> labels;
  std::string problem;  // set when the name is not an exported series
};

Series Resolve(std::string_view name, std::span<const MetricInfo> table) {
  auto find = [&](std::string_view family) -> const MetricInfo* {
    for (const MetricInfo& info : table) {
      if (info.name == family) return &info;
    }
    return nullptr;
  };
  Series out;
  std::string_view suffix;
  out.family = find(name);
  if (out.family == nullptr) {
    for (std::string_view s : {"_bucket", "_sum", "_count"}) {
      if (name.ends_with(s)) {
        const MetricInfo* f = find(name.substr(0, name.size() - s.size()));
        if (f != nullptr && f->type == MetricType::kHistogram) {
          out.family = f;
          suffix = s;
        }
      }
    }
  }
  if (out.family == nullptr) {
    out.problem = std::string(name) + " is not a metric the server exports";
    return out;
  }
  if (out.family->type == MetricType::kHistogram && suffix.empty()) {
    out.problem = std::string(name) + " is a histogram: name its _bucket, _sum or _count series";
    out.family = nullptr;
    return out;
  }
  for (std::string_view label : metrics::SplitLabelNames(out.family->labels)) out.labels.emplace(label);
  if (suffix == "_bucket") out.labels.insert("le");
  out.labels.insert(kTargetLabels.begin(), kTargetLabels.end());
  return out;
}

// Where a query is, for the messages: "panel 'Load latency'".
struct Query {
  std::string where;
  std::string expr;
  bool panel = true;           // false: a variable's own query (not filtered by the variables)
  std::string values_label;    // label_values(metric, LABEL): the label it lists
};

// The dashboard's own variables, and its queries.
struct Dashboard {
  std::set<std::string> variables;
  std::vector<Query> queries;
};

std::string StringOr(const JsonValue* value, std::string fallback = "") {
  return value != nullptr && value->type == JsonValue::Type::kString ? value->string : fallback;
}

void CheckDatasource(const JsonValue& holder, const std::string& where, std::vector<std::string>& problems) {
  const JsonValue* uid = holder.Path({"datasource", "uid"});
  if (StringOr(uid) != "${datasource}") {
    problems.push_back(where + ": datasource is not the dashboard's ${datasource} variable");
  }
}

void CollectPanels(const JsonValue& panels, Dashboard& dash, std::set<double>& ids,
                   std::vector<std::string>& problems) {
  if (panels.type != JsonValue::Type::kArray) return;
  for (const JsonValue& panel : panels.array) {
    const std::string title = StringOr(panel.Find("title"));
    const std::string type = StringOr(panel.Find("type"));
    const std::string where = "panel '" + title + "'";
    if (title.empty()) problems.push_back("a " + type + " panel has no title");
    const JsonValue* id = panel.Find("id");
    if (id == nullptr || id->type != JsonValue::Type::kNumber || !ids.insert(id->number).second) {
      problems.push_back(where + ": no id, or an id another panel has");
    }
    if (panel.Find("gridPos") == nullptr) problems.push_back(where + ": no gridPos");
    const JsonValue* targets = panel.Find("targets");
    if (targets != nullptr && targets->type == JsonValue::Type::kArray && !targets->array.empty()) {
      CheckDatasource(panel, where, problems);
      for (const JsonValue& target : targets->array) {
        const std::string expr = StringOr(target.Find("expr"));
        if (expr.empty()) {
          problems.push_back(where + ": a target without an expr");
          continue;
        }
        if (target.Find("datasource") != nullptr) CheckDatasource(target, where, problems);
        dash.queries.push_back({where, expr, true, ""});
      }
    } else if (type != "row" && type != "text") {
      problems.push_back(where + ": no query");
    }
    if (const JsonValue* nested = panel.Find("panels")) CollectPanels(*nested, dash, ids, problems);
  }
}

// label_values(SELECTOR, LABEL) -> {SELECTOR, LABEL}; empty when `text` is
// not of that form.
std::pair<std::string, std::string> SplitLabelValues(std::string_view text) {
  constexpr std::string_view kOpen = "label_values(";
  if (!text.starts_with(kOpen) || !text.ends_with(")")) return {};
  const std::string_view args = text.substr(kOpen.size(), text.size() - kOpen.size() - 1);
  const size_t comma = args.rfind(',');
  if (comma == std::string_view::npos) return {"", std::string(args)};  // a label, no metric
  std::string_view label = args.substr(comma + 1);
  while (!label.empty() && label.front() == ' ') label.remove_prefix(1);
  while (!label.empty() && label.back() == ' ') label.remove_suffix(1);
  return {std::string(args.substr(0, comma)), std::string(label)};
}

Dashboard CollectDashboard(const JsonValue& root, std::vector<std::string>& problems) {
  Dashboard dash;
  const JsonValue* variables = root.Path({"templating", "list"});
  if (variables != nullptr && variables->type == JsonValue::Type::kArray) {
    for (const JsonValue& v : variables->array) {
      const std::string name = StringOr(v.Find("name"));
      dash.variables.insert(name);
      if (StringOr(v.Find("type")) != "query") continue;
      const JsonValue* query = v.Find("query");
      // Grafana writes a variable's query as a string or, since 10, as an object.
      std::string text = StringOr(query);
      if (query != nullptr && query->type == JsonValue::Type::kObject) text = StringOr(query->Find("query"));
      const std::string where = "variable '" + name + "'";
      CheckDatasource(v, where, problems);
      auto [selector, label] = SplitLabelValues(text);
      if (label.empty()) {
        problems.push_back(where + ": query is not label_values(metric, label): " + text);
        continue;
      }
      dash.queries.push_back({where, selector, false, label});
    }
  }
  std::set<double> ids;
  if (const JsonValue* panels = root.Find("panels")) CollectPanels(*panels, dash, ids, problems);
  return dash;
}

void CheckQuery(const Query& q, const Dashboard& dash, std::span<const MetricInfo> table,
                std::vector<std::string>& problems) {
  const std::string where = q.where + ": ";
  const PromQl parsed = PromQlReader(q.expr).Read();
  if (!parsed.error.empty()) {
    problems.push_back(where + parsed.error + " in " + q.expr);
    return;
  }
  if (parsed.selectors.empty()) problems.push_back(where + "names no metric: " + q.expr);
  for (const std::string& v : parsed.variables) {
    if (!dash.variables.count(v) && !v.starts_with("__")) {
      problems.push_back(where + "uses $" + v + ", which is not a variable of the dashboard");
    }
  }
  std::set<std::string> all_labels;  // of every series the query names
  for (const Selector& sel : parsed.selectors) {
    if (sel.metric.empty()) {
      problems.push_back(where + "a selector without a metric name in " + q.expr);
      continue;
    }
    const Series series = Resolve(sel.metric, table);
    if (series.family == nullptr) {
      problems.push_back(where + series.problem);
      continue;
    }
    all_labels.insert(series.labels.begin(), series.labels.end());
    std::set<std::string> filtered;
    for (const Matcher& m : sel.matchers) {
      if (!series.labels.count(m.label)) {
        problems.push_back(where + sel.metric + " has no label '" + m.label + "'");
      }
      filtered.insert(m.label);
      if ((m.label == "tenant" || m.label == "identity") && m.value != "$" + m.label &&
          m.value != "${" + m.label + "}") {
        problems.push_back(where + sel.metric + "{" + m.label + "} is not matched to $" + m.label);
      }
    }
    // The per-tenant and per-identity panels follow the dashboard's choice.
    for (const std::string label : {"tenant", "identity"}) {
      if (q.panel && series.labels.count(label) && dash.variables.count(label) && !filtered.count(label)) {
        problems.push_back(where + sel.metric + " is not filtered by $" + label + " (" + label + "=~\"$" + label +
                           "\")");
      }
    }
  }
  for (const std::string& label : parsed.grouping) {
    if (!all_labels.empty() && !all_labels.count(label)) {
      problems.push_back(where + "groups or matches on '" + label + "', which none of its metrics has");
    }
  }
  if (!q.values_label.empty() && !all_labels.empty() && !all_labels.count(q.values_label)) {
    problems.push_back(where + "lists the values of '" + q.values_label + "', which its metric does not have");
  }
}

// One line per problem of the dashboard `json` against `table`; empty when
// every query holds.
std::vector<std::string> DashboardProblems(std::string_view json, std::span<const MetricInfo> table) {
  Result<JsonValue> root = ParseJson(json);
  if (!root.ok()) return {"not JSON: " + std::string(root.status().message())};
  std::vector<std::string> problems;
  const Dashboard dash = CollectDashboard(*root, problems);
  if (dash.queries.empty()) problems.push_back("the dashboard has no query");
  for (const Query& q : dash.queries) CheckQuery(q, dash, table, problems);
  // A query naming a family twice (a ratio, a join) says so once.
  std::vector<std::string> once;
  std::set<std::string> seen;
  for (std::string& p : problems) {
    if (seen.insert(p).second) once.push_back(std::move(p));
  }
  return once;
}

TEST(DashboardTest, EveryQueryNamesWhatTheServerExports) {
  const std::string json = ReadRepoFile(kDashboardPath);
  ASSERT_FALSE(json.empty()) << kDashboardPath << " not found above " << std::filesystem::current_path();
  const std::vector<MetricInfo> table = metrics::Infos(ServerMetricTable());
  for (const std::string& problem : DashboardProblems(json, table)) ADD_FAILURE() << kDashboardPath << ": " << problem;
}

TEST(DashboardTest, IsImportable) {
  Result<JsonValue> root = ParseJson(ReadRepoFile(kDashboardPath));
  ASSERT_TRUE(root.ok()) << root.status().message();
  EXPECT_FALSE(StringOr(root->Find("uid")).empty());
  EXPECT_FALSE(StringOr(root->Find("title")).empty());
  EXPECT_GE(root->Find("schemaVersion") ? root->Find("schemaVersion")->NumberOr(0) : 0, 36);
  const JsonValue* id = root->Find("id");
  EXPECT_TRUE(id == nullptr || id->type == JsonValue::Type::kNull) << "an id ties the file to one Grafana";
  std::vector<std::string> problems;
  const Dashboard dash = CollectDashboard(*root, problems);
  for (const char* name : {"datasource", "tenant", "identity"}) {
    EXPECT_TRUE(dash.variables.count(name)) << "no variable " << name;
  }
}

// The checks themselves, on small dashboards against a small table, so that
// each can be seen to fail.
const std::vector<MetricInfo> kTable = {
    {"memkv_requests_total", MetricType::kCounter, "op,transport", ""},
    {"memkv_request_duration_seconds", MetricType::kHistogram, "op,transport", ""},
    {"memkv_identity_found_total", MetricType::kCounter, "tenant,identity", ""},
    {"memkv_identity_info", MetricType::kGauge, "identity,model", ""},
};

// A dashboard with the variables and one panel per expression.
std::string SmallDashboard(std::vector<std::pair<std::string, std::string>> panels) {
  JsonWriter w;
  w.BeginObject().Key("templating").BeginObject().Key("list").BeginArray();
  w.BeginObject().Key("name").String("datasource").Key("type").String("datasource").EndObject();
  for (const char* name : {"tenant", "identity"}) {
    w.BeginObject().Key("name").String(name).Key("type").String("query");
    w.Key("datasource").BeginObject().Key("uid").String("${datasource}").EndObject();
    w.Key("query").String(std::string("label_values(memkv_identity_found_total, ") + name + ")").EndObject();
  }
  w.EndArray().EndObject().Key("panels").BeginArray();
  int id = 1;
  for (const auto& [title, expr] : panels) {
    w.BeginObject().Key("id").Number(int64_t{id++}).Key("title").String(title).Key("type").String("timeseries");
    w.Key("gridPos").BeginObject().EndObject();
    w.Key("datasource").BeginObject().Key("uid").String("${datasource}").EndObject();
    w.Key("targets").BeginArray().BeginObject().Key("refId").String("A").Key("expr").String(expr);
    w.EndObject().EndArray().EndObject();
  }
  w.EndArray().EndObject();
  return w.text();
}

std::string Joined(const std::vector<std::string>& problems) {
  std::string out;
  for (const std::string& p : problems) out += p + "\n";
  return out;
}

TEST(DashboardTest, AcceptsQueriesOfExportedMetrics) {
  const std::string json = SmallDashboard({
      {"Requests", "sum by (op) (rate(memkv_requests_total{transport=\"tcp\"}[$__rate_interval]))"},
      {"p99", "histogram_quantile(0.99, sum by (le, op) (rate(memkv_request_duration_seconds_bucket[5m])))"},
      {"Found", "sum by (tenant, identity) (rate(memkv_identity_found_total{tenant=~\"$tenant\", "
                "identity=~\"${identity}\"}[5m])) * on (identity) group_left (model) "
                "max by (identity, model) (memkv_identity_info{identity=~\"$identity\"})"},
      {"Per instance", "sum by (instance) (memkv_request_duration_seconds_count)"},
  });
  EXPECT_EQ(Joined(DashboardProblems(json, kTable)), "");
}

TEST(DashboardTest, NamesThePanelOfAnUnknownMetric) {
  const std::string json = SmallDashboard({{"Requests", "sum(rate(memkv_requets_total[5m]))"}});
  EXPECT_EQ(Joined(DashboardProblems(json, kTable)),
            "panel 'Requests': memkv_requets_total is not a metric the server exports\n");
}

TEST(DashboardTest, FindsHistogramSeriesMisnamed) {
  const std::string json = SmallDashboard({
      {"Bare", "rate(memkv_request_duration_seconds[5m])"},
      {"Counter bucket", "rate(memkv_requests_total_bucket[5m])"},
      {"Other project", "up{job=\"memkv\"}"},
  });
  EXPECT_EQ(Joined(DashboardProblems(json, kTable)),
            "panel 'Bare': memkv_request_duration_seconds is a histogram: name its _bucket, _sum or _count series\n"
            "panel 'Counter bucket': memkv_requests_total_bucket is not a metric the server exports\n"
            "panel 'Other project': up is not a metric the server exports\n");
}

TEST(DashboardTest, FindsLabelsTheMetricLacks) {
  const std::string json = SmallDashboard({
      {"Matcher", "memkv_requests_total{tier=\"dram\"}"},
      {"Grouping", "sum by (tier) (memkv_requests_total)"},
      {"No le", "sum by (le) (memkv_requests_total)"},
  });
  EXPECT_EQ(Joined(DashboardProblems(json, kTable)),
            "panel 'Matcher': memkv_requests_total has no label 'tier'\n"
            "panel 'Grouping': groups or matches on 'tier', which none of its metrics has\n"
            "panel 'No le': groups or matches on 'le', which none of its metrics has\n");
}

TEST(DashboardTest, FindsPanelsThatIgnoreTheVariables) {
  const std::string json = SmallDashboard({
      {"Unfiltered", "memkv_identity_found_total{identity=~\"$identity\"}"},
      {"Fixed", "memkv_identity_found_total{tenant=\"a\", identity=~\"$identity\"}"},
      {"Misspelt", "memkv_identity_found_total{tenant=~\"$tennant\", identity=~\"$identity\"}"},
  });
  EXPECT_EQ(Joined(DashboardProblems(json, kTable)),
            "panel 'Unfiltered': memkv_identity_found_total is not filtered by $tenant (tenant=~\"$tenant\")\n"
            "panel 'Fixed': memkv_identity_found_total{tenant} is not matched to $tenant\n"
            "panel 'Misspelt': uses $tennant, which is not a variable of the dashboard\n"
            "panel 'Misspelt': memkv_identity_found_total{tenant} is not matched to $tenant\n");
}

TEST(DashboardTest, ChecksTheVariablesQueries) {
  std::string json = SmallDashboard({});
  const std::string good = "label_values(memkv_identity_found_total, identity)";
  json.replace(json.find(good), good.size(), "label_values(memkv_identity_info, tenant)");
  EXPECT_EQ(Joined(DashboardProblems(json, kTable)),
            "variable 'identity': lists the values of 'tenant', which its metric does not have\n");
}

}  // namespace
}  // namespace memkv::server
