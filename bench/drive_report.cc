#include "bench/drive_report.h"

#include <algorithm>
#include <cinttypes>
#include <fstream>
#include <limits>
#include <sstream>

#include "base/units.h"

namespace memkv::bench {
namespace {

using Reference = std::optional<FioResult> DriveRow::*;

double Ratio(const DriveRow& r, Reference ref) {
  const std::optional<FioResult>& f = r.*ref;
  if (!r.memkv || !f || f->bytes_per_s <= 0) return -1;
  return r.memkv->MiBPerSecond() / f->MiBPerSecond();
}

std::string Fixed(double v, int decimals) {
  if (v < 0) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", decimals, v);
  return text;
}

std::string FioMibs(const std::optional<FioResult>& f) { return f ? Fixed(f->MiBPerSecond(), 1) : "-"; }

std::string Latency(const std::optional<CellResult>& c) {
  if (!c || c->ops == 0) return "-";
  return Fixed(c->p50_us, 0) + " / " + Fixed(c->p99_us, 0);
}

std::string PutsPerCommit(const DriveRow& r) {
  if (!r.memkv || r.journal_commits == 0) return "-";
  return Fixed(double(r.memkv->ops) / double(r.journal_commits), 1);
}

void PrintPutTable(std::FILE* out, const std::vector<DriveRow>& rows) {
  std::fprintf(out, "\nput (MiB/s; ratio = memkv / fio; memkv latency p50 / p99 in us; puts per journal commit)\n");
  std::fprintf(out, "%9s %4s %10s %9s %17s %8s %10s %6s %12s %6s %6s\n", "size", "qd", "memkv", "ops/s", "latency",
               "p/commit", "fio write", "ratio", "fio+fdsync", "ratio", "errors");
  for (const DriveRow& r : rows) {
    if (r.op != "put") continue;
    std::fprintf(out, "%9s %4u %10s %9s %17s %8s %10s %6s %12s %6s %6" PRIu64 "\n", FormatSize(r.size_bytes).c_str(),
                 r.queue_depth, r.memkv ? Fixed(r.memkv->MiBPerSecond(), 1).c_str() : "-",
                 r.memkv ? Fixed(r.memkv->OpsPerSecond(), 0).c_str() : "-", Latency(r.memkv).c_str(),
                 PutsPerCommit(r).c_str(), FioMibs(r.fio).c_str(), Fixed(Ratio(r, &DriveRow::fio), 2).c_str(),
                 FioMibs(r.fio_sync).c_str(), Fixed(Ratio(r, &DriveRow::fio_sync), 2).c_str(), r.Errors());
  }
}

// With --each-sync: memkv's puts beside the per-put durable references.
void PrintEachSyncTable(std::FILE* out, const std::vector<DriveRow>& rows) {
  std::fprintf(out,
               "\nput against the per-put durable references (MiB/s; ratio = memkv / reference; each-sync: a "
               "value's write, then its own fdatasync; +record: with a 4 KiB record block of its own beside it)\n");
  std::fprintf(out, "%9s %4s %10s %10s %6s %10s %6s %12s\n", "size", "qd", "memkv", "each-sync", "ratio", "+record",
               "ratio", "each/fdsync");
  for (const DriveRow& r : rows) {
    if (r.op != "put") continue;
    const double each_vs_fio = r.each_sync && r.fio_sync && r.fio_sync->bytes_per_s > 0
                                   ? r.each_sync->bytes_per_s / r.fio_sync->bytes_per_s
                                   : -1;
    std::fprintf(out, "%9s %4u %10s %10s %6s %10s %6s %12s\n", FormatSize(r.size_bytes).c_str(), r.queue_depth,
                 r.memkv ? Fixed(r.memkv->MiBPerSecond(), 1).c_str() : "-", FioMibs(r.each_sync).c_str(),
                 Fixed(Ratio(r, &DriveRow::each_sync), 2).c_str(), FioMibs(r.each_sync_record).c_str(),
                 Fixed(Ratio(r, &DriveRow::each_sync_record), 2).c_str(), Fixed(each_vs_fio, 2).c_str());
  }
}

void PrintGetTable(std::FILE* out, const std::vector<DriveRow>& rows) {
  std::fprintf(out, "\nget (MiB/s; ratio = memkv / fio; memkv latency p50 / p99 in us)\n");
  std::fprintf(out, "%9s %4s %10s %9s %17s %10s %6s %6s\n", "size", "qd", "memkv", "ops/s", "latency", "fio read",
               "ratio", "errors");
  for (const DriveRow& r : rows) {
    if (r.op != "get") continue;
    std::fprintf(out, "%9s %4u %10s %9s %17s %10s %6s %6" PRIu64 "\n", FormatSize(r.size_bytes).c_str(), r.queue_depth,
                 r.memkv ? Fixed(r.memkv->MiBPerSecond(), 1).c_str() : "-",
                 r.memkv ? Fixed(r.memkv->OpsPerSecond(), 0).c_str() : "-", Latency(r.memkv).c_str(),
                 FioMibs(r.fio).c_str(), Fixed(Ratio(r, &DriveRow::fio), 2).c_str(), r.Errors());
  }
}

// "put vs fio write: 0.41 .. 0.97 (median 0.72) over 15 cells; 3 at or above 0.9"
void PrintRatioRange(std::FILE* out, const std::vector<DriveRow>& rows, const char* op, Reference ref,
                     const char* label) {
  std::vector<double> ratios;
  for (const DriveRow& r : rows) {
    if (r.op == op && Ratio(r, ref) >= 0) ratios.push_back(Ratio(r, ref));
  }
  if (ratios.empty()) return;
  std::sort(ratios.begin(), ratios.end());
  const auto at_target = std::count_if(ratios.begin(), ratios.end(), [](double x) { return x >= 0.9; });
  std::fprintf(out, "%s vs %s: %.2f .. %.2f (median %.2f) over %zu cells; %td at or above 0.90\n", op, label,
               ratios.front(), ratios.back(), ratios[(ratios.size() - 1) / 2], ratios.size(), at_target);
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

std::string JsonMemkv(const DriveRow& r) {
  if (!r.memkv) return "null";
  const CellResult& c = *r.memkv;
  std::ostringstream o;
  o << "{\"mib_per_s\": " << c.MiBPerSecond() << ", \"gib_per_s\": " << c.MiBPerSecond() / 1024
    << ", \"ops_per_s\": " << c.OpsPerSecond() << ", \"ops\": " << c.ops << ", \"errors\": " << c.errors
    << ", \"bytes\": " << c.bytes << ", \"seconds\": " << c.seconds << ", \"p50_us\": " << c.p50_us
    << ", \"p99_us\": " << c.p99_us << ", \"p999_us\": " << c.p999_us;
  if (r.op == "put") o << ", \"journal_commits\": " << r.journal_commits;
  o << "}";
  return o.str();
}

std::string JsonFio(const std::optional<FioResult>& f) {
  if (!f) return "null";
  std::ostringstream o;
  o << "{\"mib_per_s\": " << f->MiBPerSecond() << ", \"gib_per_s\": " << f->MiBPerSecond() / 1024
    << ", \"ops_per_s\": " << f->iops << ", \"bytes\": " << f->io_bytes << ", \"seconds\": " << f->runtime_s
    << ", \"clat_p50_us\": " << f->clat_p50_us << ", \"clat_p99_us\": " << f->clat_p99_us
    << ", \"clat_p999_us\": " << f->clat_p999_us << ", \"sync_p50_us\": " << f->sync_p50_us
    << ", \"sync_p99_us\": " << f->sync_p99_us << ",\n       \"command\": " << JsonString(f->command) << "}";
  return o.str();
}

std::string JsonNumbers(const std::vector<double>& v) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
  o << "]";
  return o.str();
}

std::string JsonRatio(double r) {
  if (r < 0) return "null";
  std::ostringstream o;
  o << r;
  return o.str();
}

std::string JsonRow(const DriveRow& r) {
  std::ostringstream o;
  const bool each = r.each_sync || r.each_sync_record;
  o << "    {\"op\": " << JsonString(r.op) << ", \"size_bytes\": " << r.size_bytes
    << ", \"queue_depth\": " << r.queue_depth << ", \"ratio\": " << JsonRatio(Ratio(r, &DriveRow::fio))
    << ", \"ratio_fdatasync\": " << JsonRatio(Ratio(r, &DriveRow::fio_sync)) << ",\n     \"memkv\": " << JsonMemkv(r)
    << ",\n     \"fio\": " << JsonFio(r.fio) << ",\n     \"fio_fdatasync\": " << JsonFio(r.fio_sync)
    << ",\n     \"working_set_keys\": " << r.working_set_keys << ", \"keys_verified\": " << r.keys_verified
    << ", \"verify_errors\": " << r.verify_errors << ", \"fio_errors\": " << r.fio_errors
    << ",\n     \"memkv_mib_per_s_all\": " << JsonNumbers(r.memkv_mibs)
    << ", \"fio_mib_per_s_all\": " << JsonNumbers(r.fio_mibs)
    << ", \"fio_fdatasync_mib_per_s_all\": " << JsonNumbers(r.fio_sync_mibs);
  if (each) {
    o << ",\n     \"ratio_each_sync\": " << JsonRatio(Ratio(r, &DriveRow::each_sync))
      << ", \"ratio_each_sync_record\": " << JsonRatio(Ratio(r, &DriveRow::each_sync_record))
      << ",\n     \"each_sync\": " << JsonFio(r.each_sync) << ",\n     \"each_sync_record\": "
      << JsonFio(r.each_sync_record) << ",\n     \"each_sync_mib_per_s_all\": " << JsonNumbers(r.each_sync_mibs)
      << ", \"each_sync_record_mib_per_s_all\": " << JsonNumbers(r.each_sync_record_mibs);
  }
  o << "}";
  return o.str();
}

}  // namespace

uint64_t DriveRow::Errors() const { return (memkv ? memkv->errors : 0) + fio_errors + verify_errors; }

void PrintDriveFacts(std::FILE* out, const DriveFacts& f) {
  const RunFacts& r = f.run;
  std::fprintf(out, "memkv-drive-bench  commit %s  build %s  started %s\n", r.commit.c_str(), r.build_type.c_str(),
               r.started_utc.c_str());
  std::fprintf(out, "cpu: %s, %u cores   kernel: %s\n", r.cpu_model.c_str(), r.cores, r.kernel.c_str());
  std::fprintf(out, "storage: %s\n", f.storage.c_str());
  std::fprintf(out, "files: %s%s%s, %s each, O_DIRECT, written whole before the sweep (%.0f MiB/s)\n",
               f.file_path.c_str(), f.fio_file_path.empty() ? "" : " (the store's), ", f.fio_file_path.c_str(),
               FormatSize(f.file_size_bytes).c_str(), f.initial_write_mib_per_s);
  std::fprintf(out,
               "memkv: ExtentStore, file mode, 1 drive, block size %s, io engine %s, engine queue depth %u, "
               "%u staging buffers; put = extents written + journal record written + one fdatasync\n",
               FormatSize(f.block_size_bytes).c_str(), f.io_engine.c_str(), f.tuning.queue_depth, f.tuning.io_buffers);
  if (f.io_engine != "io_uring") {
    std::fprintf(out, "WARNING: the store did not get io_uring; memkv and fio's io_uring are not like for like\n");
  }
  if (f.fio_version.empty()) {
    std::fprintf(out, "reference: none (--no-fio)\n");
  } else {
    const bool random = f.fio_pattern == "random";
    std::fprintf(out,
                 "reference: %s, one job, --ioengine=io_uring --direct=1 --rw=%s --bs=<size> --iodepth=<qd>%s, "
                 "time-based; reads on the store's file, writes on its twin, also with --fdatasync=1\n",
                 f.fio_version.c_str(), random ? "randwrite|randread" : "write|read",
                 f.fio_registered ? " --fixedbufs=1 --registerfiles=1" : "");
  }
  if (f.each_sync) {
    std::fprintf(out,
                 "per-put durable references (--each-sync): on the twin, one thread, io_uring, <qd> puts in flight, "
                 "each counted when its own fdatasync returns\n");
  }
  std::fprintf(out,
               "%.2f s per cell, median of %u; qd = concurrent Put/GetInto callers (threads) for memkv, "
               "--iodepth for fio\n",
               f.seconds_per_cell, f.repeat);
}

void PrintDriveTables(std::FILE* out, const std::vector<DriveRow>& rows) {
  const bool puts = std::any_of(rows.begin(), rows.end(), [](const DriveRow& r) { return r.op == "put"; });
  const bool gets = std::any_of(rows.begin(), rows.end(), [](const DriveRow& r) { return r.op == "get"; });
  const bool each = std::any_of(rows.begin(), rows.end(), [](const DriveRow& r) { return r.each_sync.has_value(); });
  if (puts) PrintPutTable(out, rows);
  if (each) PrintEachSyncTable(out, rows);
  if (gets) PrintGetTable(out, rows);
  std::fputs("\n", out);
  PrintRatioRange(out, rows, "put", &DriveRow::fio, "fio write");
  PrintRatioRange(out, rows, "put", &DriveRow::fio_sync, "fio write --fdatasync=1");
  PrintRatioRange(out, rows, "put", &DriveRow::each_sync, "each-sync");
  PrintRatioRange(out, rows, "put", &DriveRow::each_sync_record, "each-sync +record");
  PrintRatioRange(out, rows, "get", &DriveRow::fio, "fio read");
}

void PrintDriveProgress(std::FILE* out, const DriveRow& r) {
  std::fprintf(out, "%s %s qd%u: memkv %s MiB/s, fio %s MiB/s (%sx)", r.op.c_str(), FormatSize(r.size_bytes).c_str(),
               r.queue_depth, r.memkv ? Fixed(r.memkv->MiBPerSecond(), 1).c_str() : "-", FioMibs(r.fio).c_str(),
               Fixed(Ratio(r, &DriveRow::fio), 2).c_str());
  if (r.fio_sync) {
    std::fprintf(out, ", fio+fdatasync %s MiB/s (%sx)", FioMibs(r.fio_sync).c_str(),
                 Fixed(Ratio(r, &DriveRow::fio_sync), 2).c_str());
  }
  std::fputs("\n", out);
}

Status WriteDriveJson(const std::string& path, const DriveFacts& f, const std::vector<DriveRow>& rows,
                      uint64_t total_errors) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError("cannot open '" + path + "' for writing");
  const RunFacts& r = f.run;
  out << "{\n  \"bench\": \"memkv-drive-bench\",\n  \"commit\": " << JsonString(r.commit)
      << ",\n  \"build_type\": " << JsonString(r.build_type) << ",\n  \"cpu_model\": " << JsonString(r.cpu_model)
      << ",\n  \"cores\": " << r.cores << ",\n  \"kernel\": " << JsonString(r.kernel)
      << ",\n  \"started_utc\": " << JsonString(r.started_utc) << ",\n  \"storage\": " << JsonString(f.storage)
      << ",\n  \"file_path\": " << JsonString(f.file_path) << ",\n  \"fio_file_path\": " << JsonString(f.fio_file_path)
      << ",\n  \"file_size_bytes\": " << f.file_size_bytes
      << ",\n  \"initial_write_mib_per_s\": " << f.initial_write_mib_per_s
      << ",\n  \"block_size_bytes\": " << f.block_size_bytes << ",\n  \"io_engine\": " << JsonString(f.io_engine)
      << ",\n  \"store_queue_depth\": " << f.tuning.queue_depth << ",\n  \"store_io_buffers\": " << f.tuning.io_buffers
      << ",\n  \"fio_version\": " << (f.fio_version.empty() ? "null" : JsonString(f.fio_version))
      << ",\n  \"fio_pattern\": " << JsonString(f.fio_pattern)
      << ",\n  \"fio_registered\": " << (f.fio_registered ? "true" : "false")
      << ",\n  \"each_sync\": " << (f.each_sync ? "true" : "false")
      << ",\n  \"seconds_per_cell\": " << f.seconds_per_cell << ",\n  \"repeat\": " << f.repeat
      << ",\n  \"total_errors\": " << total_errors << ",\n  \"cells\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) out << JsonRow(rows[i]) << (i + 1 < rows.size() ? ",\n" : "\n");
  out << "  ]\n}\n";
  out.close();
  if (!out) return IoError("writing '" + path + "' failed");
  return Status::Ok();
}

}  // namespace memkv::bench
