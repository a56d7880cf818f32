#include "bench/fio_reference.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/json.h"

namespace memkv::bench {
namespace {

constexpr int kExecFailed = 127;
constexpr const char* kInstallHint =
    "install fio (Debian/Ubuntu: apt-get install fio; Fedora/RHEL: dnf install fio), pass --fio PATH, "
    "or --no-fio to measure memkv alone";

struct Exit {
  int status = -1;     // exit code, 128+signal, or -1
  std::string output;  // stdout, when captured
};

// Runs argv without a shell; stderr is inherited (fio's warnings reach the
// terminal). Captures stdout when `capture` is set, else discards it.
Result<Exit> RunProgram(const std::vector<std::string>& args, bool capture) {
  int pipe_fds[2] = {-1, -1};
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Internal(std::string("pipe2: ") + std::strerror(errno));
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return Internal(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    int out = capture ? pipe_fds[1] : ::open("/dev/null", O_WRONLY);
    if (out >= 0) ::dup2(out, STDOUT_FILENO);
    ::execvp(argv[0], argv.data());
    ::_exit(kExecFailed);
  }
  ::close(pipe_fds[1]);
  Exit e;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(pipe_fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    e.output.append(buf, size_t(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Internal(std::string("waitpid(fio): ") + std::strerror(errno));
  }
  e.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return e;
}

double Percentile(const JsonValue* dist, const char* key) {
  const JsonValue* p = dist == nullptr ? nullptr : dist->Path({"percentile", key});
  return p == nullptr ? 0 : p->NumberOr(0) / 1e3;
}

std::string FormatMillis(double seconds) { return std::to_string(std::llround(seconds * 1e3)) + "ms"; }

}  // namespace

std::vector<std::string> FioArgs(const FioJob& job) {
  std::vector<std::string> a = {
      job.fio_path,
      "--name=memkv-reference",
      "--filename=" + job.filename,
      "--size=" + std::to_string(job.file_size_bytes),
      "--ioengine=io_uring",
      "--direct=1",
      std::string("--rw=") + (job.random ? "rand" : "") + (job.write ? "write" : "read"),
      "--bs=" + std::to_string(job.block_size_bytes),
      "--iodepth=" + std::to_string(job.iodepth),
      "--numjobs=1",
      "--time_based=1",
      "--runtime=" + FormatMillis(job.seconds),
      // The file exists, written whole: never lay it out or fallocate again.
      "--allow_file_create=0",
      "--fallocate=none",
  };
  if (job.registered) {
    a.push_back("--fixedbufs=1");
    a.push_back("--registerfiles=1");
  }
  if (job.fdatasync) a.push_back("--fdatasync=1");
  a.push_back("--output-format=json");
  a.push_back("--output=" + job.output_path);
  return a;
}

std::string ShellCommand(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) {
    if (!out.empty()) out += ' ';
    if (a.find_first_of(" \t'\"\\$`;&|<>()*?") == std::string::npos) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

Result<FioResult> ParseFioReport(std::string_view json, bool write) {
  Result<JsonValue> doc = ParseJson(json);
  if (!doc.ok()) return InvalidArgument("fio report: " + doc.status().message());
  const JsonValue* jobs = doc->Find("jobs");
  if (jobs == nullptr || jobs->type != JsonValue::Type::kArray || jobs->array.empty()) {
    return InvalidArgument("fio report: no \"jobs\"");
  }
  const JsonValue& job = jobs->array[0];
  if (const JsonValue* err = job.Find("error"); err != nullptr && err->NumberOr(0) != 0) {
    return InvalidArgument("fio report: the job failed with error " + std::to_string(std::lround(err->number)));
  }
  const JsonValue* dir = job.Find(write ? "write" : "read");
  const JsonValue* bw = dir == nullptr ? nullptr : dir->Find("bw_bytes");
  if (bw == nullptr || bw->type != JsonValue::Type::kNumber) {
    return InvalidArgument(std::string("fio report: no ") + (write ? "write" : "read") + ".bw_bytes");
  }
  FioResult r;
  r.bytes_per_s = bw->number;
  r.iops = dir->Find("iops") ? dir->Find("iops")->NumberOr(0) : 0;
  r.io_bytes = dir->Find("io_bytes") ? uint64_t(dir->Find("io_bytes")->NumberOr(0)) : 0;
  r.runtime_s = dir->Find("runtime") ? dir->Find("runtime")->NumberOr(0) / 1e3 : 0;
  const JsonValue* clat = dir->Find("clat_ns");
  r.clat_p50_us = Percentile(clat, "50.000000");
  r.clat_p99_us = Percentile(clat, "99.000000");
  r.clat_p999_us = Percentile(clat, "99.900000");
  const JsonValue* sync = job.Path({"sync", "lat_ns"});
  r.sync_p50_us = Percentile(sync, "50.000000");
  r.sync_p99_us = Percentile(sync, "99.000000");
  return r;
}

Result<FioResult> RunFio(const FioJob& job) {
  const std::vector<std::string> args = FioArgs(job);
  const std::string command = ShellCommand(args);
  MEMKV_ASSIGN_OR_RETURN(Exit e, RunProgram(args, /*capture=*/false));
  if (e.status == kExecFailed) return NotFound("cannot run '" + job.fio_path + "': " + kInstallHint);
  if (e.status != 0) return IoError("`" + command + "` exited with status " + std::to_string(e.status));
  std::ifstream in(job.output_path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return IoError("reading fio's report " + job.output_path + " of `" + command + "`");
  Result<FioResult> r = ParseFioReport(text.str(), job.write);
  if (!r.ok()) return r.status().WithContext("`" + command + "`");
  r->command = command;
  return r;
}

bool CanRegisterBuffers(uint64_t bytes) {
  if (::geteuid() == 0) return true;
  rlimit limit{};
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) != 0) return false;
  return limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= bytes;
}

Result<std::string> FioVersion(const std::string& fio_path) {
  MEMKV_ASSIGN_OR_RETURN(Exit e, RunProgram({fio_path, "--version"}, /*capture=*/true));
  if (e.status == kExecFailed) return NotFound("cannot run '" + fio_path + "': " + kInstallHint);
  while (!e.output.empty() && (e.output.back() == '\n' || e.output.back() == ' ')) e.output.pop_back();
  if (e.status != 0 || e.output.empty()) {
    return IoError("'" + fio_path + " --version' exited with status " + std::to_string(e.status));
  }
  return e.output;
}

}  // namespace memkv::bench
