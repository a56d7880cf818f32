// Crash safety with real processes: memkv-drive-crashtest runs a mixed
// put/overwrite/delete workload on three drive files and logs every
// operation as it is acknowledged; this test kill -9s it at random moments
// (while it opens and replays, mid-batch, mid-checkpoint), reopens the store
// and checks every key: it holds its last acknowledged value byte-exact, or,
// when an operation on it was in flight, that operation's result; never torn
// or older bytes. Then the next round continues on the same drives. Once
// with values of up to three extents, once with small values (up to three
// 4 KiB units) packed side by side, reusing the units others freed, and
// once more with those under storage.sync: interval. Some puts go in
// batches (PutManyIov, one group commit).
//
// No sleeps: the test polls the child's output against deadlines.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>

#include "base/log.h"
#include "drive/crash_workload.h"
#include "drive/extent_store.h"
#include "drive/test_util.h"

namespace memkv::drive {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kThreads = 3;
constexpr int kRounds = 30;
constexpr auto kBudget = std::chrono::seconds(45);

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of its stdout
  std::string buffered;
  bool eof = false;

  // Next complete line, waiting until `deadline`; nullopt at EOF or timeout.
  std::optional<std::string> Line(Clock::time_point deadline) {
    for (;;) {
      size_t nl = buffered.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffered.substr(0, nl);
        buffered.erase(0, nl + 1);
        return line;
      }
      if (eof) return std::nullopt;
      int wait_ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
      if (wait_ms <= 0) return std::nullopt;
      pollfd p{.fd = out, .events = POLLIN, .revents = 0};
      if (poll(&p, 1, wait_ms) <= 0) continue;
      char buf[4096];
      ssize_t n = read(out, buf, sizeof(buf));
      if (n <= 0) eof = true;
      else buffered.append(buf, size_t(n));
    }
  }
};

Child Spawn(const std::vector<std::string>& args, const std::string& stderr_path) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (err >= 0) dup2(err, STDERR_FILENO);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  Child c;
  c.pid = pid;
  c.out = fds[0];
  return c;
}

struct State {
  bool present = false;
  uint64_t seed = 0;
  uint64_t size = 0;
  std::string ToString() const {
    return present ? "value seed " + std::to_string(seed) + " (" + std::to_string(size) + " bytes)" : "absent";
  }
};

State StateOf(const CrashLogLine& l) { return State{l.put, l.seed, l.size}; }

std::string Tail(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > 3000 ? s.substr(s.size() - 3000) : s;
}

struct CrashRun {
  int keys_per_thread = 8;
  uint64_t max_value_bytes = 0;  // 0: three extents
  const char* sync = "always";   // storage.sync of the child
};

void KillAtRandomMoments(const CrashRun& run) {
  const int kKeysPerThread = run.keys_per_thread;
  TempDir dir;
  std::vector<std::string> drives;
  for (int i = 0; i < 3; ++i) drives.push_back(dir.File("drive" + std::to_string(i)));
  DriveFormatOptions f;
  f.drives = drives;
  f.block_size_bytes = 64 << 10;
  f.file_size_bytes = 16 << 20;
  f.journal_area_bytes = 64 << 10;  // small: checkpoints every few dozen operations
  ASSERT_TRUE(ExtentStore::Format(f).ok());
  const std::string log = dir.File("child.stderr");

  std::map<std::string, State> model;  // what the store holds, as last verified plus acknowledged since
  std::mt19937_64 rng(std::random_device{}());
  const uint64_t seed = rng();
  SCOPED_TRACE("rng seed " + std::to_string(seed));
  rng.seed(seed);
  const auto test_deadline = Clock::now() + kBudget;
  int rounds = 0, acked_total = 0, in_flight_total = 0;
  for (int round = 1; round <= kRounds && Clock::now() < test_deadline; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<std::string> args = {MEMKV_DRIVE_CRASHTEST, "--threads", std::to_string(kThreads), "--keys",
                                     std::to_string(kKeysPerThread), "--round", std::to_string(round),
                                     "--max-value", std::to_string(run.max_value_bytes), "--sync", run.sync};
    args.insert(args.end(), drives.begin(), drives.end());
    Child child = Spawn(args, log);
    ASSERT_GT(child.pid, 0);

    // Where to kill: during open/replay, right after it, or after some acks.
    const int mode = int(rng() % 8);
    const int acks_wanted = mode < 2 ? 0 : 1 + int(rng() % 300);
    const auto round_deadline = Clock::now() + std::chrono::seconds(15);
    std::vector<std::string> lines;
    int acks = 0;
    if (mode != 0) {
      bool opened = false;
      while (!opened || acks < acks_wanted) {
        auto line = child.Line(round_deadline);
        if (!line) break;
        if (*line == "opened") opened = true;
        else lines.push_back(*line);
        if (line->rfind("ack ", 0) == 0) acks++;
      }
      ASSERT_TRUE(opened) << "the child did not open the store:\n" << Tail(log);
      ASSERT_GE(acks, acks_wanted) << "the child stopped making progress:\n" << Tail(log);
    }
    kill(child.pid, SIGKILL);
    int status = 0;
    waitpid(child.pid, &status, 0);
    while (auto line = child.Line(round_deadline)) {  // what it printed before it died
      if (*line != "opened") lines.push_back(*line);
    }
    close(child.out);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited by itself:\n" << Tail(log);

    std::map<std::string, State> in_flight;
    for (const std::string& text : lines) {
      CrashLogLine l;
      ASSERT_TRUE(ParseCrashLine(text, &l)) << "log line: " << text;
      if (l.phase == CrashLogLine::Phase::kBegin) {
        in_flight[l.key] = StateOf(l);
      } else if (l.phase == CrashLogLine::Phase::kAck) {
        model[l.key] = StateOf(l);
        in_flight.erase(l.key);
        acked_total++;
      }  // kFail: outcome unknown, stays in flight
    }
    in_flight_total += int(in_flight.size());

    ExtentStoreOptions options;
    options.drives = drives;
    options.io_buffers = 8;
    auto store = ExtentStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    uint64_t present = 0;
    for (int th = 0; th < kThreads; ++th) {
      for (int k = 0; k < kKeysPerThread; ++k) {
        const std::string key = "t" + std::to_string(th) + "-" + std::to_string(k);
        auto got = (*store)->Get(key);
        ASSERT_TRUE(got.ok() || got.status().code() == StatusCode::kNotFound) << got.status().ToString();
        auto matches = [&](const State& s) {
          if (!s.present) return !got.ok();
          return got.ok() && got->size() == s.size && *got == CrashValue(s.seed, s.size);
        };
        const State acked = model.count(key) ? model[key] : State{};
        if (matches(acked)) continue;
        auto flying = in_flight.find(key);
        ASSERT_TRUE(flying != in_flight.end() && matches(flying->second))
            << key << ": acknowledged " << acked.ToString()
            << (flying != in_flight.end() ? ", in flight " + flying->second.ToString() : "") << "; found "
            << (got.ok() ? std::to_string(got->size()) + " bytes that match neither" : "nothing");
        model[key] = flying->second;  // the in-flight operation made it
      }
    }
    for (auto& [key, s] : model) present += s.present ? 1 : 0;
    EXPECT_EQ((*store)->Stats().keys, present) << "no key the log does not account for";
    EXPECT_FALSE((*store)->Stats().degraded);
    rounds++;
  }
  ::testing::Test::RecordProperty("rounds", rounds);
  ::testing::Test::RecordProperty("acknowledged_ops", acked_total);
  std::printf("crash test: %d rounds, %d acknowledged operations checked, %d in flight at the kills\n", rounds,
              acked_total, in_flight_total);
  EXPECT_GE(rounds, 10) << "too few rounds in the time budget";
  EXPECT_GT(acked_total, rounds * 10);
}

TEST(CrashSafety, KillNineAtRandomMomentsLosesNoAcknowledgedWrite) { KillAtRandomMoments({}); }

TEST(CrashSafety, KillNineAmongSmallPackedPutsLosesNoAcknowledgedWrite) {
  KillAtRandomMoments({.keys_per_thread = 24, .max_value_bytes = 3 * 4096});
}

// storage.sync: interval acknowledges small values and journal records once
// they are in the page cache: the kernel keeps them when the process dies.
TEST(CrashSafety, KillNineWithIntervalSyncLosesNoAcknowledgedWrite) {
  KillAtRandomMoments({.keys_per_thread = 24, .max_value_bytes = 3 * 4096, .sync = "interval"});
}

}  // namespace
}  // namespace memkv::drive
