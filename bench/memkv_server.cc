#include "bench/memkv_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/clock.h"
#include "base/unique_fd.h"
#include "bench/process.h"

namespace memkv::bench {
namespace {

constexpr int kReadyTimeoutMs = 30000;
constexpr int kStopGraceMs = 20000;
constexpr size_t kStderrShownBytes = 4000;

std::string ErrnoText(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

std::string ReadTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  return text.size() > max_bytes ? "..." + text.substr(text.size() - max_bytes) : text;
}

std::string ConfigYaml(uint64_t pool_bytes, const std::string& key_hex) {
  return "network:\n  address: 127.0.0.1:0\n  auth_key: " + key_hex +
         "\nmemory:\n  max_size: " + std::to_string(pool_bytes) +
         "\n  block_size: 2 MiB\nstorage:\n  mode: memory\n";
}

}  // namespace

Result<std::unique_ptr<MemkvServer>> MemkvServer::Start(const std::string& binary, uint64_t pool_bytes,
                                                        const std::string& auth_key_hex,
                                                        const std::string& temp_base) {
  if (::access(binary.c_str(), X_OK) != 0) {
    return InvalidArgument("memkv binary '" + binary + "' is not executable; pass --memkv PATH");
  }
  std::unique_ptr<MemkvServer> server(new MemkvServer());
  MEMKV_ASSIGN_OR_RETURN(server->dir_, MakeTempDir(temp_base, "memkv-bench-"));
  const std::string config_path = server->dir_ + "/config.yaml";
  std::ofstream(config_path, std::ios::binary) << ConfigYaml(pool_bytes, auth_key_hex);
  ::chmod(config_path.c_str(), 0600);  // it holds the key
  server->stderr_path_ = server->dir_ + "/stderr.log";
  MEMKV_RETURN_IF_ERROR(server->Spawn(binary, config_path));
  return server;
}

Status MemkvServer::Spawn(const std::string& binary, const std::string& config_path) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return Internal(ErrnoText("pipe2"));
  std::vector<std::string> args = {binary, "start", "--config", config_path, "--data-dir", dir_ + "/data"};
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) return Internal(ErrnoText("fork"));
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the benchmark
    if (::getppid() != parent) ::_exit(127);
    ::dup2(out[1], STDOUT_FILENO);
    int err = ::open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err, STDERR_FILENO);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  UniqueFd read_end(out[0]);
  return ReadReadyLine(read_end.get());
}

Status MemkvServer::ReadReadyLine(int stdout_fd) {
  const Nanos deadline = MonotonicNanos() + Nanos(kReadyTimeoutMs) * 1'000'000;
  std::string line;
  while (line.find('\n') == std::string::npos) {
    const Nanos left_ms = (deadline - MonotonicNanos()) / 1'000'000;
    pollfd p{stdout_fd, POLLIN, 0};
    if (left_ms <= 0 || ::poll(&p, 1, static_cast<int>(left_ms)) <= 0) break;
    char c;
    if (::read(stdout_fd, &c, 1) != 1) break;
    line += c;
  }
  if (line.rfind("ready ", 0) != 0) {
    Stop();
    return Unavailable("memkv start did not print 'ready HOST:PORT' within " +
                       std::to_string(kReadyTimeoutMs) + " ms; stdout '" + line + "'; stderr:\n" +
                       ReadTail(stderr_path_, kStderrShownBytes));
  }
  address_ = line.substr(6, line.find('\n') - 6);
  return Status::Ok();
}

int MemkvServer::Stop() {
  if (pid_ <= 0) return -1;
  int status = TerminateChild(pid_, kStopGraceMs);
  pid_ = -1;
  return status;
}

MemkvServer::~MemkvServer() {
  Stop();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

}  // namespace memkv::bench
