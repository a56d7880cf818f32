// memkv-nixl-engine-bench: the MEMKV NIXL backend's engine
// (memkv::nixl::TransferEngine, everything libplugin_MEMKV.so does but
// translate NIXL's types) against the plain C++ client, the same batches in
// the same run (docs/benchmarks.md, "N2"). NIXL is not needed: the engine is
// driven the way NIXL's agent drives the plugin.
//
// It spawns a memkv server on loopback (memory mode), and for each shape
// N x SIZE registers N objects (offset 0), prepares one write and one read
// transfer of N descriptors once, and times, side by side:
//   engine   Post, then Poll in a loop (yielding, never sleeping) until done
//   client   Client::BatchPut / BatchGetInto of the same keys, same buffers
//   control  a second plain client in the engine's place (an A/A check)
// The clients share the engine's client options (TCP, num_connections; the
// engine's gets `workers` as async_threads). Each side runs back-to-back
// calls for --seconds, the sides alternating in a rotating order, for
// --rounds rounds; the table shows medians over rounds and the ratios to the
// client. Reads are checked against the written bytes at the end.
//
// A program, not a test; single-threaded (the engine's workers aside).
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/flags.h"
#include "bench/memkv_server.h"
#include "memkv/client.h"
#include "nixl/settings.h"
#include "nixl/transfer_engine.h"

namespace {

using memkv::nixl::Direction;
using memkv::nixl::LocalSpan;
using memkv::nixl::ObjectSpan;
using memkv::nixl::Transfer;
using memkv::nixl::TransferEngine;
using memkv::nixl::TransferState;

constexpr char kUsage[] =
    "Usage: memkv-nixl-engine-bench [--shapes NxSIZE,...] [--rounds N] [--seconds S] [--json PATH]\n"
    "                               [--memkv PATH]\n"
    "  --shapes   descriptors x bytes each (default 64x256KiB,8x256KiB,16x4MiB)\n"
    "  --rounds   rounds; the table shows their medians (default 5)\n"
    "  --seconds  seconds of back-to-back calls per side, op and round (default 1)\n"
    "  --json     where the JSON goes (default nixl-engine-bench.json)\n"
    "  --memkv    the server binary to spawn (default: this build's)\n";

constexpr char kBenchKey[] = "6e69786c2d656e67696e652d62656e63682d6b65792d30313233343536373839";

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "memkv-nixl-engine-bench: %s\n", why.c_str());
  std::exit(1);
}

struct Shape {
  uint32_t count = 0;
  uint64_t bytes = 0;
  std::string Name() const { return std::to_string(count) + " x " + memkv::bench::FormatValueSize(bytes); }
};

struct Options {
  std::vector<Shape> shapes;
  uint32_t rounds = 5;
  double seconds = 1.0;
  std::string json = "nixl-engine-bench.json";
  std::string memkv = MEMKV_BINARY_DEFAULT;
};

bool ParseShapes(const std::string& text, std::vector<Shape>* out, std::string* error) {
  out->clear();
  for (const std::string& item : memkv::bench::SplitComma(text)) {
    const size_t x = item.find('x');
    Shape s;
    if (x == std::string::npos ||
        !memkv::bench::ParseCount("--shapes", item.substr(0, x), 4096, "count", &s.count, error)) {
      if (error->empty()) *error = "--shapes: '" + item + "' is not NxSIZE (such as 64x256KiB)";
      return false;
    }
    auto size = memkv::bench::ParseValueSize(item.substr(x + 1));
    if (!size.ok() || size.value() == 0 || size.value() > (64ULL << 20)) {
      *error = "--shapes: '" + item + "': the size must be 1 byte .. 64 MiB";
      return false;
    }
    s.bytes = size.value();
    out->push_back(s);
  }
  if (out->empty()) *error = "--shapes: no shape given";
  return !out->empty();
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  std::string error;
  ParseShapes("64x256KiB,8x256KiB,16x4MiB", &o.shapes, &error);
  std::vector<std::string> args(argv + 1, argv + argc);
  auto apply = [&](const std::string& flag, const std::string& value, std::string* err) {
    if (flag == "--shapes") return ParseShapes(value, &o.shapes, err);
    if (flag == "--rounds") return memkv::bench::ParseCount(flag, value, 1000, "count", &o.rounds, err);
    if (flag == "--seconds") return memkv::bench::ParseSeconds(flag, value, 600, &o.seconds, err);
    if (flag == "--json") o.json = value;
    else if (flag == "--memkv") o.memkv = value;
    else {
      *err = "unknown option " + flag;
      return false;
    }
    return true;
  };
  auto known = [](std::string_view f) {
    return f == "--shapes" || f == "--rounds" || f == "--seconds" || f == "--json" || f == "--memkv";
  };
  memkv::bench::WalkFlagsOrExit("memkv-nixl-engine-bench", kUsage, args, known, apply);
  return o;
}

std::string Facts(const Options& o, const memkv::nixl::EngineSettings& s, const std::string& target) {
  std::string cpu = "unknown";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  utsname u{};
  ::uname(&u);
  std::string commit = "unknown";
  if (FILE* p = ::popen("git -C " MEMKV_SOURCE_DIR " rev-parse --short HEAD 2>/dev/null", "r")) {
    char buf[64] = {0};
    if (std::fgets(buf, sizeof(buf), p) != nullptr) commit = std::string(buf, std::strcspn(buf, "\n"));
    ::pclose(p);
  }
  std::ostringstream f;
  f << "memkv-nixl-engine-bench  commit " << commit << "  build " << MEMKV_BUILD_TYPE << "\n"
    << "cpu " << cpu << " x" << std::thread::hardware_concurrency() << "  kernel " << u.sysname << " " << u.release
    << " " << u.machine << "\n"
    << "target " << target << "\n"
    << "transport " << s.client.transport << "  num_connections " << s.client.num_connections
    << "  engine: batch_size " << s.batch_size << ", workers " << s.workers << " (its client's async_threads)\n"
    << o.rounds << " rounds of " << o.seconds << " s per side and op, sides in rotating order\n";
  return f.str();
}

// One shape's buffers, keys and prepared transfers.
struct Bench {
  std::vector<std::vector<uint8_t>> src, dst;
  std::vector<std::string> names;
  std::vector<std::string_view> keys;
  std::vector<std::span<const uint8_t>> values;
  std::vector<std::span<uint8_t>> buffers;
  std::unique_ptr<Transfer> write, read;
};

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

Bench MakeBench(TransferEngine& engine, const Shape& shape, size_t shape_index) {
  Bench b;
  std::vector<LocalSpan> src_spans, dst_spans;
  std::vector<ObjectSpan> objects;
  for (uint32_t i = 0; i < shape.count; ++i) {
    const uint64_t dev_id = shape_index * 100000 + i;
    auto key = engine.RegisterObject(dev_id, "nbench/s" + std::to_string(shape_index) + "/" + std::to_string(i));
    if (!key.ok()) Die("RegisterObject: " + key.status().ToString());
    b.names.push_back(TransferEngine::ValueKey(key.value(), 0));
    std::vector<uint8_t> data(shape.bytes);
    uint64_t state = Mix(shape_index * 7919 + i);
    for (size_t off = 0; off < data.size(); off += 8) {
      state = Mix(state);
      std::memcpy(data.data() + off, &state, std::min<size_t>(8, data.size() - off));
    }
    b.src.push_back(std::move(data));
    b.dst.emplace_back(shape.bytes);
    objects.push_back({dev_id, 0, shape.bytes});
  }
  for (uint32_t i = 0; i < shape.count; ++i) {
    b.keys.push_back(b.names[i]);
    b.values.emplace_back(b.src[i]);
    b.buffers.emplace_back(b.dst[i]);
    src_spans.push_back({reinterpret_cast<uintptr_t>(b.src[i].data()), b.src[i].size()});
    dst_spans.push_back({reinterpret_cast<uintptr_t>(b.dst[i].data()), b.dst[i].size()});
  }
  auto w = engine.Prepare(Direction::kWrite, src_spans, objects);
  auto r = engine.Prepare(Direction::kRead, dst_spans, objects);
  if (!w.ok()) Die("Prepare(write): " + w.status().ToString());
  if (!r.ok()) Die("Prepare(read): " + r.status().ToString());
  b.write = std::move(w).value();
  b.read = std::move(r).value();
  return b;
}

// Post, then poll as NIXL's agent does (checkXfer in a loop) until it ends.
void RunTransfer(TransferEngine& engine, Transfer& t, const char* what) {
  const memkv::Status posted = engine.Post(t);
  if (!posted.ok()) Die(std::string("Post(") + what + "): " + posted.ToString());
  for (;;) {
    const memkv::nixl::TransferStatus st = engine.Poll(t);
    if (st.state == TransferState::kDone) return;
    if (st.state == TransferState::kFailed) Die(std::string(what) + " transfer failed: " + st.error.ToString());
    std::this_thread::yield();
  }
}

void RunBatch(memkv::Client& client, Bench& b, bool write) {
  memkv::BatchResult r;
  if (write) {
    r = client.BatchPut(b.keys, b.values);
  } else {
    std::vector<size_t> sizes(b.keys.size());
    r = client.BatchGetInto(b.keys, b.buffers, &sizes);
  }
  if (r.present_prefix != b.keys.size()) {
    Die(std::string(write ? "BatchPut" : "BatchGetInto") + ": " + r.statuses[r.present_prefix].ToString());
  }
}

// Back-to-back calls of `call` for `seconds`; calls per second.
double CallsPerSecond(const std::function<void()>& call, double seconds) {
  call();  // one untimed, so each side starts warm
  uint64_t calls = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  Clock::time_point now;
  do {
    call();
    ++calls;
    now = Clock::now();
  } while (now < end);
  return calls / std::chrono::duration<double>(now - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::unique_ptr<memkv::Client> NewClient(const memkv::ClientOptions& options) {
  auto made = memkv::Client::Create(options);
  if (!made.ok()) Die("Client::Create: " + made.status().ToString());
  return std::move(made).value();
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseOptions(argc, argv);

  uint64_t total_bytes = 0;
  for (const Shape& s : o.shapes) total_bytes += s.count * s.bytes;
  memkv::bench::MemkvServerConfig config;
  // Every shape's values stay stored; room for them twice over (values
  // rewritten in place still need a fresh block before the old one goes).
  config.pool_bytes = std::max<uint64_t>(256ULL << 20, 2 * total_bytes + (128ULL << 20));
  const char* tmp = std::getenv("TMPDIR");
  auto server = memkv::bench::MemkvServer::Start(o.memkv, config, kBenchKey, tmp != nullptr ? tmp : "/tmp");
  if (!server.ok()) Die("memkv start: " + server.status().ToString());

  memkv::nixl::EngineSettings settings;  // the engine's defaults
  settings.client.servers = {server.value()->address()};
  settings.client.auth_key_hex = kBenchKey;
  settings.client.transport = "tcp";
  auto made = TransferEngine::Create(settings);
  if (!made.ok()) Die("TransferEngine::Create: " + made.status().ToString());
  std::unique_ptr<TransferEngine> engine = std::move(made).value();
  std::unique_ptr<memkv::Client> client = NewClient(settings.client);
  std::unique_ptr<memkv::Client> control = NewClient(settings.client);

  const std::string target = "spawned " + o.memkv + " at " + server.value()->address() + " (memory mode, pool " +
                             std::to_string(config.pool_bytes >> 20) + " MiB)";
  const std::string facts = Facts(o, settings, target);
  std::fputs(facts.c_str(), stdout);

  const char* kSides[] = {"engine", "client", "control"};
  const char* kOps[] = {"write", "read"};
  std::ostringstream json;
  std::string facts_json = facts;
  for (size_t p = 0; (p = facts_json.find('\n', p)) != std::string::npos;) facts_json.replace(p, 1, "\\n");
  json << "{\"facts\":\"" << facts_json << "\",\"rounds\":" << o.rounds << ",\"seconds\":" << o.seconds
       << ",\"shapes\":[";

  std::printf("\n%-14s %-5s %10s %10s %10s %10s %10s %10s %8s %8s\n", "shape", "op", "engine/s", "client/s",
              "control/s", "eng GiB/s", "cli GiB/s", "ctl GiB/s", "eng/cli", "ctl/cli");
  for (size_t si = 0; si < o.shapes.size(); ++si) {
    const Shape& shape = o.shapes[si];
    Bench b = MakeBench(*engine, shape, si);
    // rate[op][side]: calls per second, one per round.
    std::vector<double> rate[2][3];
    for (uint32_t round = 0; round < o.rounds; ++round) {
      for (int op = 0; op < 2; ++op) {
        const bool write = op == 0;
        for (int k = 0; k < 3; ++k) {
          const int side = static_cast<int>((round + k) % 3);
          std::function<void()> call;
          if (side == 0) call = [&] { RunTransfer(*engine, write ? *b.write : *b.read, kOps[op]); };
          else call = [&, side] { RunBatch(side == 1 ? *client : *control, b, write); };
          rate[op][side].push_back(CallsPerSecond(call, o.seconds));
        }
      }
      std::fprintf(stderr, "%s: round %u/%u done\n", shape.Name().c_str(), round + 1, o.rounds);
    }
    for (uint32_t i = 0; i < shape.count; ++i) {
      if (b.dst[i] != b.src[i]) Die(shape.Name() + ": descriptor " + std::to_string(i) + " read back differs");
    }
    const double call_gib = shape.count * shape.bytes / double(1ULL << 30);
    json << (si ? "," : "") << "{\"shape\":\"" << shape.Name() << "\",\"count\":" << shape.count
         << ",\"bytes\":" << shape.bytes << ",\"ops\":{";
    for (int op = 0; op < 2; ++op) {
      double med[3];
      for (int side = 0; side < 3; ++side) med[side] = Median(rate[op][side]);
      std::printf("%-14s %-5s %10.1f %10.1f %10.1f %10.2f %10.2f %10.2f %7.3fx %7.3fx\n", shape.Name().c_str(),
                  kOps[op], med[0], med[1], med[2], med[0] * call_gib, med[1] * call_gib, med[2] * call_gib,
                  med[0] / med[1], med[2] / med[1]);
      json << (op ? "," : "") << "\"" << kOps[op] << "\":{";
      for (int side = 0; side < 3; ++side) {
        json << "\"" << kSides[side] << "\":{\"median_ops_per_s\":" << med[side]
             << ",\"median_gib_per_s\":" << med[side] * call_gib << ",\"ops_per_s\":[";
        for (size_t r = 0; r < rate[op][side].size(); ++r) json << (r ? "," : "") << rate[op][side][r];
        json << "]},";
      }
      json << "\"engine_over_client\":" << med[0] / med[1] << ",\"control_over_client\":" << med[2] / med[1] << "}";
    }
    json << "}}";
  }
  json << "]}\n";
  std::printf("\nops/s: transfers (engine) or batch calls (clients) of N descriptors per second; medians over "
              "rounds\n");
  std::ofstream(o.json) << json.str();
  std::printf("JSON: %s\n", o.json.c_str());
  return 0;
}
