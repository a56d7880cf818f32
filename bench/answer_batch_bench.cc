// memkv-answer-batch-bench: does sending a turn's answers in one system call
// spare a server thread the preemptions its answers cause? (docs/benchmarks.md,
// "Why the misses remain", the 4 KiB row at 16 connections.)
//
// One epoll thread answers --clients blocking client threads over loopback
// TCP: each client sends a 64-byte request and reads a --answer-bytes answer,
// again and again. Each turn the server reads the requests that arrived, then
// answers them in one of two ways, alternating round by round:
//   send      one send(2) per answer, as memkv's workers do;
//   io_uring  one io_uring_enter for all of the turn's answers.
// Waking a client that blocks in recv(2) lets it take the server's core on
// the way back to user space; with io_uring that way back comes once a turn.
// Per way: answers a second, and the server thread's involuntary context
// switches per answer (/proc/self/task/<tid>/status). Not MemKV code: the
// question is the kernel's, asked without the rest of a request's work.
//
// A program, not a test; its smoke run checks only that it runs.
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/flags.h"

namespace {

constexpr const char* kUsage =
    "Usage: memkv-answer-batch-bench [--clients N] [--answer-bytes N] [--seconds S] [--rounds N]\n"
    "  --clients N       blocking client threads, one connection each (default 16)\n"
    "  --answer-bytes N  bytes per answer (default 4096)\n"
    "  --seconds S       length of each timed run (default 3)\n"
    "  --rounds N        rounds, each timing send then io_uring (default 3)\n";

constexpr size_t kRequestBytes = 64;

struct Options {
  uint32_t clients = 16;
  uint32_t answer_bytes = 4096;
  double seconds = 3;
  uint32_t rounds = 3;
};

Options ParseOptions(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  auto apply = [&](const std::string& flag, const std::string& value, std::string* err) {
    if (flag == "--clients") return memkv::bench::ParseCount(flag, value, 256, "count", &o.clients, err);
    if (flag == "--answer-bytes") return memkv::bench::ParseCount(flag, value, 1 << 20, "size", &o.answer_bytes, err);
    if (flag == "--rounds") return memkv::bench::ParseCount(flag, value, 100, "count", &o.rounds, err);
    if (flag == "--seconds") return memkv::bench::ParseSeconds(flag, value, 600, &o.seconds, err);
    *err = "unknown option " + flag;
    return false;
  };
  auto known = [](std::string_view f) {
    return f == "--clients" || f == "--answer-bytes" || f == "--seconds" || f == "--rounds";
  };
  memkv::bench::WalkFlagsOrExit("memkv-answer-batch-bench", kUsage, args, known, apply);
  return o;
}

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "memkv-answer-batch-bench: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

// A field of /proc/self/task/<tid>/status ("nonvoluntary_ctxt_switches:").
long TaskField(pid_t tid, const std::string& field) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + field.size());
  }
  return -1;
}

// Connected loopback TCP pairs: client ends and server ends, TCP_NODELAY.
// Blocking sockets, unlike io/socket.h's: the clients must sleep in recv(2).
void Connect(uint32_t n, std::vector<int>* client, std::vector<int>* server) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) Die("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0) Die("bind");
  if (::listen(listener, static_cast<int>(n)) != 0) Die("listen");
  if (::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) Die("getsockname");
  const int one = 1;
  for (uint32_t i = 0; i < n; ++i) {
    const int c = ::socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || ::connect(c, reinterpret_cast<sockaddr*>(&addr), len) != 0) Die("connect");
    const int s = ::accept(listener, nullptr, nullptr);
    if (s < 0) Die("accept");
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    client->push_back(c);
    server->push_back(s);
  }
  ::close(listener);
}

struct Result {
  double answers_per_s = 0;
  double preemptions_per_answer = 0;
};

// One timed run with `batched` answers; a fresh set of connections and threads.
Result Run(const Options& o, bool batched) {
  std::vector<int> cfd, sfd;
  Connect(o.clients, &cfd, &sfd);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> answers{0};
  std::vector<std::thread> clients;
  for (uint32_t i = 0; i < o.clients; ++i) {
    clients.emplace_back([&, fd = cfd[i]] {
      std::vector<char> buf(std::max<size_t>(o.answer_bytes, kRequestBytes), 'q');
      while (!stop.load(std::memory_order_relaxed)) {
        if (::send(fd, buf.data(), kRequestBytes, MSG_NOSIGNAL) != ssize_t(kRequestBytes)) return;
        size_t got = 0;
        while (got < o.answer_bytes) {
          const ssize_t n = ::recv(fd, buf.data() + got, o.answer_bytes - got, 0);
          if (n <= 0) return;
          got += size_t(n);
        }
        answers.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::atomic<pid_t> server_tid{0};
  std::thread server([&] {
    server_tid = static_cast<pid_t>(::syscall(SYS_gettid));
    const int ep = ::epoll_create1(0);
    if (ep < 0) Die("epoll_create1");
    for (uint32_t i = 0; i < o.clients; ++i) {
      epoll_event e{};
      e.events = EPOLLIN;
      e.data.u32 = i;
      if (::epoll_ctl(ep, EPOLL_CTL_ADD, sfd[i], &e) != 0) Die("epoll_ctl");
    }
    io_uring ring;
    if (const int r = io_uring_queue_init(std::max(8u, o.clients), &ring, 0); r < 0) {
      errno = -r;
      Die("io_uring_queue_init");
    }
    const std::vector<char> answer(o.answer_bytes, 'a');
    std::vector<epoll_event> events(o.clients);
    std::vector<int> ready;
    char request[kRequestBytes];
    while (!stop.load(std::memory_order_relaxed)) {
      const int n = ::epoll_wait(ep, events.data(), int(events.size()), 100);
      ready.clear();
      for (int k = 0; k < n; ++k) {
        const int fd = sfd[events[k].data.u32];
        if (::recv(fd, request, kRequestBytes, MSG_DONTWAIT | MSG_WAITALL) == ssize_t(kRequestBytes)) {
          ready.push_back(fd);
        }
      }
      if (ready.empty()) continue;
      if (!batched) {
        for (int fd : ready) (void)::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
        continue;
      }
      for (int fd : ready) io_uring_prep_send(io_uring_get_sqe(&ring), fd, answer.data(), answer.size(), MSG_NOSIGNAL);
      io_uring_submit_and_wait(&ring, unsigned(ready.size()));
      unsigned head = 0, seen = 0;
      io_uring_cqe* cqe = nullptr;
      io_uring_for_each_cqe(&ring, head, cqe) { ++seen; }
      io_uring_cq_advance(&ring, seen);
    }
    io_uring_queue_exit(&ring);
    ::close(ep);
  });
  while (server_tid.load() == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // warm-up, untimed
  const std::string field = "nonvoluntary_ctxt_switches:";
  const uint64_t a0 = answers.load();
  const long p0 = TaskField(server_tid, field);
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  const uint64_t a1 = answers.load();
  const long p1 = TaskField(server_tid, field);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop = true;
  for (int fd : cfd) ::shutdown(fd, SHUT_RDWR);
  for (std::thread& t : clients) t.join();
  server.join();
  for (int fd : cfd) ::close(fd);
  for (int fd : sfd) ::close(fd);
  Result r;
  const double done = double(a1 - a0);
  r.answers_per_s = done / elapsed;
  r.preemptions_per_answer = done > 0 ? double(p1 - p0) / done : 0;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseOptions(argc, argv);
  std::printf("%u blocking clients, %zu-byte requests, %u-byte answers, %.1f s per run\n", o.clients, kRequestBytes,
              o.answer_bytes, o.seconds);
  std::printf("%-6s %-9s %14s %26s\n", "round", "answers", "answers/s", "preemptions per answer");
  for (uint32_t round = 1; round <= o.rounds; ++round) {
    for (bool batched : {false, true}) {
      const Result r = Run(o, batched);
      std::printf("%-6u %-9s %14.0f %26.3f\n", round, batched ? "io_uring" : "send", r.answers_per_s,
                  r.preemptions_per_answer);
      std::fflush(stdout);
    }
  }
  return 0;
}
