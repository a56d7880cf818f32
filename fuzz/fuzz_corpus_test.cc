// Runs each fuzz target over its checked-in corpus and over inputs derived
// from it (truncations, bit flips, random bytes), so every build exercises
// the parsers with hostile input even without libFuzzer. The targets must
// neither crash, trip a sanitizer nor break the invariants they check on
// what a decoder accepts (fuzz_targets.h); results are not checked here (the
// parsers' own unit tests do that).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "fuzz/fuzz_targets.h"

namespace memkv::fuzz {
namespace {

using Target = void (*)(const uint8_t*, size_t);

std::vector<std::vector<uint8_t>> LoadCorpus(const std::string& name) {
  std::vector<std::vector<uint8_t>> out;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(MEMKV_FUZZ_CORPUS) + "/" + name)) {
    std::ifstream in(entry.path(), std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

void Exercise(Target target, const std::vector<std::vector<uint8_t>>& corpus) {
  std::mt19937_64 rng(12345);
  for (const auto& input : corpus) {
    target(input.data(), input.size());
    for (size_t cut = 0; cut < input.size(); cut += 1 + input.size() / 64) target(input.data(), cut);
    for (int i = 0; i < 200 && !input.empty(); ++i) {
      std::vector<uint8_t> mutated = input;
      mutated[rng() % mutated.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
      target(mutated.data(), mutated.size());
    }
  }
  for (int i = 0; i < 500; ++i) {
    std::vector<uint8_t> random(rng() % 512);
    for (auto& b : random) b = static_cast<uint8_t>(rng());
    target(random.data(), random.size());
  }
}

TEST(FuzzCorpusTest, Frame) {
  auto corpus = LoadCorpus("frame");
  ASSERT_FALSE(corpus.empty());
  Exercise(&FuzzFrame, corpus);
}

TEST(FuzzCorpusTest, Config) {
  auto corpus = LoadCorpus("server_config");
  ASSERT_FALSE(corpus.empty());
  Exercise(&FuzzConfig, corpus);
}

TEST(FuzzCorpusTest, RdmaOffer) {
  auto corpus = LoadCorpus("rdma_offer");
  ASSERT_FALSE(corpus.empty());
  Exercise(&FuzzRdmaOffer, corpus);
}

TEST(FuzzCorpusTest, RdmaAnswer) {
  auto corpus = LoadCorpus("rdma_answer");
  ASSERT_FALSE(corpus.empty());
  Exercise(&FuzzRdmaAnswer, corpus);
}

TEST(FuzzCorpusTest, RdmaPutRequest) {
  auto corpus = LoadCorpus("rdma_put_request");
  ASSERT_FALSE(corpus.empty());
  Exercise(&FuzzRdmaPutRequest, corpus);
}

TEST(FuzzCorpusTest, RdmaGrant) {
  auto corpus = LoadCorpus("rdma_grant");
  ASSERT_FALSE(corpus.empty());
  Exercise(&FuzzRdmaGrant, corpus);
}

TEST(FuzzCorpusTest, Token) {
  auto corpus = LoadCorpus("token");
  ASSERT_FALSE(corpus.empty());
  Exercise(&FuzzToken, corpus);
}

TEST(FuzzCorpusTest, DcbReply) {
  auto corpus = LoadCorpus("dcb_reply");
  ASSERT_FALSE(corpus.empty());
  Exercise(&FuzzDcbReply, corpus);
}

TEST(FuzzCorpusTest, DriveFormat) {
  auto corpus = LoadCorpus("drive_format");
  ASSERT_FALSE(corpus.empty());
  Exercise(&FuzzDriveFormat, corpus);
}

TEST(FuzzCorpusTest, HttpResponse) {
  auto corpus = LoadCorpus("http_response");
  ASSERT_FALSE(corpus.empty());
  Exercise(&FuzzHttpResponse, corpus);
}

TEST(FuzzCorpusTest, HttpRequest) {
  auto corpus = LoadCorpus("http_request");
  ASSERT_FALSE(corpus.empty());
  Exercise(&FuzzHttpRequest, corpus);
}

}  // namespace
}  // namespace memkv::fuzz
