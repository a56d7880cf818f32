// memkv-nixl-check: the MEMKV backend through a real NIXL agent.
//
// Creates the MEMKV backend (found through NIXL_PLUGIN_DIR) with the
// servers and key given, registers DRAM buffers and OBJ descriptors, and
// runs one scenario:
//   verify  writes --blocks blocks of each --sizes size, reads them back into
//           other buffers and compares them byte for byte; checks queryMem
//           on blocks present and absent.
//   bench   GiB/s of writes and reads through the agent against the C++
//           client doing the same batches (batch_size keys per call from
//           `workers` threads) and against one client batch of every key,
//           alternating, --repeat times; medians and ratios.
//   kill    posts a write of every block, SIGKILLs --kill-pid while it is in
//           flight and checks that the request ends in an error status
//           within --deadline-ms, not a hang.
// Prints what it did and "PASS" or "FAIL: why" last; exits 0 on PASS.
// Built only against an installed NIXL (scripts/nixl-check.sh runs it).
#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "memkv/client.h"
#include <nixl.h>  // NIXL's installed header (MEMKV_NIXL_PREFIX)

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string scenario;
  std::string servers;
  std::string auth_key;
  std::string transport = "tcp";
  size_t blocks = 1000;
  std::vector<size_t> sizes = {64 << 10, 2 << 20};
  uint32_t batch_size = 64;
  uint32_t workers = 2;
  int repeat = 3;
  pid_t kill_pid = 0;
  int deadline_ms = 60000;
  uint32_t timeout_ms = 5000;
};

[[noreturn]] void Die(const std::string& why) {
  std::printf("FAIL: %s\n", why.c_str());
  std::fflush(stdout);
  std::exit(1);
}

size_t ParseSize(std::string_view s) {
  size_t n = std::stoul(std::string(s));
  if (s.ends_with("KiB")) n <<= 10;
  if (s.ends_with("MiB")) n <<= 20;
  return n;
}

Args Parse(int argc, char** argv) {
  Args a;
  if (argc < 2) Die("usage: memkv-nixl-check verify|bench|kill --servers H:P[,..] --auth-key HEX [options]");
  a.scenario = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string v = argv[i + 1];
    if (flag == "--servers") a.servers = v;
    else if (flag == "--auth-key") a.auth_key = v;
    else if (flag == "--transport") a.transport = v;
    else if (flag == "--blocks") a.blocks = std::stoul(v);
    else if (flag == "--batch-size") a.batch_size = static_cast<uint32_t>(std::stoul(v));
    else if (flag == "--workers") a.workers = static_cast<uint32_t>(std::stoul(v));
    else if (flag == "--repeat") a.repeat = std::stoi(v);
    else if (flag == "--kill-pid") a.kill_pid = static_cast<pid_t>(std::stol(v));
    else if (flag == "--deadline-ms") a.deadline_ms = std::stoi(v);
    else if (flag == "--timeout-ms") a.timeout_ms = static_cast<uint32_t>(std::stoul(v));
    else if (flag == "--sizes") {
      a.sizes.clear();
      for (size_t p = 0; p <= v.size();) {
        size_t q = v.find(',', p);
        if (q == std::string::npos) q = v.size();
        a.sizes.push_back(ParseSize(v.substr(p, q - p)));
        p = q + 1;
      }
    } else Die("unknown flag " + flag);
  }
  if (a.servers.empty() || a.auth_key.empty()) Die("--servers and --auth-key are required");
  return a;
}

void Fill(std::vector<uint8_t>& v, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (size_t i = 0; i < v.size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(v.data() + i, &x, std::min<size_t>(8, v.size() - i));
  }
}

// The agent, its MEMKV backend, and the blocks of one size: a source and a
// sink region in DRAM, one OBJ descriptor per block (devId = first + i).
class Check {
 public:
  explicit Check(const Args& args) : args_(args), agent_("memkv-nixl-check", nixlAgentConfig(false)) {
    std::vector<nixl_backend_t> plugins;
    agent_.getAvailPlugins(plugins);
    std::printf("plugins found:");
    for (auto& p : plugins) std::printf(" %s", p.c_str());
    std::printf("\n");
    if (std::find(plugins.begin(), plugins.end(), "MEMKV") == plugins.end()) {
      Die("the MEMKV plugin is not among them (NIXL_PLUGIN_DIR?)");
    }
    nixl_mem_list_t mems;
    nixl_b_params_t defaults;
    if (agent_.getPluginParams("MEMKV", mems, defaults) != NIXL_SUCCESS) Die("getPluginParams(MEMKV)");
    std::printf("MEMKV parameters:");
    for (auto& [k, v] : defaults) std::printf(" %s", k.c_str());
    std::printf("\n");
    // Bad parameters fail createBackend (the reasons go to NIXL's log).
    nixl_b_params_t bad = {{"servers", args.servers}, {"auth_key", args.auth_key}, {"batch_size", "0"},
                           {"wokers", "2"}};
    nixlBackendH* refused = nullptr;
    if (agent_.createBackend("MEMKV", bad, refused) == NIXL_SUCCESS) Die("createBackend took batch_size 0");
    std::printf("createBackend(MEMKV) with batch_size 0 and an unknown parameter: refused\n");
    nixl_b_params_t params = {{"servers", args.servers},
                              {"auth_key", args.auth_key},
                              {"transport", args.transport},
                              {"timeout_ms", std::to_string(args.timeout_ms)},
                              {"batch_size", std::to_string(args.batch_size)},
                              {"workers", std::to_string(args.workers)}};
    nixl_status_t s = agent_.createBackend("MEMKV", params, backend_);
    if (s != NIXL_SUCCESS) Die("createBackend(MEMKV): " + nixlEnumStrings::statusStr(s));
    opt_.backends.push_back(backend_);
  }

  nixlAgent& agent() { return agent_; }
  const nixl_opt_args_t* opt() const { return &opt_; }

  // Registers the regions and objects for blocks of `size`.
  void Setup(size_t size, uint64_t first_dev_id) {
    size_ = size;
    first_ = first_dev_id;
    source_.assign(args_.blocks * size, 0);
    sink_.assign(args_.blocks * size, 0);
    Fill(source_, size);
    dram_ = nixl_reg_dlist_t(DRAM_SEG);
    dram_.addDesc(nixlBlobDesc(reinterpret_cast<uintptr_t>(source_.data()), source_.size(), 0, ""));
    dram_.addDesc(nixlBlobDesc(reinterpret_cast<uintptr_t>(sink_.data()), sink_.size(), 0, ""));
    if (agent_.registerMem(dram_, &opt_) != NIXL_SUCCESS) Die("registerMem(DRAM_SEG)");
    objects_ = nixl_reg_dlist_t(OBJ_SEG);
    for (size_t i = 0; i < args_.blocks; ++i) objects_.addDesc(nixlBlobDesc(0, size, first_ + i, ""));
    if (agent_.registerMem(objects_, &opt_) != NIXL_SUCCESS) Die("registerMem(OBJ_SEG)");
  }

  void Teardown() {
    agent_.deregisterMem(objects_, &opt_);
    agent_.deregisterMem(dram_, &opt_);
  }

  // A request moving every block between `region` and its object.
  nixlXferReqH* Request(nixl_xfer_op_t op, std::vector<uint8_t>& region) {
    nixl_xfer_dlist_t local(DRAM_SEG), remote(OBJ_SEG);
    for (size_t i = 0; i < args_.blocks; ++i) {
      local.addDesc(nixlBasicDesc(reinterpret_cast<uintptr_t>(region.data() + i * size_), size_, 0));
      remote.addDesc(nixlBasicDesc(0, size_, first_ + i));
    }
    nixlXferReqH* req = nullptr;
    nixl_status_t s = agent_.createXferReq(op, local, remote, "memkv-nixl-check", req, &opt_);
    if (s != NIXL_SUCCESS) Die("createXferReq: " + nixlEnumStrings::statusStr(s));
    return req;
  }

  // Posts and polls to the end; the final status.
  nixl_status_t Run(nixlXferReqH* req, int deadline_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(deadline_ms);
    nixl_status_t s = agent_.postXferReq(req);
    while (s == NIXL_IN_PROG && Clock::now() < deadline) {
      // An engine polls between other work; a tight loop here would take
      // a core from the transfer itself on a small machine.
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      s = agent_.getXferStatus(req);
    }
    return s;
  }

  std::vector<uint8_t>& source() { return source_; }
  std::vector<uint8_t>& sink() { return sink_; }
  size_t size() const { return size_; }
  uint64_t first() const { return first_; }

 private:
  const Args& args_;
  nixlAgent agent_;
  nixlBackendH* backend_ = nullptr;
  nixl_opt_args_t opt_;
  size_t size_ = 0;
  uint64_t first_ = 0;
  std::vector<uint8_t> source_, sink_;
  nixl_reg_dlist_t dram_{DRAM_SEG};
  nixl_reg_dlist_t objects_{OBJ_SEG};
};

// A C++ client of the same servers, as the reference and the observer.
std::unique_ptr<memkv::Client> MakeClient(const Args& args) {
  memkv::ClientOptions o;
  for (size_t p = 0; p <= args.servers.size();) {
    size_t q = args.servers.find(',', p);
    if (q == std::string::npos) q = args.servers.size();
    o.servers.push_back(args.servers.substr(p, q - p));
    p = q + 1;
  }
  o.auth_key_hex = args.auth_key;
  o.transport = args.transport;
  o.timeout_ms = args.timeout_ms;
  auto client = memkv::Client::Create(o);
  if (!client.ok()) Die("Client::Create: " + client.status().ToString());
  return std::move(client).value();
}

// An object named by metaInfo, written at two offsets: the values land
// under "<metaInfo>" and "<metaInfo>@<offset>", where any client reads them.
void VerifyOffsets(const Args& args, Check& check) {
  const size_t piece = 64 << 10;
  std::vector<uint8_t> bytes(2 * piece);
  Fill(bytes, 77);
  nixl_reg_dlist_t dram(DRAM_SEG), object(OBJ_SEG);
  dram.addDesc(nixlBlobDesc(reinterpret_cast<uintptr_t>(bytes.data()), bytes.size(), 0, ""));
  object.addDesc(nixlBlobDesc(0, 0, 424242, "nixl-check-object"));
  if (check.agent().registerMem(dram, check.opt()) != NIXL_SUCCESS ||
      check.agent().registerMem(object, check.opt()) != NIXL_SUCCESS) {
    Die("registerMem for the offsets check");
  }
  nixl_xfer_dlist_t local(DRAM_SEG), remote(OBJ_SEG);
  for (size_t i = 0; i < 2; ++i) {
    local.addDesc(nixlBasicDesc(reinterpret_cast<uintptr_t>(bytes.data() + i * piece), piece, 0));
    remote.addDesc(nixlBasicDesc(i * piece, piece, 424242));
  }
  nixlXferReqH* req = nullptr;
  if (check.agent().createXferReq(NIXL_WRITE, local, remote, "memkv-nixl-check", req, check.opt()) != NIXL_SUCCESS) {
    Die("createXferReq for the offsets check");
  }
  nixl_status_t s = check.Run(req, args.deadline_ms);
  if (s != NIXL_SUCCESS) Die("offsets write: " + nixlEnumStrings::statusStr(s));
  check.agent().releaseXferReq(req);
  std::unique_ptr<memkv::Client> client = MakeClient(args);
  for (size_t i = 0; i < 2; ++i) {
    const std::string key = i == 0 ? "nixl-check-object" : "nixl-check-object@" + std::to_string(piece);
    auto got = client->Get(key);
    if (!got.ok() || got->size() != piece || std::memcmp(got->data(), bytes.data() + i * piece, piece) != 0) {
      Die("the C++ client does not read the piece at offset " + std::to_string(i * piece) + " under '" + key + "'");
    }
  }
  std::printf("offsets: an OBJ descriptor at offset 0 and at %zu landed under 'nixl-check-object' and "
              "'nixl-check-object@%zu', read back by the C++ client\n", piece, piece);
  check.agent().deregisterMem(object, check.opt());
  check.agent().deregisterMem(dram, check.opt());
}

void Verify(const Args& args, Check& check) {
  uint64_t first = 1;
  for (size_t size : args.sizes) {
    check.Setup(size, first);
    const auto t0 = Clock::now();
    nixlXferReqH* w = check.Request(NIXL_WRITE, check.source());
    nixl_status_t s = check.Run(w, args.deadline_ms);
    if (s != NIXL_SUCCESS) Die("write of " + std::to_string(args.blocks) + " blocks: " + nixlEnumStrings::statusStr(s));
    check.agent().releaseXferReq(w);
    nixlXferReqH* r = check.Request(NIXL_READ, check.sink());
    s = check.Run(r, args.deadline_ms);
    if (s != NIXL_SUCCESS) Die("read back: " + nixlEnumStrings::statusStr(s));
    check.agent().releaseXferReq(r);
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    for (size_t i = 0; i < args.blocks; ++i) {
      if (std::memcmp(check.source().data() + i * size, check.sink().data() + i * size, size) != 0) {
        Die("block " + std::to_string(i) + " of " + std::to_string(size) + " bytes differs after the read");
      }
    }
    std::printf("verify: %zu blocks of %zu bytes written and read back through NIXL, byte for byte equal (%.2f s)\n",
                args.blocks, size, secs);

    // queryMem: the first three blocks exist; objects past the last do not.
    nixl_reg_dlist_t query(OBJ_SEG);
    for (uint64_t i = 0; i < 3; ++i) query.addDesc(nixlBlobDesc(0, size, first + i, ""));
    for (uint64_t i = 0; i < 2; ++i) query.addDesc(nixlBlobDesc(0, size, first + args.blocks + 1000000 + i, ""));
    std::vector<nixl_query_resp_t> resp;
    s = check.agent().queryMem(query, resp, check.opt());
    if (s != NIXL_SUCCESS) Die("queryMem: " + nixlEnumStrings::statusStr(s));
    if (resp.size() != 5 || !resp[0] || !resp[1] || !resp[2] || resp[3] || resp[4]) {
      Die("queryMem answered wrongly for 3 present and 2 absent objects");
    }
    std::printf("queryMem: 3 present blocks found, 2 absent ones not\n");
    check.Teardown();
    first += args.blocks;
  }
  VerifyOffsets(args, check);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void Bench(const Args& args, Check& check) {
  std::unique_ptr<memkv::Client> client = MakeClient(args);

  std::printf("%-9s %-5s %12s %12s %12s %10s %10s\n", "size", "op", "nixl GiB/s", "client GiB/s", "one-call GiB/s",
              "nixl/client", "nixl/one");
  uint64_t first = 1;
  for (size_t size : args.sizes) {
    check.Setup(size, first);
    std::vector<std::string> keys;
    for (size_t i = 0; i < args.blocks; ++i) keys.push_back(std::to_string(first + i));
    std::vector<std::string_view> views(keys.begin(), keys.end());
    for (nixl_xfer_op_t op : {NIXL_WRITE, NIXL_READ}) {
      std::vector<uint8_t>& region = op == NIXL_WRITE ? check.source() : check.sink();
      std::vector<double> nixl, same, one;
      nixlXferReqH* req = check.Request(op, region);
      // One batch of keys [b, e) through the client.
      auto client_batch = [&](size_t b, size_t e) {
        std::span<const std::string_view> k(views.data() + b, e - b);
        memkv::BatchResult r;
        if (op == NIXL_WRITE) {
          std::vector<std::span<const uint8_t>> values;
          for (size_t i = b; i < e; ++i) values.emplace_back(region.data() + i * size, size);
          r = client->BatchPut(k, values);
        } else {
          std::vector<std::span<uint8_t>> buffers;
          for (size_t i = b; i < e; ++i) buffers.emplace_back(region.data() + i * size, size);
          std::vector<size_t> sizes;
          r = client->BatchGetInto(k, buffers, &sizes);
        }
        for (auto& st : r.statuses) {
          if (!st.ok()) Die("client batch: " + st.ToString());
        }
      };
      // Each sample moves at least 256 MiB: small blocks run the request again.
      const size_t rounds = std::max<size_t>(1, (size_t{256} << 20) / (args.blocks * size));
      const double gib = static_cast<double>(rounds * args.blocks * size) / (1 << 30);
      // Times `rounds` runs of `body` into `samples`.
      auto timed = [&](std::vector<double>& samples, auto body) {
        const auto t0 = Clock::now();
        for (size_t r = 0; r < rounds; ++r) body();
        samples.push_back(gib / std::chrono::duration<double>(Clock::now() - t0).count());
      };
      auto through_nixl = [&] {
        timed(nixl, [&] {
          nixl_status_t s = check.Run(req, args.deadline_ms);
          if (s != NIXL_SUCCESS) Die("nixl transfer: " + nixlEnumStrings::statusStr(s));
        });
      };
      auto same_batches = [&] {
        timed(same, [&] {
          std::atomic<size_t> next{0};
          std::vector<std::thread> threads;
          for (uint32_t w = 0; w < args.workers; ++w) {
            threads.emplace_back([&] {
              for (size_t b; (b = next.fetch_add(args.batch_size)) < args.blocks;) {
                client_batch(b, std::min(args.blocks, b + args.batch_size));
              }
            });
          }
          for (auto& t : threads) t.join();
        });
      };
      auto one_call = [&] { timed(one, [&] { client_batch(0, args.blocks); }); };
      // Alternating, each in turn first.
      for (int rep = 0; rep < args.repeat; ++rep) {
        if (rep % 3 == 0) { through_nixl(); same_batches(); one_call(); }
        if (rep % 3 == 1) { same_batches(); one_call(); through_nixl(); }
        if (rep % 3 == 2) { one_call(); through_nixl(); same_batches(); }
      }
      check.agent().releaseXferReq(req);
      const double n = Median(nixl), c = Median(same), a1 = Median(one);
      std::printf("%-9zu %-5s %12.3f %12.3f %12.3f %10.2f %10.2f\n", size, op == NIXL_WRITE ? "write" : "read", n, c,
                  a1, n / c, n / a1);
    }
    check.Teardown();
    first += args.blocks;
  }
}

void Kill(const Args& args, Check& check) {
  if (args.kill_pid <= 0) Die("kill needs --kill-pid");
  check.Setup(args.sizes.back(), 1);
  nixlXferReqH* w = check.Request(NIXL_WRITE, check.source());
  const auto t0 = Clock::now();
  nixl_status_t s = check.agent().postXferReq(w);
  if (s != NIXL_IN_PROG) Die("postXferReq returned " + nixlEnumStrings::statusStr(s) + ", not NIXL_IN_PROG");
  // Mid-transfer: once the first block has landed, and the request is still going.
  std::unique_ptr<memkv::Client> observer = MakeClient(args);
  const auto deadline = t0 + std::chrono::milliseconds(args.deadline_ms);
  for (;;) {
    auto first = observer->Exists(std::to_string(check.first()));
    if (first.ok() && *first) break;
    if (Clock::now() > deadline) Die("the first block never landed");
  }
  s = check.agent().getXferStatus(w);
  if (s != NIXL_IN_PROG) Die("the write ended (" + nixlEnumStrings::statusStr(s) + ") before the kill; use more blocks");
  ::kill(args.kill_pid, SIGKILL);
  std::printf("kill: posted a write of %zu blocks of %zu bytes; after the first landed, killed the server (pid %d)\n",
              args.blocks, check.size(), static_cast<int>(args.kill_pid));
  while (s == NIXL_IN_PROG && Clock::now() < deadline) s = check.agent().getXferStatus(w);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (s == NIXL_IN_PROG) Die("the request was still in progress after " + std::to_string(secs) + " s");
  if (s == NIXL_SUCCESS) Die("the request succeeded although its server was killed");
  std::printf("kill: the request ended with %s after %.2f s\n", nixlEnumStrings::statusStr(s).c_str(), secs);
  check.agent().releaseXferReq(w);
  check.Teardown();
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  Check check(args);
  if (args.scenario == "verify") Verify(args, check);
  else if (args.scenario == "bench") Bench(args, check);
  else if (args.scenario == "kill") Kill(args, check);
  else Die("unknown scenario " + args.scenario + "; verify, bench or kill");
  std::printf("PASS\n");
  return 0;
}
