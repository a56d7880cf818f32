// memkv-preload-bench: write and read throughput of 16 MiB files through
// libmemkv_preload.so against the same loop through the C client
// (memkv_put / memkv_get into a buffer), alternating round by round in one
// run (docs/preload.md, "Figures"). Run it under the shim:
//
//   LD_PRELOAD=build/src/preload/libmemkv_preload.so MEMKV_PRELOAD_PREFIX=/mnt/kv
//     MEMKV_SERVERS=... MEMKV_AUTH_KEY=... build/memkv-preload-bench /mnt/kv [rounds] [files]
//
// bench/preload_bench.sh starts a server and does that.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "memkv/memkv.h"

namespace {

constexpr size_t kFileBytes = size_t{16} << 20;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void Die(const std::string& what) {
  fprintf(stderr, "memkv-preload-bench: %s\n", what.c_str());
  exit(1);
}

void ShimWrite(const std::string& path, const std::vector<uint8_t>& data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) Die("open " + path + ": " + strerror(errno));
  if (write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) Die("write " + path);
  if (close(fd) != 0) Die("close " + path + ": " + strerror(errno));
}

void ShimRead(const std::string& path, std::vector<uint8_t>* buf) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) Die("open " + path + ": " + strerror(errno));
  size_t done = 0;
  for (;;) {
    ssize_t n = read(fd, buf->data() + done, buf->size() - done);
    if (n < 0) Die("read " + path);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  if (done != kFileBytes) Die("short read of " + path);
  close(fd);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) Die("usage: memkv-preload-bench DIR_UNDER_PREFIX [rounds=5] [files=8] [JSON_PATH]");
  std::string dir = argv[1];
  int rounds = argc > 2 ? atoi(argv[2]) : 5;
  int files = argc > 3 ? atoi(argv[3]) : 8;
  memkv_client_t* client = nullptr;
  if (memkv_client_open_env(&client) != MEMKV_OK) Die(std::string("memkv_client_open_env: ") + memkv_last_error());
  std::vector<uint8_t> data(kFileBytes);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 16));
  std::vector<uint8_t> buf(kFileBytes);
  std::vector<double> shim_w, shim_r, c_w, c_r;
  double mib = static_cast<double>(kFileBytes) * files / (1 << 20);
  for (int r = 0; r < rounds; ++r) {
    double t = Now();
    for (int f = 0; f < files; ++f) ShimWrite(dir + "/bench-" + std::to_string(f) + ".bin", data);
    shim_w.push_back(mib / (Now() - t));
    t = Now();
    for (int f = 0; f < files; ++f) {
      std::string key = "bench-c/" + std::to_string(f);
      if (memkv_put(client, key.data(), key.size(), data.data(), data.size()) != MEMKV_OK) Die(memkv_last_error());
    }
    c_w.push_back(mib / (Now() - t));
    t = Now();
    for (int f = 0; f < files; ++f) ShimRead(dir + "/bench-" + std::to_string(f) + ".bin", &buf);
    shim_r.push_back(mib / (Now() - t));
    t = Now();
    for (int f = 0; f < files; ++f) {
      std::string key = "bench-c/" + std::to_string(f);
      size_t len = 0;
      if (memkv_get(client, key.data(), key.size(), buf.data(), buf.size(), &len) != MEMKV_OK) Die(memkv_last_error());
    }
    c_r.push_back(mib / (Now() - t));
  }
  printf("16 MiB files, %d per round, %d rounds, median MiB/s (transport %s)\n", files, rounds,
         memkv_transport(client));
  printf("%-8s %12s %12s %8s\n", "op", "shim", "C client", "ratio");
  printf("%-8s %12.0f %12.0f %8.2f\n", "write", Median(shim_w), Median(c_w), Median(shim_w) / Median(c_w));
  printf("%-8s %12.0f %12.0f %8.2f\n", "read", Median(shim_r), Median(c_r), Median(shim_r) / Median(c_r));
  if (argc > 4) {
    // The same medians for bench/run-all (a path outside the shim's prefix).
    FILE* json = fopen(argv[4], "w");
    if (json == nullptr) Die(std::string("cannot write ") + argv[4]);
    fprintf(json,
            "{\"file_bytes\": %zu, \"files\": %d, \"rounds\": %d, \"transport\": \"%s\",\n"
            " \"write\": {\"shim_mib_s\": %.1f, \"c_client_mib_s\": %.1f},\n"
            " \"read\": {\"shim_mib_s\": %.1f, \"c_client_mib_s\": %.1f}}\n",
            kFileBytes, files, rounds, memkv_transport(client), Median(shim_w), Median(c_w), Median(shim_r),
            Median(c_r));
    fclose(json);
  }
  memkv_client_close(client);
  return 0;
}
