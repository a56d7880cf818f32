#include "tests/harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "base/clock.h"
#include "base/unique_fd.h"
#include "io/socket.h"

namespace memkv::testing {
namespace {

Nanos DeadlineIn(int ms) { return MonotonicNanos() + Nanos(ms) * 1'000'000; }

int MsLeft(Nanos deadline) {
  Nanos left = deadline - MonotonicNanos();
  return left <= 0 ? 0 : static_cast<int>(left / 1'000'000) + 1;
}

// Waits for pid until the deadline; returns its wait status or -1.
int WaitPid(pid_t pid, Nanos deadline) {
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -1;
    if (MonotonicNanos() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval, not a wait for an event
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

bool PollUntilImpl(const std::function<bool()>& condition, int timeout_ms) {
  Nanos deadline = DeadlineIn(timeout_ms);
  while (!condition()) {
    if (MonotonicNanos() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval
  }
  return true;
}

std::string MemkvBinary() { return MEMKV_BINARY; }

uint16_t FreeServerPort(const std::vector<std::string>& hosts) {
  auto free_on = [](const std::string& host, uint16_t port) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    return ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  };
  // Start where this process's id points, so tests running side by side try
  // different ports first.
  constexpr uint32_t kFirst = 10000, kCount = 22766;
  const uint32_t start = static_cast<uint32_t>(::getpid()) * 7 % kCount;
  for (uint32_t i = 0; i < kCount; i += 2) {
    const auto port = static_cast<uint16_t>(kFirst + (start + i) % kCount);
    bool free = true;
    for (const std::string& host : hosts) {
      free = free && free_on(host, port) && free_on(host, static_cast<uint16_t>(port + 1));
    }
    if (free) return port;
  }
  return 0;
}

bool RaiseOpenFilesLimit(uint64_t wanted) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return false;
  if (lim.rlim_cur >= wanted) return true;
  lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, wanted);
  return ::setrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur >= wanted;
}

ServerProcess::~ServerProcess() { Kill(); }

Status ServerProcess::Start(const ServerSpec& spec) {
  host_ = spec.host;
  std::string config = "network:\n  address: " + spec.host + ":" + std::to_string(spec.port) + "\n";
  if (!spec.auth_key_hex.empty()) config += "  auth_key: " + spec.auth_key_hex + "\n";
  config += spec.network_yaml;
  config += "memory:\n  max_size: " + spec.memory_max_size + "\n  block_size: " + spec.memory_block_size + "\n" +
            spec.memory_yaml + "storage:\n" + (spec.storage_yaml.empty() ? std::string("  mode: memory\n") : spec.storage_yaml) + spec.extra_yaml;
  std::string config_path = dir_.Write("config.yaml", config);
  stderr_path_ = dir_.path() + "/stderr.log";

  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Internal("pipe");
  const std::string data_dir = spec.data_dir.empty() ? dir_.path() + "/data" : spec.data_dir;
  std::vector<std::string> args = {MemkvBinary(), "start", "--config", config_path, "--data-dir", data_dir};
  args.insert(args.end(), spec.extra_args.begin(), spec.extra_args.end());
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    int err = ::open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err, STDERR_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  Nanos deadline = DeadlineIn(20000);
  std::string line;
  char c;
  while (line.find('\n') == std::string::npos) {
    pollfd p{out_pipe[0], POLLIN, 0};
    if (::poll(&p, 1, MsLeft(deadline)) <= 0) break;
    if (::read(out_pipe[0], &c, 1) != 1) break;
    line += c;
  }
  ::close(out_pipe[0]);
  if (line.rfind("ready ", 0) != 0) {
    Kill();
    return Unavailable("server did not become ready; stdout '" + line + "', stderr:\n" + Stderr());
  }
  port_ = static_cast<uint16_t>(std::stoi(line.substr(line.rfind(':') + 1)));
  return Status::Ok();
}

int ServerProcess::Stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  int status = WaitPid(pid_, DeadlineIn(20000));
  if (status == -1) {
    Kill();
    return -1;
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int ServerProcess::WaitExit(int ms) {
  if (pid_ <= 0) return -1;
  int status = WaitPid(pid_, DeadlineIn(ms));
  if (status == -1) return -1;
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void ServerProcess::Pause() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGSTOP);
  // SIGSTOP is asynchronous: wait until every thread has stopped, so a
  // request sent after Pause() returns is never answered.
  Nanos deadline = DeadlineIn(20000);
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG | WUNTRACED);
    if (r == pid_ && WIFSTOPPED(status)) return;
    if (r < 0 || MonotonicNanos() > deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // poll interval
  }
}
void ServerProcess::Resume() { ::kill(pid_, SIGCONT); }

std::string ServerProcess::Stderr() const { return ReadFile(stderr_path_); }

uint16_t ServerProcess::AdminPort() const {
  const std::string err = Stderr();
  const std::string marker = "admin endpoint on ";
  const size_t at = err.find(marker);
  if (at == std::string::npos) return 0;
  const size_t end = err.find('\n', at);
  const std::string url = err.substr(at + marker.size(), end - at - marker.size());
  return static_cast<uint16_t>(std::atoi(url.substr(url.rfind(':') + 1).c_str()));
}

HttpResult HttpRequestTo(uint16_t port, const std::string& method, const std::string& path, int timeout_ms,
                         const std::string& raw_request) {
  return HttpRequestToHost("127.0.0.1", port, method, path, timeout_ms, raw_request);
}

HttpResult HttpRequestToHost(const std::string& host, uint16_t port, const std::string& method,
                             const std::string& path, int timeout_ms, const std::string& raw_request) {
  HttpResult result;
  const Nanos deadline = DeadlineIn(timeout_ms);
  Result<UniqueFd> fd = io::ConnectTcp(host, port, deadline);
  if (!fd.ok()) return result;
  const std::string request = raw_request.empty()
                                  ? method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                                  : raw_request;
  if (::send(fd->get(), request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size())) return result;
  std::string in;
  char buf[16384];
  for (;;) {
    pollfd p{fd->get(), POLLIN, 0};
    if (::poll(&p, 1, MsLeft(deadline)) <= 0) break;
    ssize_t n = ::recv(fd->get(), buf, sizeof(buf), 0);
    if (n <= 0) break;
    in.append(buf, size_t(n));
  }
  const size_t head_end = in.find("\r\n\r\n");
  if (in.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return result;
  result.status = std::atoi(in.c_str() + 9);
  result.headers = in.substr(0, head_end);
  result.body = in.substr(head_end + 4);
  return result;
}

ServerSpec FileModeSpec(const std::string& dir, int drives, const std::string& drive_size, const std::string& pool,
                        const std::string& extra_storage) {
  ServerSpec spec;
  spec.memory_max_size = pool;
  spec.memory_block_size = "1 MiB";
  spec.storage_yaml = "  mode: file\n  block_size: 1 MiB\n" + extra_storage + "  drives:\n";
  for (int i = 0; i < drives; ++i) {
    spec.storage_yaml += "    - {media: " + dir + "/d" + std::to_string(i) + ".memkv, size: " + drive_size + "}\n";
  }
  return spec;
}

std::map<std::string, double> PrometheusSamples(const std::string& text) {
  std::map<std::string, double> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

CommandResult RunShell(const std::string& command) {
  CommandResult r;
  FILE* f = ::popen(command.c_str(), "r");
  if (f == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) r.out.append(buf, n);
  const int status = ::pclose(f);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

ClientOptions OptionsFor(const std::vector<const ServerProcess*>& servers, uint32_t timeout_ms) {
  ClientOptions o;
  for (const ServerProcess* s : servers) o.servers.push_back(s->address());
  o.auth_key_hex = kTestKeyHex;
  o.transport = "tcp";
  o.timeout_ms = timeout_ms;
  o.connect_timeout_ms = std::min<uint32_t>(timeout_ms, 2000);
  return o;
}

std::unique_ptr<Client> ClientFor(const std::vector<const ServerProcess*>& servers, uint32_t timeout_ms) {
  auto c = Client::Create(OptionsFor(servers, timeout_ms));
  return c.ok() ? std::move(c).value() : nullptr;
}

CommandResult RunMemkv(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                       const std::string& stdin_data, int timeout_ms) {
  TempDir dir;
  std::string in_path = dir.Write("stdin", stdin_data);
  std::string out_path = dir.path() + "/stdout";
  std::string err_path = dir.path() + "/stderr";
  CommandResult result;
  pid_t pid = ::fork();
  if (pid == 0) {
    int in = ::open(in_path.c_str(), O_RDONLY);
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(in, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    std::vector<std::string> argv_s = {MemkvBinary()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s = {"PATH=/usr/bin:/bin"};
    for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  int status = WaitPid(pid, DeadlineIn(timeout_ms));
  if (status == -1) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    result.exit_code = -1;
  } else {
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  return result;
}

std::vector<uint8_t> Pattern(size_t size, uint64_t seed) {
  std::vector<uint8_t> v(size);
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<uint8_t>(x);
  }
  return v;
}

void FillPattern(std::span<uint8_t> out, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(out.data() + i, &x, 8);
  }
  for (; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i);
}

}  // namespace memkv::testing
