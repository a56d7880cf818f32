#include "bench/replay.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "base/json.h"
#include "bench/measure.h"

namespace memkv::bench {
namespace {

const std::set<std::string, std::less<>> kReads = {"get", "batch_get", "exists", "batch_exists", "stat",
                                                   "match_prefix"};
const std::set<std::string, std::less<>> kOps = {"get", "batch_get", "exists", "batch_exists", "stat", "match_prefix",
                                                 "put", "batch_put", "delete"};

Result<std::string> StringField(const JsonValue& line, std::string_view name, size_t number) {
  const JsonValue* v = line.Find(name);
  if (v == nullptr || v->type != JsonValue::Type::kString) {
    return InvalidArgument("line " + std::to_string(number) + ": no string \"" + std::string(name) + "\"");
  }
  return v->string;
}

Result<double> NumberField(const JsonValue& line, std::string_view name, size_t number) {
  const JsonValue* v = line.Find(name);
  if (v == nullptr || v->type != JsonValue::Type::kNumber || v->number < 0) {
    return InvalidArgument("line " + std::to_string(number) + ": no non-negative number \"" + std::string(name) +
                           "\"");
  }
  return v->number;
}

// One thread's tally; merged after the threads end.
struct Tally {
  ReplayResult counts;
  std::map<std::string, std::vector<int64_t>> latency_ns;  // per op, per call
};

// The outcome of one key, into `t`.
void Count(const std::string& op, const Status& s, uint64_t bytes, Tally* t) {
  ReplayResult& r = t->counts;
  const bool read = kReads.count(op) != 0;
  if (read) ++r.reads;
  switch (s.code()) {
    case StatusCode::kOk:
      if (read) ++r.hits;
      if (op == "put" || op == "batch_put") ++r.stored;
      r.value_bytes += bytes;
      break;
    case StatusCode::kNotFound:
      break;
    case StatusCode::kBusy:
      if (op == "put" || op == "batch_put") {
        ++r.shed;
        break;
      }
      [[fallthrough]];
    default:
      ++r.errors;
      ReportError("replay " + op, s, r.errors - 1);
  }
}

// Issues `call` as the call it was logged as.
void Issue(Client& client, const AccessLogFile& log, const ReplayCall& call, const std::vector<std::string>& keys,
           std::span<const uint8_t> zeros, std::vector<std::vector<uint8_t>>* buffers, Tally* t) {
  const std::string& op = call.op;
  std::vector<std::string_view> views(keys.begin(), keys.end());
  const auto value_of = [&](size_t i) { return zeros.first(std::min<size_t>(call.sizes[i], zeros.size())); };
  if (op == "get") {
    Result<std::vector<uint8_t>> r = client.Get(views[0]);
    Count(op, r.status(), r.ok() ? r->size() : 0, t);
  } else if (op == "put") {
    Count(op, client.Put(views[0], value_of(0)), call.sizes[0], t);
  } else if (op == "exists") {
    Result<bool> r = client.Exists(views[0]);
    Count(op, r.ok() && !*r ? NotFound("") : r.status(), 0, t);
  } else if (op == "stat") {
    Count(op, client.ValueSize(views[0]).status(), 0, t);
  } else if (op == "delete") {
    if (views.size() == 1) {
      Count(op, client.Delete(views[0]), 0, t);
    } else {
      for (const Status& s : client.BatchDelete(views).statuses) Count(op, s, 0, t);
    }
  } else if (op == "match_prefix") {
    Result<size_t> n = client.MatchPrefix(views);
    for (size_t i = 0; i < views.size(); ++i) {
      Count(op, !n.ok() ? n.status() : i < *n ? Status::Ok() : NotFound(""), 0, t);
    }
  } else if (op == "batch_put") {
    std::vector<std::span<const uint8_t>> values;
    for (size_t i = 0; i < views.size(); ++i) values.push_back(value_of(i));
    BatchResult r = client.BatchPut(views, values);
    for (size_t i = 0; i < views.size(); ++i) Count(op, r.statuses[i], call.sizes[i], t);
  } else if (op == "batch_exists") {
    for (const Status& s : client.BatchExists(views).statuses) Count(op, s, 0, t);
  } else if (op == "batch_get") {
    if (buffers->size() < views.size()) buffers->resize(views.size());
    std::vector<std::span<uint8_t>> spans;
    for (size_t i = 0; i < views.size(); ++i) {
      auto known = log.value_bytes.find(call.key_hashes[i]);
      (*buffers)[i].resize(known == log.value_bytes.end() ? 0 : known->second);
      spans.push_back((*buffers)[i]);
    }
    std::vector<size_t> sizes;
    BatchResult r = client.BatchGetInto(views, spans, &sizes);
    for (size_t i = 0; i < views.size(); ++i) {
      Count(op, r.statuses[i], r.statuses[i].ok() && i < sizes.size() ? sizes[i] : 0, t);
    }
  }
}

}  // namespace

Result<AccessLogFile> ParseAccessLog(std::string_view text) {
  AccessLogFile file;
  double last_call = -1;
  size_t number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Result<JsonValue> json = ParseJson(line);
    if (!json.ok() || json->type != JsonValue::Type::kObject) {
      return InvalidArgument("line " + std::to_string(number) + ": not a JSON object" +
                             (json.ok() ? std::string() : ": " + json.status().message()));
    }
    MEMKV_ASSIGN_OR_RETURN(std::string op, StringField(*json, "op", number));
    MEMKV_ASSIGN_OR_RETURN(std::string hash, StringField(*json, "key_hash", number));
    MEMKV_ASSIGN_OR_RETURN(std::string outcome, StringField(*json, "outcome", number));
    MEMKV_ASSIGN_OR_RETURN(double time, NumberField(*json, "time", number));
    MEMKV_ASSIGN_OR_RETURN(double size, NumberField(*json, "size", number));
    MEMKV_ASSIGN_OR_RETURN(double call, NumberField(*json, "call", number));
    if (kOps.count(op) == 0) {
      return InvalidArgument("line " + std::to_string(number) + ": op '" + op + "' is not one the replay issues");
    }
    if (hash.empty()) return InvalidArgument("line " + std::to_string(number) + ": empty key_hash");
    // A call's lines come together; a new number (or op) starts the next call.
    if (file.calls.empty() || call != last_call || file.calls.back().op != op) {
      file.calls.push_back(ReplayCall{time, op, {}, {}, {}});
      last_call = call;
    }
    ReplayCall& c = file.calls.back();
    c.key_hashes.push_back(hash);
    c.sizes.push_back(static_cast<uint64_t>(size));
    c.outcomes.push_back(outcome);
    uint64_t& known = file.value_bytes[hash];
    known = std::max(known, static_cast<uint64_t>(size));
  }
  // Lines are written in the order calls end; replay them in the order they began.
  std::stable_sort(file.calls.begin(), file.calls.end(),
                   [](const ReplayCall& a, const ReplayCall& b) { return a.time_s < b.time_s; });
  return file;
}

ReplayResult RunReplay(Client& client, const AccessLogFile& log, const ReplayPlan& plan) {
  ReplayResult result;
  if (log.calls.empty()) return result;
  uint64_t largest = 0;
  for (const auto& [hash, bytes] : log.value_bytes) largest = std::max(largest, bytes);
  const std::vector<uint8_t> zeros(largest, 0x5a);
  const double t0 = log.calls.front().time_s;
  result.logged_seconds = log.calls.back().time_s - t0;
  std::atomic<size_t> next{0};
  std::vector<Tally> tallies(std::max<uint32_t>(plan.threads, 1));
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (size_t th = 0; th < tallies.size(); ++th) {
    threads.emplace_back([&, th] {
      Tally& t = tallies[th];
      std::vector<std::vector<uint8_t>> buffers;
      std::vector<std::string> keys;
      for (size_t i = next++; i < log.calls.size(); i = next++) {
        const ReplayCall& call = log.calls[i];
        if (plan.speed > 0) {
          const auto due = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                       std::chrono::duration<double>((call.time_s - t0) / plan.speed));
          const auto now = std::chrono::steady_clock::now();
          if (now < due) {
            std::this_thread::sleep_until(due);  // the log's pacing, not a wait for a condition
          } else if (now - due > std::chrono::milliseconds(1)) {
            ++t.counts.late;
          }
        }
        keys.clear();
        for (const std::string& hash : call.key_hashes) keys.push_back(plan.key_prefix + "/" + hash);
        const auto began = std::chrono::steady_clock::now();
        Issue(client, log, call, keys, zeros, &buffers, &t);
        t.latency_ns[call.op].push_back(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began).count());
        ++t.counts.calls;
        t.counts.keys += keys.size();
        t.counts.ops[call.op].calls += 1;
        t.counts.ops[call.op].keys += keys.size();
        if (kReads.count(call.op) != 0) {
          for (const std::string& outcome : call.outcomes) {
            ++t.counts.logged_reads;
            if (outcome == "hit") ++t.counts.logged_hits;
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::map<std::string, std::vector<int64_t>> latency_ns;
  for (Tally& t : tallies) {
    const ReplayResult& c = t.counts;
    result.calls += c.calls;
    result.keys += c.keys;
    result.value_bytes += c.value_bytes;
    result.reads += c.reads;
    result.hits += c.hits;
    result.logged_reads += c.logged_reads;
    result.logged_hits += c.logged_hits;
    result.stored += c.stored;
    result.shed += c.shed;
    result.errors += c.errors;
    result.late += c.late;
    for (const auto& [op, s] : c.ops) {
      result.ops[op].calls += s.calls;
      result.ops[op].keys += s.keys;
    }
    for (auto& [op, ns] : t.latency_ns) latency_ns[op].insert(latency_ns[op].end(), ns.begin(), ns.end());
  }
  for (auto& [op, ns] : latency_ns) {
    std::sort(ns.begin(), ns.end());
    ReplayOpStats& s = result.ops[op];
    s.p50_us = PercentileUs(ns, 0.5);
    s.p99_us = PercentileUs(ns, 0.99);
    s.p999_us = PercentileUs(ns, 0.999);
  }
  return result;
}

void PrintReplay(std::FILE* out, const ReplayResult& r) {
  const double secs = r.seconds > 0 ? r.seconds : 1;
  std::fprintf(out, "replay: %llu calls, %llu keys in %.3f s (logged over %.3f s); %llu calls late\n",
               static_cast<unsigned long long>(r.calls), static_cast<unsigned long long>(r.keys), r.seconds,
               r.logged_seconds, static_cast<unsigned long long>(r.late));
  std::fprintf(out, "throughput: %.1f calls/s, %.1f keys/s, %.2f MiB/s of values\n", double(r.calls) / secs,
               double(r.keys) / secs, double(r.value_bytes) / secs / (1 << 20));
  std::fprintf(out, "hit rate: %.4f of %llu reads (logged: %.4f of %llu)\n", r.HitRate(),
               static_cast<unsigned long long>(r.reads), r.LoggedHitRate(),
               static_cast<unsigned long long>(r.logged_reads));
  std::fprintf(out, "stored %llu, shed %llu, errors %llu\n\n", static_cast<unsigned long long>(r.stored),
               static_cast<unsigned long long>(r.shed), static_cast<unsigned long long>(r.errors));
  std::fprintf(out, "%-14s %10s %10s %10s %10s %10s\n", "op", "calls", "keys", "p50 us", "p99 us", "p99.9 us");
  for (const auto& [op, s] : r.ops) {
    std::fprintf(out, "%-14s %10llu %10llu %10.1f %10.1f %10.1f\n", op.c_str(),
                 static_cast<unsigned long long>(s.calls), static_cast<unsigned long long>(s.keys), s.p50_us,
                 s.p99_us, s.p999_us);
  }
}

std::string ReplayJson(const ReplayResult& r) {
  JsonWriter w;
  w.BeginObject();
  w.Key("calls").Number(r.calls).Key("keys").Number(r.keys).Key("value_bytes").Number(r.value_bytes);
  w.Key("seconds").Number(r.seconds).Key("logged_seconds").Number(r.logged_seconds).Key("late").Number(r.late);
  w.Key("reads").Number(r.reads).Key("hits").Number(r.hits).Key("hit_rate").Number(r.HitRate());
  w.Key("logged_reads").Number(r.logged_reads).Key("logged_hits").Number(r.logged_hits);
  w.Key("logged_hit_rate").Number(r.LoggedHitRate());
  w.Key("stored").Number(r.stored).Key("shed").Number(r.shed).Key("errors").Number(r.errors);
  w.Key("ops").BeginObject();
  for (const auto& [op, s] : r.ops) {
    w.Key(op).BeginObject();
    w.Key("calls").Number(s.calls).Key("keys").Number(s.keys);
    w.Key("p50_us").Number(s.p50_us).Key("p99_us").Number(s.p99_us).Key("p999_us").Number(s.p999_us);
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  const std::string& text = w.text();
  return text.substr(1, text.size() - 2);  // the members, for the caller's object
}

}  // namespace memkv::bench
