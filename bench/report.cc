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

std::string Ratio(const Row& r) {
  if (!r.memkv || !r.raw || r.raw->MiBPerSecond() <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", r.memkv->MiBPerSecond() / r.raw->MiBPerSecond());
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
  char text[64];
  std::snprintf(text, sizeof(text), "%.0f / %.0f / %.0f", c->p50_us, c->p99_us, c->p999_us);
  return text;
}

uint64_t Errors(const Row& r) {
  return (r.memkv ? r.memkv->errors : 0) + (r.raw ? r.raw->errors : 0) + r.verify_errors;
}

void PrintTable(std::FILE* out, const std::string& op, const std::vector<Row>& rows) {
  std::fprintf(out, "\n%s (MiB/s; latency p50 / p99 / p99.9 in us)\n", op.c_str());
  std::fprintf(out, "%9s %5s %11s %11s %6s %24s %24s %6s\n", "size", "conns", "memkv", "raw", "ratio",
               "memkv latency", "raw latency", "errors");
  for (const Row& r : rows) {
    if (r.op != op) continue;
    std::fprintf(out, "%9s %5u %11s %11s %6s %24s %24s %6" PRIu64 "\n", FormatValueSize(r.size_bytes).c_str(),
                 r.conns, Mibs(r.memkv).c_str(), Mibs(r.raw).c_str(), Ratio(r).c_str(),
                 Latencies(r.memkv).c_str(), Latencies(r.raw).c_str(), Errors(r));
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

std::string JsonCell(const std::optional<CellResult>& c) {
  if (!c) return "null";
  std::ostringstream o;
  o << "{\"mib_per_s\": " << c->MiBPerSecond() << ", \"ops_per_s\": " << c->OpsPerSecond()
    << ", \"ops\": " << c->ops << ", \"errors\": " << c->errors << ", \"bytes\": " << c->bytes
    << ", \"seconds\": " << c->seconds << ", \"p50_us\": " << c->p50_us << ", \"p99_us\": " << c->p99_us
    << ", \"p999_us\": " << c->p999_us << "}";
  return o.str();
}

std::string JsonNumbers(const std::vector<double>& v) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
  o << "]";
  return o.str();
}

std::string JsonRow(const Row& r) {
  std::ostringstream o;
  o << "    {\"op\": " << JsonString(r.op) << ", \"size_bytes\": " << r.size_bytes
    << ", \"conns\": " << r.conns << ", \"ratio\": " << (Ratio(r) == "-" ? "null" : Ratio(r))
    << ",\n     \"memkv\": " << JsonCell(r.memkv) << ",\n     \"raw\": " << JsonCell(r.raw)
    << ",\n     \"memkv_mib_per_s_all\": " << JsonNumbers(r.memkv_mibs)
    << ", \"raw_mib_per_s_all\": " << JsonNumbers(r.raw_mibs)
    << ",\n     \"working_set_keys\": " << r.working_set_keys << ", \"keys_verified\": " << r.keys_verified
    << ", \"verify_errors\": " << r.verify_errors
    << ", \"memkv_connections_opened\": " << r.connections_opened << "}";
  return o.str();
}

}  // namespace

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

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError("cannot open '" + path + "' for writing");
  out << text;
  out.close();
  if (!out) return IoError("writing '" + path + "' failed");
  return Status::Ok();
}

void PrintFacts(std::FILE* out, const RunFacts& f) {
  PrintMachine(out, "memkv-bench", f);
  std::fprintf(out, "target: %s   pool %s (%s%s)   %.2f s per cell, median of %u\n", f.target.c_str(),
               FormatSize(f.pool_bytes).c_str(), f.pool_warmed ? "warmed" : "not warmed",
               f.prefault ? "" : ", not prefaulted", f.seconds_per_cell, f.repeat);
  std::fprintf(out,
               "reference: raw TCP request/response (8-byte length + value), blocking sockets, "
               "TCP_NODELAY, a thread per connection, separate process\n");
}

void PrintTables(std::FILE* out, const std::vector<Row>& rows) {
  std::vector<std::string> ops;
  for (const Row& r : rows) {
    if (std::find(ops.begin(), ops.end(), r.op) == ops.end()) ops.push_back(r.op);
  }
  for (const std::string& op : ops) PrintTable(out, op, rows);
}

void PrintProgress(std::FILE* out, size_t done, size_t total, const Row& row) {
  std::fprintf(out, "[%zu/%zu] %s %s x%u: memkv %s MiB/s, raw %s MiB/s (%sx)\n", done, total, row.op.c_str(),
               FormatValueSize(row.size_bytes).c_str(), row.conns, Mibs(row.memkv).c_str(), Mibs(row.raw).c_str(),
               Ratio(row).c_str());
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
      << ",\n  \"pool_bytes\": " << f.pool_bytes
      << ",\n  \"pool_warmed\": " << (f.pool_warmed ? "true" : "false")
      << ",\n  \"prefault\": " << (f.prefault ? "true" : "false")
      << ",\n  \"reference\": \"raw TCP request/response, blocking sockets, TCP_NODELAY, thread per "
         "connection\""
      << ",\n  \"total_errors\": " << total_errors << ",\n  \"auth_cost\": " << auth_cost_json
      << ",\n  \"cells\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) out << JsonRow(rows[i]) << (i + 1 < rows.size() ? ",\n" : "\n");
  out << "  ]\n}\n";
  out.close();
  if (!out) return IoError("writing '" + path + "' failed");
  return Status::Ok();
}

}  // namespace memkv::bench
