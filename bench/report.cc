#include "bench/report.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cinttypes>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/units.h"
#include "bench/flags.h"

namespace memkv::bench {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t first = s.find_first_not_of(" \t");
  return first == std::string::npos ? "" : s.substr(first);
}

// First line of a shell command's output, or "" when it fails.
std::string FirstLineOf(const std::string& command) {
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  char line[256] = {};
  const bool got = std::fgets(line, sizeof(line), pipe) != nullptr;
  const int rc = ::pclose(pipe);
  return got && rc == 0 ? Trim(line) : "";
}

// "1a2b3c4", with "+modified" when tracked files differ from that commit.
std::string GitCommit(const std::string& source_dir) {
  const std::string git = "git -C '" + source_dir + "' ";
  std::string commit = FirstLineOf(git + "rev-parse --short HEAD 2>/dev/null");
  if (commit.empty()) return "unknown";
  if (!FirstLineOf(git + "status --porcelain --untracked-files=no 2>/dev/null").empty()) commit += "+modified";
  return commit;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return Trim(line.substr(line.find(':') + 1));
  }
  return "unknown";
}

std::string Kernel() {
  utsname u{};
  if (::uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

std::string NowUtc() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string Ratio(const std::optional<CellResult>& a, const std::optional<CellResult>& b) {
  if (!a || !b || b->MiBPerSecond() <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", a->MiBPerSecond() / b->MiBPerSecond());
  return text;
}

std::string Mibs(const std::optional<CellResult>& c) {
  if (!c) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", c->MiBPerSecond());
  return text;
}

std::string Latencies(const std::optional<CellResult>& c) {
  if (!c || c->ops == 0) return "-";
  char text[96];
  std::snprintf(text, sizeof(text), "%.0f / %.0f / %.0f / %.0f", c->p50_us, c->p99_us, c->p999_us, c->p9999_us);
  return text;
}

std::string CpuPerGiB(const std::optional<CellResult>& c) {
  if (!c) return "-";
  const std::optional<double> cpu = c->CpuPerGiB();
  if (!cpu) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", *cpu);
  return text;
}

// One column of a table: the group it is printed under, its name, its width.
struct Column {
  const char* group;
  const char* name;
  int width;
};

// Right-aligned columns under group headings ("MiB/s", "cpu s/GiB", ...);
// a group heading is centred over its run of columns.
void PrintHeader(std::FILE* out, const std::vector<Column>& columns) {
  std::string groups, names;
  for (size_t i = 0; i < columns.size();) {
    size_t j = i;
    int span = 0;
    for (; j < columns.size() && std::string_view(columns[j].group) == columns[i].group; ++j) {
      span += columns[j].width + 1;
    }
    const std::string label = columns[i].group;
    const int pad = std::max(0, span - 1 - int(label.size()));
    groups += std::string(size_t(pad / 2 + 1), ' ') + label + std::string(size_t(pad - pad / 2), ' ');
    i = j;
  }
  for (const Column& c : columns) {
    char text[64];
    std::snprintf(text, sizeof(text), " %*s", c.width, c.name);
    names += text;
  }
  while (!groups.empty() && groups.back() == ' ') groups.pop_back();
  std::fprintf(out, "%s\n%s\n", groups.c_str(), names.c_str());
}

void PrintTable(std::FILE* out, const std::string& op, const std::vector<Row>& rows, bool redis) {
  uint32_t max_batch = 1;
  for (const Row& r : rows) max_batch = std::max(max_batch, r.batch);
  const bool batched = max_batch > 1;
  std::fprintf(out, "\n%s (MiB/s; cpu s/GiB: client + server CPU seconds per GiB moved; latency p50 / p99 / p99.9 / "
               "p99.99 in us, %s)\n",
               op.c_str(), batched ? "per call of the batch column's values" : "per call");
  constexpr int kLatencyWidth = 31;
  std::vector<Column> columns = {{"", "size", 9}, {"", "conns", 5}};
  if (batched) columns.push_back({"", "batch", 5});
  columns.insert(columns.end(), {{"MiB/s", "memkv", 10}, {"MiB/s", "raw", 10}});
  if (redis) columns.push_back({"MiB/s", "redis", 10});
  columns.push_back({"ratio", "m/raw", 6});
  if (redis) columns.push_back({"ratio", "m/redis", 7});
  columns.insert(columns.end(), {{"cpu s/GiB", "memkv", 6}, {"cpu s/GiB", "raw", 6}});
  if (redis) columns.push_back({"cpu s/GiB", "redis", 6});
  columns.insert(columns.end(), {{"", "memkv latency", kLatencyWidth}, {"", "raw latency", kLatencyWidth}});
  if (redis) columns.push_back({"", "redis latency", kLatencyWidth});
  columns.push_back({"", "errors", 6});
  PrintHeader(out, columns);
  for (const Row& r : rows) {
    if (r.op != op) continue;
    std::vector<std::string> cells = {FormatValueSize(r.size_bytes), std::to_string(r.conns)};
    if (batched) cells.push_back(std::to_string(r.batch));
    cells.insert(cells.end(), {Mibs(r.memkv), Mibs(r.raw)});
    if (redis) cells.push_back(Mibs(r.redis));
    cells.push_back(Ratio(r.memkv, r.raw));
    if (redis) cells.push_back(Ratio(r.memkv, r.redis));
    cells.insert(cells.end(), {CpuPerGiB(r.memkv), CpuPerGiB(r.raw)});
    if (redis) cells.push_back(CpuPerGiB(r.redis));
    cells.insert(cells.end(), {Latencies(r.memkv), Latencies(r.raw)});
    if (redis) cells.push_back(Latencies(r.redis));
    cells.push_back(std::to_string(r.Errors()));
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      char text[128];
      std::snprintf(text, sizeof(text), " %*s", columns[i].width, cells[i].c_str());
      line += text;
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\u%04x", c);
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonOptional(std::optional<double> v) {
  if (!v) return "null";
  std::ostringstream o;
  o << *v;
  return o.str();
}

std::string JsonCell(const std::optional<CellResult>& c) {
  if (!c) return "null";
  std::ostringstream o;
  o << "{\"mib_per_s\": " << c->MiBPerSecond() << ", \"ops_per_s\": " << c->OpsPerSecond()
    << ", \"ops\": " << c->ops << ", \"errors\": " << c->errors << ", \"bytes\": " << c->bytes
    << ", \"seconds\": " << c->seconds << ", \"p50_us\": " << c->p50_us << ", \"p99_us\": " << c->p99_us
    << ", \"p999_us\": " << c->p999_us << ", \"p9999_us\": " << c->p9999_us
    << ", \"client_cpu_s\": " << c->client_cpu_s << ", \"server_cpu_s\": " << JsonOptional(c->server_cpu_s)
    << ", \"cpu_s_per_gib\": " << JsonOptional(c->CpuPerGiB())
    << ", \"client_cpu_s_per_gib\": " << JsonOptional(c->ClientCpuPerGiB())
    << ", \"server_cpu_s_per_gib\": " << JsonOptional(c->ServerCpuPerGiB()) << "}";
  return o.str();
}

std::string JsonMibs(const std::vector<CellResult>& cells) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < cells.size(); ++i) o << (i ? ", " : "") << cells[i].MiBPerSecond();
  o << "]";
  return o.str();
}

std::string JsonCells(const std::vector<CellResult>& cells) {
  std::string out = "[";
  for (size_t i = 0; i < cells.size(); ++i) out += (i ? ",\n        " : "") + JsonCell(cells[i]);
  return out + "]";
}

std::string JsonRatio(const std::optional<CellResult>& a, const std::optional<CellResult>& b) {
  const std::string r = Ratio(a, b);
  return r == "-" ? "null" : r;
}

std::string JsonRow(const Row& r, bool redis) {
  std::ostringstream o;
  o << "    {\"op\": " << JsonString(r.op) << ", \"size_bytes\": " << r.size_bytes
    << ", \"conns\": " << r.conns << ", \"batch\": " << r.batch << ", \"ratio\": " << JsonRatio(r.memkv, r.raw);
  if (redis) o << ", \"ratio_redis\": " << JsonRatio(r.memkv, r.redis);
  o << ",\n     \"memkv\": " << JsonCell(r.memkv) << ",\n     \"raw\": " << JsonCell(r.raw);
  if (redis) o << ",\n     \"redis\": " << JsonCell(r.redis);
  o << ",\n     \"memkv_mib_per_s_all\": " << JsonMibs(r.memkv_all)
    << ", \"raw_mib_per_s_all\": " << JsonMibs(r.raw_all);
  if (redis) o << ", \"redis_mib_per_s_all\": " << JsonMibs(r.redis_all);
  o << ",\n     \"repetitions\": {\"memkv\": " << JsonCells(r.memkv_all)
    << ",\n       \"raw\": " << JsonCells(r.raw_all);
  if (redis) o << ",\n       \"redis\": " << JsonCells(r.redis_all);
  o << "},\n     \"working_set_keys\": " << r.working_set_keys << ", \"keys_verified\": " << r.keys_verified
    << ", \"verify_errors\": " << r.verify_errors
    << ", \"memkv_connections_opened\": " << r.connections_opened << "}";
  return o.str();
}

}  // namespace

uint64_t Row::Errors() const {
  uint64_t errors = verify_errors;
  for (const std::optional<CellResult>* c : {&memkv, &raw, &redis}) errors += *c ? (*c)->errors : 0;
  return errors;
}

RunFacts GatherFacts(const std::string& source_dir, const std::string& build_type) {
  RunFacts f;
  f.commit = GitCommit(source_dir);
  f.build_type = build_type.empty() ? "unknown" : build_type;
  f.cpu_model = CpuModel();
  f.cores = std::thread::hardware_concurrency();
  f.kernel = Kernel();
  f.started_utc = NowUtc();
  return f;
}

void PrintMachine(std::FILE* out, const std::string& program, const RunFacts& f) {
  std::fprintf(out, "%s  commit %s  build %s  started %s\n", program.c_str(), f.commit.c_str(),
               f.build_type.c_str(), f.started_utc.c_str());
  std::fprintf(out, "cpu: %s, %u cores   kernel: %s   transport: %s\n", f.cpu_model.c_str(), f.cores,
               f.kernel.c_str(), f.transport.c_str());
}

void WriteMachineJson(JsonWriter& w, const RunFacts& f) {
  w.Key("commit").String(f.commit)
      .Key("build_type").String(f.build_type)
      .Key("cpu_model").String(f.cpu_model)
      .Key("cores").Number(uint64_t(f.cores))
      .Key("kernel").String(f.kernel)
      .Key("transport").String(f.transport)
      .Key("started_utc").String(f.started_utc);
}

void PrintFacts(std::FILE* out, const RunFacts& f) {
  PrintMachine(out, "memkv-bench", f);
  std::fprintf(out, "target: %s   storage %s   pool %s (%s%s)   %.2f s per cell, median of %u\n",
               f.target.c_str(), f.storage.c_str(), FormatSize(f.pool_bytes).c_str(),
               f.pool_warmed ? "warmed" : "not warmed", f.prefault ? "" : ", not prefaulted", f.seconds_per_cell,
               f.repeat);
  std::fprintf(out,
               "reference: raw TCP request/response (8-byte length + value), blocking sockets, "
               "TCP_NODELAY, a thread per connection, separate process%s\n",
               f.batch > 1 ? "; requests pipelined per call" : "");
  if (!f.redis.empty()) {
    std::fprintf(out,
                 "peer: Redis %s, %s, --save '' %s, one RESP connection per thread%s\n", f.redis_version.c_str(),
                 f.redis.c_str(), f.redis_persistence.c_str(), f.batch > 1 ? ", commands pipelined per call" : "");
  }
  if (f.batch > 1) {
    std::fprintf(out,
                 "batch: up to %u values per call (memkv BatchPut / BatchGetInto; at most 16 MiB and the working "
                 "set per call); MiB/s counts every value, latency is per call\n",
                 f.batch);
  }
  std::fprintf(out, "cpu s/GiB: client = this process (getrusage), server = /proc/<pid>/stat of the server%s\n",
               f.target.rfind("spawned", 0) == 0 ? "" : " ('-' for memkv: --servers are not ours to read)");
}

void PrintTables(std::FILE* out, const std::vector<Row>& rows, bool redis) {
  std::vector<std::string> ops;
  for (const Row& r : rows) {
    if (std::find(ops.begin(), ops.end(), r.op) == ops.end()) ops.push_back(r.op);
  }
  for (const std::string& op : ops) PrintTable(out, op, rows, redis);
}

void PrintProgress(std::FILE* out, size_t done, size_t total, const Row& row) {
  std::string redis;
  if (row.redis || !row.redis_all.empty()) {
    redis = ", redis " + Mibs(row.redis) + " MiB/s (" + Ratio(row.memkv, row.redis) + "x)";
  }
  std::fprintf(out, "[%zu/%zu] %s %s x%u: memkv %s MiB/s, raw %s MiB/s (%sx)%s\n", done, total, row.op.c_str(),
               FormatValueSize(row.size_bytes).c_str(), row.conns, Mibs(row.memkv).c_str(), Mibs(row.raw).c_str(),
               Ratio(row.memkv, row.raw).c_str(), redis.c_str());
}

Status WriteJson(const std::string& path, const RunFacts& f, const std::vector<Row>& rows,
                 const std::string& auth_cost_json, uint64_t total_errors) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError("cannot open '" + path + "' for writing");
  out << "{\n  \"commit\": " << JsonString(f.commit) << ",\n  \"build_type\": " << JsonString(f.build_type)
      << ",\n  \"cpu_model\": " << JsonString(f.cpu_model) << ",\n  \"cores\": " << f.cores
      << ",\n  \"kernel\": " << JsonString(f.kernel) << ",\n  \"transport\": " << JsonString(f.transport)
      << ",\n  \"target\": " << JsonString(f.target) << ",\n  \"started_utc\": " << JsonString(f.started_utc)
      << ",\n  \"seconds_per_cell\": " << f.seconds_per_cell << ",\n  \"repeat\": " << f.repeat
      << ",\n  \"pool_bytes\": " << f.pool_bytes << ",\n  \"storage\": " << JsonString(f.storage)
      << ",\n  \"pool_warmed\": " << (f.pool_warmed ? "true" : "false")
      << ",\n  \"prefault\": " << (f.prefault ? "true" : "false")
      << ",\n  \"reference\": \"raw TCP request/response, blocking sockets, TCP_NODELAY, thread per "
         "connection\""
      << ",\n  \"batch\": " << f.batch << ",\n  \"latency_per\": \"call\""
      << ",\n  \"redis_version\": " << (f.redis.empty() ? "null" : JsonString(f.redis_version))
      << ",\n  \"redis\": " << (f.redis.empty() ? "null" : JsonString(f.redis))
      << ",\n  \"redis_persistence\": " << (f.redis.empty() ? "null" : JsonString(f.redis_persistence))
      << ",\n  \"cpu\": \"client: getrusage(RUSAGE_SELF) over the timed part; server: utime+stime of "
         "/proc/<pid>/stat; per GiB of values moved\""
      << ",\n  \"total_errors\": " << total_errors << ",\n  \"auth_cost\": " << auth_cost_json
      << ",\n  \"cells\": [\n";
  const bool redis = !f.redis.empty();
  for (size_t i = 0; i < rows.size(); ++i) out << JsonRow(rows[i], redis) << (i + 1 < rows.size() ? ",\n" : "\n");
  out << "  ]\n}\n";
  out.close();
  if (!out) return IoError("writing '" + path + "' failed");
  return Status::Ok();
}

}  // namespace memkv::bench
