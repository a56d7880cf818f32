#include "bench/memkv_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/clock.h"
#include "base/parse_number.h"
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

std::string ConfigYaml(const MemkvServerConfig& config, const std::string& key_hex, const std::string& dir) {
  const std::string storage =
      config.file_mode ? "storage:\n  mode: file\n  sync: " + config.sync + "\n" +
                             (config.flush_on_loop_us != 0
                                  ? "  flush_on_loop_us: " + std::to_string(config.flush_on_loop_us) + "\n"
                                  : std::string()) +
                             "  drives:\n    - {media: " + dir + "/drive0.memkv, size: " +
                             std::to_string(config.drive_bytes) + "}\n"
                       : "storage:\n  mode: memory\n";
  return "network:\n  address: 127.0.0.1:0\n  auth_key: " + key_hex + "\n" + config.network_yaml +
         "memory:\n  max_size: " + std::to_string(config.pool_bytes) +
         "\n  block_size: 2 MiB\n  prefault: " + (config.prefault ? "true" : "false") + "\n" + storage +
         config.extra_yaml;
}

std::string ReadAll(const std::string& path) { return ReadTail(path, SIZE_MAX); }

}  // namespace

Result<AdminAddress> FindAdminAddress(std::string_view log) {
  constexpr std::string_view kMarker = "admin endpoint on http://";
  const size_t at = log.rfind(kMarker);
  if (at == std::string_view::npos) return NotFound("no 'admin endpoint on http://' line");
  std::string_view rest = log.substr(at + kMarker.size());
  rest = rest.substr(0, rest.find_first_of(" \r\n/"));
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return NotFound("admin endpoint '" + std::string(rest) + "' has no host:port");
  }
  std::string_view host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const uint64_t port = ParseDecimal(rest.substr(colon + 1)).value_or(0);
  if (port == 0 || port > 65535) return NotFound("admin endpoint '" + std::string(rest) + "' has no valid port");
  return AdminAddress{std::string(host), static_cast<uint16_t>(port)};
}

Result<std::unique_ptr<MemkvServer>> MemkvServer::Start(const std::string& binary, const MemkvServerConfig& config,
                                                        const std::string& auth_key_hex,
                                                        const std::string& temp_base) {
  if (::access(binary.c_str(), X_OK) != 0) {
    return InvalidArgument("memkv binary '" + binary + "' is not executable; pass --memkv PATH");
  }
  std::unique_ptr<MemkvServer> server(new MemkvServer());
  MEMKV_ASSIGN_OR_RETURN(server->dir_, MakeTempDir(temp_base, "memkv-bench-"));
  const std::string config_path = server->dir_ + "/config.yaml";
  std::ofstream(config_path, std::ios::binary) << ConfigYaml(config, auth_key_hex, server->dir_);
  ::chmod(config_path.c_str(), 0600);  // it holds the key
  server->stderr_path_ = server->dir_ + "/stderr.log";
  MEMKV_RETURN_IF_ERROR(server->Spawn(binary, config_path, config.workers));
  return server;
}

Status MemkvServer::Spawn(const std::string& binary, const std::string& config_path, int workers) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return Internal(ErrnoText("pipe2"));
  UniqueFd read_end(out[0]);
  UniqueFd write_end(out[1]);
  std::vector<std::string> argv = {binary, "start", "--config", config_path, "--data-dir", dir_ + "/data"};
  if (workers > 0) argv.insert(argv.end(), {"--workers", std::to_string(workers)});
  Result<pid_t> pid = SpawnChild(argv, write_end.get(), stderr_path_);
  if (!pid.ok()) return pid.status();
  pid_ = *pid;
  write_end.Reset();  // the child holds the only write end now
  MEMKV_RETURN_IF_ERROR(ReadReadyLine(read_end.get()));
  // The server logs its admin endpoint before it prints "ready".
  admin_ = FindAdminAddress(ReadAll(stderr_path_));
  if (!admin_.ok()) {
    admin_ = Unavailable("memkv start logged no admin endpoint (" + admin_.status().message() + "); stderr:\n" +
                         ReadTail(stderr_path_, kStderrShownBytes));
  }
  return Status::Ok();
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
