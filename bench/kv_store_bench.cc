// memkv-kv-store-bench: a slot save and restore through libkv_store_memkv.so
// (docs/kv-store-abi.md, "Figures"), the way llama.cpp's chunked slot save
// and oMLX drive it: N chunks then the manifest; the manifest, an optional
// prefetch, then every chunk. The plugin is dlopened by path and used only
// through its table, like any consumer.
//
// It spawns a memkv server on loopback (or uses --servers), and for each of
// --repeat rounds saves and restores a fresh set of chunks, timing:
//   open             of save_cold, the open alone
//   save_cold        fresh handle, chunks new to the server; the handle
//                    takes the client the process kept from the handle
//                    before it (the first round's makes it and connects)
//     _chunks, _manifest  its put_chunk calls, its put_manifest
//   save_warm        the same save again on that handle: every chunk stored
//   save_own_client  a fresh handle with a client of its own
//                    (MEMKV_KV_STORE_SHARED_CLIENTS=0: it connects), new chunks
//   restore_cold     fresh handle, get_manifest, one get_chunk per chunk
//   restore_prefetch fresh handle, get_manifest, prefetch_chunks, get_chunk
//   restore_warm     of restore_prefetch, the get_chunk calls after the prefetch
//   restore_again    a second prefetched restore on that handle
// and, as the reference in the same run, the same bytes through the plain
// C++ client on warm connections: BatchPut of the chunks, BatchGetInto them;
// and BatchPut on a fresh client (created, then its first batch), as a
// fresh handle's save starts.
// Restored bytes are checked against the saved ones after each timing.
//
// A program, not a test; single-threaded.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/flags.h"
#include "kvstore/uri.h"
#include "memkv/client.h"
#include "memkv/kv_store.h"

namespace {

constexpr char kUsage[] =
    "Usage: memkv-kv-store-bench [--chunks N] [--chunk-bytes BYTES] [--hash-bytes N] [--repeat N]\n"
    "                      [--plugin PATH] [--memkv PATH] [--servers HOST:PORT,...] [--json PATH]\n"
    "  --chunks       chunks per save (default 96)\n"
    "  --chunk-bytes  bytes per chunk (default 8388608: an oMLX block of 256 tokens of a\n"
    "                 16-layer, 8-KV-head, 64-dim fp16 model such as Llama-3.2-1B)\n"
    "  --hash-bytes   bytes per chunk hash (default 8, as llama.cpp; oMLX uses 32)\n"
    "  --repeat       rounds; the table shows their median, min and max (default 5)\n"
    "  --plugin       libkv_store_memkv.so (default: this build's)\n"
    "  --memkv        the server binary to spawn (default: this build's)\n"
    "  --servers      use these servers instead (MEMKV_AUTH_KEY holds their key)\n"
    "  --json         where the JSON goes (default kv-store-bench.json)\n";

constexpr char kBenchKey[] = "6b762d73746f72652d62656e63682d6b65792d30313233343536373839616263";

using Clock = std::chrono::steady_clock;

long MinorFaults() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "memkv-kv-store-bench: %s\n", why.c_str());
  std::exit(1);
}

struct Options {
  uint32_t chunks = 96;
  uint64_t chunk_bytes = 8ULL << 20;
  uint32_t hash_bytes = 8;
  uint32_t repeat = 5;
  std::string plugin = MEMKV_KV_STORE_PLUGIN_DEFAULT;
  std::string memkv = MEMKV_BINARY_DEFAULT;
  std::string servers;
  std::string json = "kv-store-bench.json";
};

Options ParseOptions(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  auto apply = [&](const std::string& flag, const std::string& value, std::string* err) {
    uint32_t n = 0;
    if (flag == "--chunks") return memkv::bench::ParseCount(flag, value, 1 << 20, "count", &o.chunks, err);
    if (flag == "--hash-bytes") return memkv::bench::ParseCount(flag, value, 256, "size", &o.hash_bytes, err);
    if (flag == "--repeat") return memkv::bench::ParseCount(flag, value, 1000, "count", &o.repeat, err);
    if (flag == "--chunk-bytes") {
      if (!memkv::bench::ParseCount(flag, value, 256u << 20, "size", &n, err)) return false;
      o.chunk_bytes = n;
      return true;
    }
    if (flag == "--plugin") o.plugin = value;
    else if (flag == "--memkv") o.memkv = value;
    else if (flag == "--servers") o.servers = value;
    else if (flag == "--json") o.json = value;
    else {
      *err = "unknown option " + flag;
      return false;
    }
    return true;
  };
  auto known = [](std::string_view f) {
    return f == "--chunks" || f == "--chunk-bytes" || f == "--hash-bytes" || f == "--repeat" || f == "--plugin" ||
           f == "--memkv" || f == "--servers" || f == "--json";
  };
  memkv::bench::WalkFlagsOrExit("memkv-kv-store-bench", kUsage, args, known, apply);
  return o;
}

// ---- The server --------------------------------------------------------

// `memkv start` on 127.0.0.1 port 0 with a memory pool of `pool_bytes`;
// stopped (SIGTERM) by the destructor.
class SpawnedServer {
 public:
  SpawnedServer(const std::string& binary, uint64_t pool_bytes, uint64_t block_bytes) {
    dir_ = std::filesystem::temp_directory_path() / ("kv-store-bench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const std::string config = dir_ + "/config.yaml";
    std::ofstream(config) << "network:\n  address: 127.0.0.1:0\n  auth_key: " << kBenchKey
                          << "\nmemory:\n  max_size: " << pool_bytes << "\n  block_size: " << block_bytes
                          << "\nstorage:\n  mode: memory\n";
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) Die("pipe2 failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      ::dup2(out[1], STDOUT_FILENO);
      const int err = ::open((dir_ + "/stderr.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(err, STDERR_FILENO);
      const std::string data = dir_ + "/data";
      ::execl(binary.c_str(), binary.c_str(), "start", "--config", config.c_str(), "--data-dir", data.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (line.find('\n') == std::string::npos && Clock::now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (::poll(&p, 1, 1000) <= 0) continue;
      char c;
      if (::read(out[0], &c, 1) != 1) break;
      line += c;
    }
    ::close(out[0]);
    if (line.rfind("ready ", 0) != 0) Die("memkv start did not get ready; see " + dir_ + "/stderr.log");
    address_ = line.substr(6, line.find('\n') - 6);
  }
  ~SpawnedServer() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& address() const { return address_; }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  std::string address_;
};

// ---- One round ---------------------------------------------------------

struct Chunks {
  std::vector<std::vector<uint8_t>> hashes;
  std::vector<std::vector<uint8_t>> data;
  std::vector<uint8_t> manifest;  // the hashes back to back
};

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

Chunks MakeChunks(const Options& o, uint64_t round) {
  Chunks c;
  for (uint32_t i = 0; i < o.chunks; ++i) {
    std::vector<uint8_t> hash(o.hash_bytes);
    for (uint32_t b = 0; b < o.hash_bytes; ++b) hash[b] = static_cast<uint8_t>(Mix(round * 1000003 + i * 257 + b));
    std::vector<uint8_t> data(o.chunk_bytes);
    uint64_t state = Mix(round * 7919 + i);
    for (size_t off = 0; off + 8 <= data.size(); off += 8) {
      state = Mix(state);
      std::memcpy(data.data() + off, &state, 8);
    }
    c.manifest.insert(c.manifest.end(), hash.begin(), hash.end());
    c.hashes.push_back(std::move(hash));
    c.data.push_back(std::move(data));
  }
  return c;
}

class Plugin {
 public:
  explicit Plugin(const std::string& path) {
    lib_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) Die(std::string("dlopen: ") + ::dlerror());
    void* sym = ::dlsym(lib_, KV_STORE_GET_VTABLE_SYMBOL);
    if (sym == nullptr) Die("no kv_store_get_vtable in " + path);
    kv_store_get_vtable_fn get;
    std::memcpy(&get, &sym, sizeof(get));
    vt_ = get();
    if (vt_ == nullptr || vt_->version < 2) Die("the table is missing or older than version 2");
  }
  const kv_store_vtable* operator->() const { return vt_; }

 private:
  void* lib_ = nullptr;
  const kv_store_vtable* vt_ = nullptr;
};

void Check(int rc, const char* call) {
  if (rc != KV_STORE_OK) Die(std::string(call) + " returned " + kv_store_error_name(rc));
}

struct SaveTimes {
  double total_ms = 0;     // the put_chunk calls and put_manifest
  double chunks_ms = 0;    // the put_chunk calls alone
  double manifest_ms = 0;  // put_manifest alone (the flush, then the manifest)
};

SaveTimes Save(const Plugin& vt, void* h, const Chunks& c) {
  const auto start = Clock::now();
  for (size_t i = 0; i < c.hashes.size(); ++i) {
    Check(vt->put_chunk(h, c.hashes[i].data(), c.hashes[i].size(), c.data[i].data(), c.data[i].size()), "put_chunk");
  }
  const auto manifest_start = Clock::now();
  Check(vt->put_manifest(h, "slot", c.manifest.data(), c.manifest.size()), "put_manifest");
  SaveTimes t;
  t.manifest_ms = MsSince(manifest_start);
  t.total_ms = MsSince(start);
  t.chunks_ms = t.total_ms - t.manifest_ms;
  return t;
}

struct RestoreTimes {
  double total_ms = 0;  // get_manifest to the last get_chunk
  double gets_ms = 0;   // the get_chunk calls alone
};

// Restores "slot" on h, checks every chunk, frees what the plugin returned.
RestoreTimes Restore(const Plugin& vt, void* h, const Chunks& c, bool prefetch, size_t hash_bytes) {
  std::vector<std::pair<uint8_t*, size_t>> got(c.hashes.size());
  const auto start = Clock::now();
  uint8_t* manifest = nullptr;
  size_t manifest_len = 0;
  Check(vt->get_manifest(h, "slot", &manifest, &manifest_len), "get_manifest");
  const size_t count = manifest_len / hash_bytes;
  if (prefetch) Check(vt->prefetch_chunks(h, manifest, hash_bytes, count), "prefetch_chunks");
  const auto gets_start = Clock::now();
  for (size_t i = 0; i < count; ++i) {
    Check(vt->get_chunk(h, manifest + i * hash_bytes, hash_bytes, &got[i].first, &got[i].second), "get_chunk");
  }
  const RestoreTimes times{MsSince(start), MsSince(gets_start)};
  if (count != c.hashes.size() || std::memcmp(manifest, c.manifest.data(), manifest_len) != 0) Die("manifest differs");
  std::free(manifest);
  for (size_t i = 0; i < count; ++i) {
    if (got[i].second != c.data[i].size() || std::memcmp(got[i].first, c.data[i].data(), got[i].second) != 0) {
      Die("restored chunk " + std::to_string(i) + " differs");
    }
    std::free(got[i].first);
  }
  return times;
}

// ---- Report -------------------------------------------------------------

std::string Facts(const Options& o, const std::string& target) {
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
    if (std::fgets(buf, sizeof(buf), p) != nullptr) commit = std::string(buf, strcspn(buf, "\n"));
    ::pclose(p);
  }
  std::ostringstream s;
  s << "memkv-kv-store-bench  commit " << commit << "  build " << MEMKV_BUILD_TYPE << "\n"
    << "cpu " << cpu << " x" << std::thread::hardware_concurrency() << "  kernel " << u.sysname << " " << u.release
    << " " << u.machine << "\n"
    << "target " << target << "  transport tcp (MEMKV_TRANSPORT)\n"
    << o.chunks << " chunks of " << o.chunk_bytes << " bytes (" << (o.chunks * o.chunk_bytes >> 20)
    << " MiB a save), hashes of " << o.hash_bytes << " bytes, " << o.repeat << " rounds\n";
  return s.str();
}

struct Stat {
  double median = 0, min = 0, max = 0;
};

Stat Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseOptions(argc, argv);
  const uint64_t save_bytes = o.chunks * o.chunk_bytes;
  std::unique_ptr<SpawnedServer> spawned;
  std::string servers = o.servers;
  std::string target;
  if (servers.empty()) {
    // Room for the plugin's set and the reference's, twice over; blocks the
    // size of a chunk (64 KiB .. 2 MiB).
    uint64_t block = 64 << 10;
    while (block < o.chunk_bytes && block < (2u << 20)) block <<= 1;
    const uint64_t pool = std::max<uint64_t>(512ULL << 20, ((4 * save_bytes) / block + 2 * o.chunks + 64) * block);
    spawned = std::make_unique<SpawnedServer>(o.memkv, pool, block);
    servers = spawned->address();
    ::setenv("MEMKV_AUTH_KEY", kBenchKey, 1);
    target = "spawned " + o.memkv + " at " + servers + " (pool " + std::to_string(pool >> 20) + " MiB)";
  } else {
    target = servers;
  }
  if (std::getenv("MEMKV_TRANSPORT") == nullptr) ::setenv("MEMKV_TRANSPORT", "tcp", 1);
  const char* key = std::getenv("MEMKV_AUTH_KEY");
  if (key == nullptr) Die("MEMKV_AUTH_KEY is not set (needed with --servers)");

  const std::string facts = Facts(o, target);
  std::fputs(facts.c_str(), stdout);

  Plugin vt(o.plugin);
  memkv::ClientOptions copts;
  copts.servers = memkv::bench::SplitComma(servers);
  copts.auth_key_hex = key;
  copts.transport = std::getenv("MEMKV_TRANSPORT");
  auto made = memkv::Client::Create(copts);
  if (!made.ok()) Die(made.status().ToString());
  std::unique_ptr<memkv::Client> client = std::move(made).value();

  std::map<std::string, std::vector<double>> ms;
  // The process's minor page faults during a restore: the outputs are
  // malloc blocks the caller frees, and whether malloc hands the next
  // restore pages it kept or pages it must fault in again sets much of a
  // restore's time for large chunks.
  std::map<std::string, std::vector<double>> faults;
  for (uint32_t round = 0; round < o.repeat; ++round) {
    const Chunks c = MakeChunks(o, round);
    const std::string ns = "bench/r" + std::to_string(round);
    const std::string uri = "memkv://" + servers + "/" + ns;

    // A fresh handle on the client the process kept, then the same save
    // again on it.
    auto save_shared = [&] {
      const auto open_start = Clock::now();
      void* h = vt->open(uri.c_str());
      if (h == nullptr) Die("open " + uri + " failed");
      const double save_open_ms = MsSince(open_start);
      ms["open"].push_back(save_open_ms);
      const SaveTimes cold = Save(vt, h, c);
      ms["save_cold"].push_back(save_open_ms + cold.total_ms);
      ms["save_cold_chunks"].push_back(cold.chunks_ms);
      ms["save_cold_manifest"].push_back(cold.manifest_ms);
      ms["save_warm"].push_back(Save(vt, h, c).total_ms);
      vt->close(h);
    };
    // The same bytes under another namespace (so new to the server) through
    // a handle that makes its own client, as every handle did before clients
    // were shared.
    const std::string own_ns = ns + "/own";
    auto save_own = [&] {
      const char* was = std::getenv("MEMKV_KV_STORE_SHARED_CLIENTS");
      const std::optional<std::string> saved = was ? std::optional<std::string>(was) : std::nullopt;
      ::setenv("MEMKV_KV_STORE_SHARED_CLIENTS", "0", 1);
      const auto start = Clock::now();
      void* own = vt->open(("memkv://" + servers + "/" + own_ns).c_str());
      if (saved.has_value()) {
        ::setenv("MEMKV_KV_STORE_SHARED_CLIENTS", saved->c_str(), 1);
      } else {
        ::unsetenv("MEMKV_KV_STORE_SHARED_CLIENTS");
      }
      if (own == nullptr) Die("open with a client of its own failed");
      const double own_open_ms = MsSince(start);
      ms["save_own_client"].push_back(own_open_ms + Save(vt, own, c).total_ms);
      vt->close(own);
    };
    // Taking turns at going first.
    if (round % 2 == 0) {
      save_shared();
      save_own();
    } else {
      save_own();
      save_shared();
    }

    for (bool prefetch : {false, true}) {
      const auto start = Clock::now();
      void* r = vt->open(uri.c_str());
      if (r == nullptr) Die("open failed");
      const long before = MinorFaults();
      const RestoreTimes t = Restore(vt, r, c, prefetch, o.hash_bytes);
      faults[prefetch ? "restore_prefetch" : "restore_cold"].push_back(static_cast<double>(MinorFaults() - before));
      const double open_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count() - t.total_ms;
      if (!prefetch) {
        ms["restore_cold"].push_back(open_ms + t.total_ms);
        vt->close(r);
        continue;
      }
      ms["restore_prefetch"].push_back(open_ms + t.total_ms);
      ms["restore_warm"].push_back(t.gets_ms);
      const long before_again = MinorFaults();
      ms["restore_again"].push_back(Restore(vt, r, c, true, o.hash_bytes).total_ms);
      faults["restore_again"].push_back(static_cast<double>(MinorFaults() - before_again));
      vt->close(r);
    }

    // The reference: the same bytes through the plain client, warm.
    std::vector<std::string> names;
    std::vector<std::string_view> keys;
    std::vector<std::span<const uint8_t>> values;
    std::vector<std::vector<uint8_t>> storage(c.data.size(), std::vector<uint8_t>(o.chunk_bytes));
    std::vector<std::span<uint8_t>> buffers;
    for (size_t i = 0; i < c.data.size(); ++i) {
      names.push_back("bench/ref" + std::to_string(round) + "/" + std::to_string(i));
    }
    for (size_t i = 0; i < c.data.size(); ++i) {
      keys.push_back(names[i]);
      values.emplace_back(c.data[i]);
      buffers.emplace_back(storage[i]);
    }
    auto start = Clock::now();
    memkv::BatchResult put = client->BatchPut(keys, values);
    ms["raw_batch_put"].push_back(MsSince(start));
    // The same on a fresh client, as save_cold is on a fresh handle: the
    // client's creation (it connects), then the batch on new connections.
    std::vector<std::string> cold_names;
    std::vector<std::string_view> cold_keys;
    for (size_t i = 0; i < c.data.size(); ++i) {
      cold_names.push_back("bench/cold" + std::to_string(round) + "/" + std::to_string(i));
    }
    for (const std::string& name : cold_names) cold_keys.push_back(name);
    {
      start = Clock::now();
      auto fresh = memkv::Client::Create(copts);
      if (!fresh.ok()) Die(fresh.status().ToString());
      memkv::BatchResult cold_put = (*fresh)->BatchPut(cold_keys, values);
      ms["raw_cold_put"].push_back(MsSince(start));
      if (cold_put.present_prefix != cold_keys.size()) Die("reference cold batch failed");
    }
    std::vector<size_t> sizes(keys.size());
    start = Clock::now();
    memkv::BatchResult get = client->BatchGetInto(keys, buffers, &sizes);
    ms["raw_batch_get"].push_back(MsSince(start));
    if (put.present_prefix != keys.size() || get.present_prefix != keys.size()) Die("reference batch failed");

    // Leave the pool as it was: this round's chunks, manifest and keys go.
    for (const std::string& name_space : {ns, own_ns}) {
      for (const auto& hash : c.hashes) (void)client->Delete(memkv::kvstore::ChunkKey(name_space, hash));
      (void)client->Delete(memkv::kvstore::ManifestKey(name_space, "slot"));
    }
    for (std::string_view k : keys) (void)client->Delete(k);
    for (std::string_view k : cold_keys) (void)client->Delete(k);
    std::fprintf(stderr, "round %u/%u done\n", round + 1, o.repeat);
  }

  const std::vector<std::pair<std::string, std::string>> rows = {
      {"open", "of save_cold, the open (the client kept from the handle before)"},
      {"save_cold", "fresh handle, chunks new: open, put_chunk x N, put_manifest"},
      {"save_cold_chunks", "of save_cold, the put_chunk x N (copies into the handle's buffer)"},
      {"save_cold_manifest", "of save_cold, the put_manifest: exists batch, put batch, manifest"},
      {"save_warm", "same save again on that handle: one exists batch, manifest"},
      {"save_own_client", "as save_cold, the handle with a client of its own (it connects)"},
      {"restore_cold", "fresh handle: open, get_manifest, get_chunk x N"},
      {"restore_prefetch", "fresh handle: open, get_manifest, prefetch_chunks, get_chunk x N"},
      {"restore_warm", "of restore_prefetch, the get_chunk x N after the prefetch (served locally)"},
      {"restore_again", "a second prefetched restore on that handle (warm connections)"},
      {"raw_batch_put", "reference: Client::BatchPut of the N chunks, warm connections"},
      {"raw_cold_put", "reference: Client::Create, then BatchPut of the N chunks (new connections)"},
      {"raw_batch_get", "reference: Client::BatchGetInto of the N chunks, warm connections"},
  };
  std::printf("\n%-18s %10s %10s %10s %10s  %s\n", "op", "median ms", "min ms", "max ms", "MiB/s", "what");
  std::ostringstream json;
  json << "{\"facts\":\"" << std::string(facts.begin(), facts.end() - 1) << "\",\"chunks\":" << o.chunks
       << ",\"chunk_bytes\":" << o.chunk_bytes << ",\"hash_bytes\":" << o.hash_bytes << ",\"rounds\":" << o.repeat
       << ",\"ops\":{";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Stat s = Summarize(ms[rows[i].first]);
    // restore_warm moves no bytes over the network, open none at all: no rate for them.
    const std::string mibs = rows[i].first == "restore_warm" || rows[i].first == "open" ||
                                     rows[i].first == "save_cold_chunks" || rows[i].first == "save_cold_manifest"
                                 ? "-"
                                 : std::to_string(static_cast<int64_t>((save_bytes / 1048576.0) / (s.median / 1000.0)));
    std::printf("%-18s %10.2f %10.2f %10.2f %10s  %s\n", rows[i].first.c_str(), s.median, s.min, s.max, mibs.c_str(),
                rows[i].second.c_str());
    json << (i ? "," : "") << "\"" << rows[i].first << "\":{\"median_ms\":" << s.median << ",\"min_ms\":" << s.min
         << ",\"max_ms\":" << s.max << ",\"all_ms\":[";
    for (size_t j = 0; j < ms[rows[i].first].size(); ++j) json << (j ? "," : "") << ms[rows[i].first][j];
    json << "]}";
  }
  json << "}";  // the ops; the faults follow
  const Stat save = Summarize(ms["save_cold"]), put = Summarize(ms["raw_batch_put"]);
  const Stat cold_put = Summarize(ms["raw_cold_put"]);
  const Stat again = Summarize(ms["restore_again"]), get = Summarize(ms["raw_batch_get"]);
  std::printf("\nminor page faults per restore (median):");
  json << ",\"faults\":{";
  const char* sep = "";
  for (const char* op : {"restore_cold", "restore_prefetch", "restore_again"}) {
    const double median = Summarize(faults[op]).median;
    std::printf(" %s %.0f", op, median);
    json << sep << "\"" << op << "\":" << median;
    sep = ",";
  }
  json << "}}\n";
  std::printf(" (%.0f pages hold one restore's bytes)\n", std::ceil(static_cast<double>(save_bytes) / 4096.0));
  const Stat own = Summarize(ms["save_own_client"]);
  std::printf("\nsave_cold / raw_batch_put = %.2fx   save_own_client / raw_cold_put = %.2fx   "
              "restore_again / raw_batch_get = %.2fx\n",
              save.median / put.median, own.median / cold_put.median, again.median / get.median);
  std::string facts_json = json.str();
  for (size_t p = 0; (p = facts_json.find('\n', p)) != std::string::npos && p + 1 < facts_json.size();) {
    facts_json.replace(p, 1, "\\n");
  }
  std::ofstream(o.json) << facts_json;
  std::printf("JSON: %s\n", o.json.c_str());
  return 0;
}
