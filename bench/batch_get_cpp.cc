// memkv-batch-get-bench: the C++ reference of bench/python_batch_get.py,
// which starts it and the server and alternates its rounds with the Python
// client's (docs/client-library.md, "Python").
//
// It holds one client (libmemkv.so, the library the Python module uses) and,
// for each line "run COUNT SIZE MILLIS" on stdin, calls BatchGetInto on the
// keys bench/COUNTxSIZE/0 .. COUNT-1 into COUNT buffers of SIZE bytes, over
// and over for MILLIS ms, and prints one JSON line:
//   {"calls":N,"bytes":B,"seconds":S}
// or {"error":"..."}. The keys, buffers and loop are those of the Python
// side, so the two figures differ by the binding's cost only. It prints
// "ready" once the client exists and exits at the end of its input.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bench/flags.h"
#include "memkv/client.h"

namespace {

constexpr char kUsage[] =
    "Usage: memkv-batch-get-bench --servers HOST:PORT[,...] --auth-key HEX [--transport tcp|auto|rdma]\n"
    "Then reads \"run COUNT SIZE MILLIS\" lines on stdin and answers each with one JSON line.\n"
    "Started by bench/python_batch_get.py; see docs/client-library.md.\n";

using Clock = std::chrono::steady_clock;

// One round: the same keys into the same buffers until the time is up.
std::string Round(memkv::Client& client, size_t count, size_t size, int millis) {
  std::vector<std::string> names(count);
  std::vector<std::string_view> keys(count);
  std::vector<std::vector<uint8_t>> storage(count, std::vector<uint8_t>(size));
  std::vector<std::span<uint8_t>> buffers(count);
  for (size_t i = 0; i < count; ++i) {
    names[i] = "bench/" + std::to_string(count) + "x" + std::to_string(size) + "/" + std::to_string(i);
    keys[i] = names[i];
    buffers[i] = storage[i];
  }
  std::vector<size_t> sizes;
  client.BatchGetInto(keys, buffers, &sizes);  // warm-up: connections opened outside the timed loop
  uint64_t calls = 0;
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::milliseconds(millis);
  Clock::time_point now = start;
  while (now < end) {
    memkv::BatchResult r = client.BatchGetInto(keys, buffers, &sizes);
    if (r.present_prefix != count) {
      const memkv::Status& failed = r.statuses[r.present_prefix];
      return "{\"error\":\"key " + std::to_string(r.present_prefix) + ": " +
             std::string(memkv::StatusCodeName(failed.code())) + "\"}";
    }
    ++calls;
    now = Clock::now();
  }
  const double seconds = std::chrono::duration<double>(now - start).count();
  return "{\"calls\":" + std::to_string(calls) + ",\"bytes\":" + std::to_string(calls * count * size) +
         ",\"seconds\":" + std::to_string(seconds) + "}";
}

}  // namespace

int main(int argc, char** argv) {
  memkv::ClientOptions options;
  options.transport = "tcp";
  std::string error;
  bool help = false;
  const auto apply = [&](const std::string& flag, const std::string& value, std::string* problem) {
    if (flag == "--servers") options.servers = memkv::bench::SplitComma(value);
    else if (flag == "--auth-key") options.auth_key_hex = value;
    else if (flag == "--transport") options.transport = value;
    else *problem = "unknown option '" + flag + "'";
    return problem->empty();
  };
  const auto known = [](std::string_view flag) {
    return flag == "--servers" || flag == "--auth-key" || flag == "--transport";
  };
  const auto no_toggles = [](const std::string&) { return false; };
  if (!memkv::bench::WalkFlags(std::vector<std::string>(argv + 1, argv + argc), no_toggles, known, apply, &help,
                               &error)) {
    std::fprintf(stderr, "memkv-batch-get-bench: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  memkv::Result<std::unique_ptr<memkv::Client>> client = memkv::Client::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "memkv-batch-get-bench: %s\n", client.status().ToString().c_str());
    return 1;
  }
  std::cout << "ready" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string verb;
    size_t count = 0;
    size_t size = 0;
    int millis = 0;
    if (!(in >> verb >> count >> size >> millis) || verb != "run" || count == 0 || size == 0 || millis <= 0) {
      std::cout << "{\"error\":\"expected 'run COUNT SIZE MILLIS'\"}" << std::endl;
      continue;
    }
    std::cout << Round(**client, count, size, millis) << std::endl;
  }
  return 0;
}
