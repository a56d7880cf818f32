// Test helper: a good non-default value and a bad value for every client
// option (memkv/client.h, ClientOptionTable), so that the tests of each
// integration (YAML and MEMKV_*, the C API, the kv_store backend, the NIXL
// backend) can walk the whole table. A new option without a sample fails
// ClientOptionTableTest.RowsAreCompleteAndUnique.
#ifndef MEMKV_CONFIG_CLIENT_OPTION_SAMPLES_H_
#define MEMKV_CONFIG_CLIENT_OPTION_SAMPLES_H_

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace memkv::config::test_samples {

struct Sample {
  std::string name;
  std::string good;  // valid, not the default
  std::string bad;   // refused
};

inline const std::vector<Sample>& Samples() {
  static const std::vector<Sample> samples = {
      {"servers", "10.0.0.1:9900,10.0.0.2:9901", "nohost"},
      {"auth_key", std::string(64, 'b'), "abc"},
      {"transport", "tcp", "udp"},
      {"num_connections", "8", "0"},
      {"timeout_ms", "250", "soon"},
      {"connect_timeout_ms", "100", "0"},
      {"discovery_interval_ms", "500", "3600001"},
      {"dns_server", "127.0.0.1:5353", "dns.example:53"},
      {"resolve_timeout_ms", "500", "0"},
      {"rebalance_grace_ms", "60000", "soon"},
      {"async_threads", "2", "65"},
      {"store_shed_latency_ms", "250", "3600001"},
      {"store_shed_inflight", "8", "65537"},
      {"rdma_devices", "mlx5_0,mlx5_1", "mlx5_0,mlx5_0"},
      {"rdma_mtu", "1024", "1000"},
      {"rdma_retry_count", "3", "8"},
      {"rdma_timeout", "20", "32"},
      {"rdma_qps", "4", "17"},
      {"rdma_gid_index", "3", "256"},
      {"rdma_traffic_class", "104", "30"},
      {"rdma_service_level", "3", "16"},
      {"prometheus_bind", "127.0.0.1:9100", "nohost"},
      {"log_level", "debug", "loud"},
      {"access_log_path", "/dev/null", "relative/access.jsonl"},
      {"access_log_sample", "0.5", "1.5"},
      {"access_log_max_lines_per_sec", "50", "0"},
      {"identity_model", "meta-llama/Llama-3.1-8B", std::string(257, 'm')},
      {"identity_revision", "0e9e39f", std::string(257, 'r')},
      {"identity_kv_dtype", "bfloat16", std::string(257, 'd')},
      {"identity_layout", "NHD", std::string(257, 'l')},
      {"identity_block_tokens", "16", "sixteen"},
      {"identity_tp_rank", "1", "65536"},
      {"identity_tp_size", "4", "0"},
      {"identity_engine", "vllm", std::string(257, 'e')},
      {"identity_engine_version", "0.11.0", std::string(257, 'v')},
      {"identity_extras", "lora=a,pp_rank=0", "novalue"},
  };
  return samples;
}

inline const Sample& SampleFor(std::string_view name) {
  for (const Sample& s : Samples()) {
    if (s.name == name) return s;
  }
  std::abort();  // a table row without a sample: add one above
}

}  // namespace memkv::config::test_samples

#endif  // MEMKV_CONFIG_CLIENT_OPTION_SAMPLES_H_
