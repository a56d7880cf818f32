// Fact tables: everything a component reports, each fact described once and
// rendered both as Prometheus text and as a JSON status document.
//
// A table is an array of Fact rows, each built by one of:
//   Fact::Metric(name, type, labels, help, read)   a Prometheus family, a
//       MetricDescriptor (table.h): `read` emits its samples;
//     .Status(path, sample, present)   ...which also shows the value of one of
//       its samples as a status field: `sample` names the sample by its label
//       values in label order ("dram"; "" for an unlabelled family);
//     .WithField(path, write, present)  ...and a status field `write` renders
//       from the same source (a string, a bool, an object);
//   Fact::Field(path, write, present)   a status field with no family;
//   Fact::Object(section)               where the status object `section`
//       is written.
// A status `path` is "key" at the top level or "section.key" in an object.
// A field is left out when `present` says no (nullptr: always) and, for a
// sample, when the reader emits no sample with those label values.
//
// The exposition has the families in table order (Families(), then
// WriteTable). The status document is written in table order too: a
// top-level field where its row is, an object where its Object row is,
// holding every "section.*" field of the table in table order
// (StatusFields(), then WriteStatusJson). CheckFacts states the rules a
// table must keep; each table's test runs it.
//
// Thread-safety: tables are immutable; the writers run on the caller's
// thread and read the source once per family.
#ifndef MEMKV_METRICS_FACTS_H_
#define MEMKV_METRICS_FACTS_H_

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/json.h"
#include "metrics/table.h"

namespace memkv::metrics {

// One status field a fact shows.
template <typename Source>
struct StatusItem {
  std::string_view path;    // empty: an unused slot
  std::string_view sample;  // the sample shown, by its label values, comma-separated
  void (*write)(const Source&, JsonWriter&) = nullptr;  // set: written by this instead
  bool (*present)(const Source&) = nullptr;             // nullptr: always
};

// The most status fields one row shows (a family's dram and drive samples).
inline constexpr size_t kMaxStatusItems = 2;

template <typename Source>
struct Fact {
  using Read = void (*)(const Source&, Samples&);
  using Write = void (*)(const Source&, JsonWriter&);
  using Present = bool (*)(const Source&);

  MetricDescriptor<Source> metric{};  // metric.name empty: no family
  std::array<StatusItem<Source>, kMaxStatusItems> status{};
  size_t status_count = 0;
  std::string_view object;  // an Object row's section

  static constexpr Fact Metric(std::string_view name, MetricType type, std::string_view labels,
                               std::string_view help, Read read) {
    Fact f{};
    f.metric = {name, type, labels, help, read};
    return f;
  }
  static constexpr Fact Field(std::string_view path, Write write, Present present = nullptr) {
    return Fact{}.WithField(path, write, present);
  }
  static constexpr Fact Object(std::string_view section) {
    Fact f{};
    f.object = section;
    return f;
  }
  constexpr Fact Status(std::string_view path, std::string_view sample = {}, Present present = nullptr) const {
    return With({path, sample, nullptr, present});
  }
  constexpr Fact WithField(std::string_view path, Write write, Present present = nullptr) const {
    return With({path, {}, write, present});
  }
  // A row showing more than kMaxStatusItems fields indexes past `status`:
  // a compile error in a constexpr table.
  constexpr Fact With(StatusItem<Source> item) const {
    Fact f = *this;
    f.status[f.status_count++] = item;
    return f;
  }
};

// The Prometheus families of a table, in table order.
template <typename Source>
std::vector<MetricDescriptor<Source>> Families(std::span<const Fact<Source>> facts) {
  std::vector<MetricDescriptor<Source>> out;
  for (const Fact<Source>& f : facts) {
    if (!f.metric.name.empty()) out.push_back(f.metric);
  }
  return out;
}

// One field of the status document, in the order it is written.
template <typename Source>
struct StatusField {
  std::string_view path;
  const Fact<Source>* fact;
  const StatusItem<Source>* item;
};

// "section" of "section.key"; "" for a top-level path.
std::string_view StatusSection(std::string_view path);
// "key" of "section.key" or of "key".
std::string_view StatusKey(std::string_view path);

// The fields of a table in the order the document has them: top-level
// fields at their rows, each object's fields at its Object row. Fields of a
// section without an Object row come last (CheckFacts reports them).
template <typename Source>
std::vector<StatusField<Source>> StatusFields(std::span<const Fact<Source>> facts) {
  std::vector<StatusField<Source>> out;
  std::vector<bool> placed(facts.size() * kMaxStatusItems, false);
  auto place_section = [&](std::string_view section) {
    for (size_t r = 0; r < facts.size(); ++r) {
      for (size_t i = 0; i < facts[r].status_count; ++i) {
        const StatusItem<Source>& item = facts[r].status[i];
        if (placed[r * kMaxStatusItems + i] || StatusSection(item.path) != section) continue;
        placed[r * kMaxStatusItems + i] = true;
        out.push_back({item.path, &facts[r], &item});
      }
    }
  };
  for (size_t r = 0; r < facts.size(); ++r) {
    if (!facts[r].object.empty()) place_section(facts[r].object);
    for (size_t i = 0; i < facts[r].status_count; ++i) {
      const StatusItem<Source>& item = facts[r].status[i];
      if (StatusSection(item.path).empty()) {
        placed[r * kMaxStatusItems + i] = true;
        out.push_back({item.path, &facts[r], &item});
      }
    }
  }
  for (size_t r = 0; r < facts.size(); ++r) {
    for (size_t i = 0; i < facts[r].status_count; ++i) {
      if (!placed[r * kMaxStatusItems + i]) place_section(StatusSection(facts[r].status[i].path));
    }
  }
  return out;
}

// Writes a captured sample's value as JSON: a counter as an integer, a
// gauge holding a whole number as an integer, any other gauge as a double.
void WriteSampleJson(const CapturedSample& sample, JsonWriter& w);

// The status document of `source`: one JSON object, objects for the
// sections, fields left out as their rows say (an object with no field left
// is left out too).
template <typename Source>
std::string WriteStatusJson(std::span<const StatusField<Source>> fields, const Source& source) {
  // Each family read once, however many of its samples are shown.
  std::vector<std::pair<const Fact<Source>*, std::vector<CapturedSample>>> read;
  auto captured = [&](const Fact<Source>* fact) -> const std::vector<CapturedSample>& {
    for (const auto& [f, samples] : read) {
      if (f == fact) return samples;
    }
    std::vector<CapturedSample> samples;
    Samples out(&samples, fact->metric.type, fact->metric.labels);
    fact->metric.read(source, out);
    return read.emplace_back(fact, std::move(samples)).second;
  };
  JsonWriter w;
  w.BeginObject();
  std::string_view open;  // the section whose object is open; "" at the top level
  for (const StatusField<Source>& field : fields) {
    const StatusItem<Source>& item = *field.item;
    if (item.present != nullptr && !item.present(source)) continue;
    const CapturedSample* sample = nullptr;
    if (item.write == nullptr) {
      for (const CapturedSample& s : captured(field.fact)) {
        if (s.label_values == item.sample) sample = &s;
      }
      if (sample == nullptr) continue;
    }
    const std::string_view section = StatusSection(field.path);
    if (section != open) {
      if (!open.empty()) w.EndObject();
      if (!section.empty()) w.Key(section).BeginObject();
      open = section;
    }
    w.Key(StatusKey(field.path));
    if (sample != nullptr) {
      WriteSampleJson(*sample, w);
    } else {
      item.write(source, w);
    }
  }
  if (!open.empty()) w.EndObject();
  w.EndObject();
  return w.text();
}

// What a row publishes, for CheckFacts.
struct FactInfo {
  MetricInfo metric;  // name empty: no family
  std::vector<std::pair<std::string_view, std::string_view>> samples;  // (path, sample) shown
  std::vector<std::string_view> fields;                                // paths written by functions
  std::string_view object;
};

template <typename Source>
std::vector<FactInfo> FactInfos(std::span<const Fact<Source>> facts) {
  std::vector<FactInfo> out;
  for (const Fact<Source>& f : facts) {
    FactInfo info{{f.metric.name, f.metric.type, f.metric.labels, f.metric.help}, {}, {}, f.object};
    for (size_t i = 0; i < f.status_count; ++i) {
      const StatusItem<Source>& item = f.status[i];
      if (item.write != nullptr) {
        info.fields.push_back(item.path);
      } else {
        info.samples.emplace_back(item.path, item.sample);
      }
    }
    out.push_back(std::move(info));
  }
  return out;
}

// One line per broken rule, empty when the table keeps them all: the
// families follow CheckTable; every status path is unique and its section
// has exactly one Object row; a sample shown belongs to a counter or gauge
// family and names one value per label.
std::vector<std::string> CheckFacts(std::span<const FactInfo> facts);

}  // namespace memkv::metrics

#endif  // MEMKV_METRICS_FACTS_H_
