// memkv-drive-crashtest: runs a mixed put/overwrite/delete workload on an
// extent store and prints each operation as it is acknowledged
// (crash_workload.h), so that a test can kill -9 it at any moment and check
// the store against the log. Not an operator tool.
//
//   memkv-drive-crashtest [--format] [--block-size BYTES] [--file-size BYTES]
//       [--journal-area BYTES] [--threads N] [--keys N] [--max-value BYTES] [--round N] [--ops N] DRIVE...
//
// Prints "opened" once the store is open. Exit status 0 when the workload
// ran to its end, 2 on bad usage, 1 when the store could not be opened.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#include "base/log.h"
#include "base/parse_number.h"
#include "drive/crash_workload.h"
#include "drive/extent_store.h"

namespace {

int Usage(const char* why) {
  std::fprintf(stderr, "memkv-drive-crashtest: %s\nusage: memkv-drive-crashtest [--format] [--block-size B] "
               "[--file-size B] [--journal-area B] [--threads N] [--keys N] [--max-value B] [--round N] [--ops N] "
               "[--sync always|interval] DRIVE...\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using memkv::drive::ExtentStore;
  memkv::drive::DriveFormatOptions format;
  format.block_size_bytes = 64 << 10;
  format.file_size_bytes = 32 << 20;
  bool do_format = false;
  memkv::drive::CrashWorkloadOptions work;
  std::vector<std::string> drives;
  memkv::drive::SyncMode sync = memkv::drive::SyncMode::kAlways;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    auto number = [&](uint64_t* out) {
      const char* v = next();
      if (v == nullptr) return false;
      std::optional<uint64_t> parsed = memkv::ParseDecimal(v);
      if (parsed) *out = *parsed;
      return parsed.has_value();
    };
    uint64_t n = 0;
    if (a == "--format") do_format = true;
    else if (a == "--block-size" && number(&n)) format.block_size_bytes = n;
    else if (a == "--file-size" && number(&n)) format.file_size_bytes = n;
    else if (a == "--journal-area" && number(&n)) format.journal_area_bytes = n;
    else if (a == "--threads" && number(&n)) work.threads = int(n);
    else if (a == "--keys" && number(&n)) work.keys_per_thread = int(n);
    else if (a == "--max-value" && number(&n)) work.max_value_bytes = n;
    else if (a == "--round" && number(&n)) work.round = n;
    else if (a == "--ops" && number(&n)) work.ops_per_thread = n;
    else if (a == "--sync" && i + 1 < argc && std::string(argv[i + 1]) == "interval")
      sync = memkv::drive::SyncMode::kInterval, ++i;
    else if (a == "--sync" && i + 1 < argc && std::string(argv[i + 1]) == "always")
      sync = memkv::drive::SyncMode::kAlways, ++i;
    else if (!a.empty() && a[0] != '-') drives.push_back(a);
    else return Usage(("bad argument " + a).c_str());
  }
  if (drives.empty()) return Usage("no drives");
  memkv::SetLogLevel(memkv::LogLevel::kWarn);
  if (do_format) {
    format.drives = drives;
    format.force = true;
    memkv::Status s = ExtentStore::Format(format);
    if (!s.ok()) {
      std::fprintf(stderr, "format: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  memkv::drive::ExtentStoreOptions options;
  options.drives = drives;
  options.io_buffers = 16;
  options.sync = sync;
  auto store = ExtentStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  const char opened[] = "opened\n";
  ssize_t w = write(STDOUT_FILENO, opened, sizeof(opened) - 1);
  (void)w;
  memkv::drive::RunCrashWorkload(**store, work);
  return 0;
}
