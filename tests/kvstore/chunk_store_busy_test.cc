// The kv_store backend's ChunkStore when a server sheds puts (Busy): a flush
// a put_chunk started is a skipped store (the chunks stay buffered), a
// manifest is never written ahead of its chunks, and once the server takes
// puts again the same handle saves everything. The server is real; the
// shedding is injected by a client that wraps a real one and answers Busy
// for the puts it is told to shed.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "kvstore/chunk_store.h"
#include "memkv/client.h"
#include "tests/harness.h"

namespace memkv::kvstore {
namespace {

using ::memkv::testing::OptionsFor;
using ::memkv::testing::ServerProcess;
using ::memkv::testing::ServerSpec;

// Forwards to a real client; while `shed` is set, every put answers Busy
// (batch puts per key) without reaching the server.
class SheddingClient final : public Client {
 public:
  explicit SheddingClient(std::unique_ptr<Client> real) : real_(std::move(real)) {}
  std::atomic<bool> shed{false};
  std::atomic<uint64_t> shed_keys{0};
  std::atomic<uint64_t> puts{0};  // single puts that reached the server

  Status Put(std::string_view key, std::span<const uint8_t> value) override {
    if (shed) return Shed(1);
    ++puts;
    return real_->Put(key, value);
  }
  Result<std::vector<uint8_t>> Get(std::string_view key) override { return real_->Get(key); }
  Result<size_t> GetInto(std::string_view key, std::span<uint8_t> buffer) override {
    return real_->GetInto(key, buffer);
  }
  Status Delete(std::string_view key) override { return real_->Delete(key); }
  Result<bool> Exists(std::string_view key) override { return real_->Exists(key); }
  Result<uint64_t> ValueSize(std::string_view key) override { return real_->ValueSize(key); }
  BatchResult BatchPut(std::span<const std::string_view> keys,
                       std::span<const std::span<const uint8_t>> values) override {
    if (shed) return ShedBatch(keys.size());
    return real_->BatchPut(keys, values);
  }
  BatchResult BatchGetInto(std::span<const std::string_view> keys, std::span<const std::span<uint8_t>> buffers,
                           std::vector<size_t>* sizes) override {
    return real_->BatchGetInto(keys, buffers, sizes);
  }
  BatchResult BatchExists(std::span<const std::string_view> keys) override { return real_->BatchExists(keys); }
  BatchResult BatchDelete(std::span<const std::string_view> keys) override { return real_->BatchDelete(keys); }
  Result<std::unique_ptr<AsyncQueue>> NewAsyncQueue() override { return real_->NewAsyncQueue(); }
  Result<KeyListPage> ListKeys(std::string_view prefix, std::string_view cursor, size_t page_size) override {
    return real_->ListKeys(prefix, cursor, page_size);
  }
  size_t ServerFor(std::string_view key) const override { return real_->ServerFor(key); }
  ClientStats Stats() const override { return real_->Stats(); }
  Status RegisterMemory(std::span<uint8_t> region) override { return real_->RegisterMemory(region); }
  Status UnregisterMemory(void* base) override { return real_->UnregisterMemory(base); }
  Status PutWith(std::string_view key, std::span<const uint8_t> value, const PutOptions& options) override {
    if (shed) return Shed(1);
    return real_->PutWith(key, value, options);
  }
  BatchResult BatchPutWith(std::span<const std::string_view> keys, std::span<const std::span<const uint8_t>> values,
                           std::span<const PutOptions> options) override {
    if (shed) return ShedBatch(keys.size());
    return real_->BatchPutWith(keys, values, options);
  }
  Result<size_t> MatchPrefix(std::span<const std::string_view> keys) override { return real_->MatchPrefix(keys); }

 private:
  Status Shed(size_t n) {
    shed_keys += n;
    return Busy("the server is overloaded; put shed");
  }
  BatchResult ShedBatch(size_t n) {
    BatchResult out;
    for (size_t i = 0; i < n; ++i) out.statuses.push_back(Shed(1));
    return out;
  }
  std::unique_ptr<Client> real_;
};

std::vector<uint8_t> Hash(int i) { return {uint8_t('h'), uint8_t(i >> 8), uint8_t(i)}; }
std::vector<uint8_t> Chunk(int i, size_t size) { return std::vector<uint8_t>(size, uint8_t(i * 7 + 1)); }

class ChunkStoreBusyTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.Start(ServerSpec{}).ok()) << server_.Stderr(); }

  // A store over a shedding client (kept in *shedding) with a 1 MiB buffer.
  std::unique_ptr<ChunkStore> Store(const std::string& name_space, SheddingClient** shedding) {
    StoreSettings settings;
    settings.client = OptionsFor({&server_}, 10000);
    settings.buffer_bytes = 1 << 20;
    settings.prefetch_bytes = 0;
    Result<std::unique_ptr<Client>> client = Client::Create(settings.client);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    auto wrapper = std::make_unique<SheddingClient>(std::move(client).value());
    if (shedding != nullptr) *shedding = wrapper.get();
    return ChunkStore::WithClient(std::move(wrapper), name_space, settings);
  }

  ServerProcess server_;
};

constexpr size_t kChunk = 256 << 10;  // four of them fill the 1 MiB buffer

TEST_F(ChunkStoreBusyTest, AShedFlushKeepsTheChunksBufferedAndTheManifestWaitsForThem) {
  SheddingClient* shedding = nullptr;
  std::unique_ptr<ChunkStore> store = Store("busy", &shedding);
  shedding->shed = true;
  // The fourth chunk fills the buffer and starts a flush the server sheds:
  // a skipped store, not a failure of the put.
  for (int i = 0; i < 6; ++i) {
    const std::vector<uint8_t> hash = Hash(i), data = Chunk(i, kChunk);
    EXPECT_TRUE(store->PutChunk(hash, data).ok()) << i;
  }
  EXPECT_GE(shedding->shed_keys.load(), 4u);
  // The handle still reads its buffered chunks.
  Result<MallocBuffer> buffered = store->GetChunk(Hash(2));
  ASSERT_TRUE(buffered.ok()) << buffered.status().ToString();
  EXPECT_EQ(buffered->size(), kChunk);
  // No manifest ahead of its chunks: refused with the server's Busy.
  const std::vector<uint8_t> manifest = {'m', '1'};
  Status refused = store->PutManifest("slot", manifest);
  EXPECT_EQ(refused.code(), StatusCode::kBusy) << refused.ToString();
  {
    std::unique_ptr<ChunkStore> reader = Store("busy", nullptr);
    EXPECT_EQ(reader->GetManifest("slot").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(reader->GetChunk(Hash(0)).status().code(), StatusCode::kNotFound);
  }
  // The server takes puts again: the same handle saves every chunk.
  shedding->shed = false;
  ASSERT_TRUE(store->PutManifest("slot", manifest).ok());
  std::unique_ptr<ChunkStore> reader = Store("busy", nullptr);
  Result<MallocBuffer> got = reader->GetManifest("slot");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(std::vector<uint8_t>(got->data(), got->data() + got->size()), manifest);
  for (int i = 0; i < 6; ++i) {
    Result<MallocBuffer> chunk = reader->GetChunk(Hash(i));
    ASSERT_TRUE(chunk.ok()) << i << ": " << chunk.status().ToString();
    EXPECT_EQ(std::vector<uint8_t>(chunk->data(), chunk->data() + chunk->size()), Chunk(i, kChunk)) << i;
  }
}

TEST_F(ChunkStoreBusyTest, PastTwiceItsBoundsTheBufferReportsTheServerBusy) {
  SheddingClient* shedding = nullptr;
  std::unique_ptr<ChunkStore> store = Store("busy-bound", &shedding);
  shedding->shed = true;
  Status status;
  int puts = 0;
  while (status.ok() && puts < 32) {
    const std::vector<uint8_t> hash = Hash(puts), data = Chunk(puts, kChunk);
    status = store->PutChunk(hash, data);
    ++puts;
  }
  // 2 MiB buffered (eight chunks) is twice the bound: the eighth put reports Busy.
  EXPECT_EQ(status.code(), StatusCode::kBusy) << status.ToString();
  EXPECT_EQ(puts, 8);
  shedding->shed = false;
  const std::vector<uint8_t> manifest = {'m'};
  EXPECT_TRUE(store->PutManifest("slot", manifest).ok());
  std::unique_ptr<ChunkStore> reader = Store("busy-bound", nullptr);
  for (int i = 0; i < puts; ++i) EXPECT_TRUE(reader->GetChunk(Hash(i)).ok()) << i;
}

// A chunk of kDirectChunkBytes or more is stored by PutChunk itself, from
// the caller's bytes, and not again when the servers hold it; one the server
// sheds is buffered, so the manifest waits for it as for a shed flush.
TEST_F(ChunkStoreBusyTest, LargeChunksAreSentByPutChunkAndAShedOneWaitsForTheManifest) {
  SheddingClient* shedding = nullptr;
  std::unique_ptr<ChunkStore> store = Store("direct", &shedding);
  for (int i = 0; i < 2; ++i) {
    const std::vector<uint8_t> hash = Hash(i), data = Chunk(i, kDirectChunkBytes);
    ASSERT_TRUE(store->PutChunk(hash, data).ok()) << i;
  }
  EXPECT_EQ(shedding->puts.load(), 2u);
  std::unique_ptr<ChunkStore> reader = Store("direct", nullptr);
  Result<MallocBuffer> early = reader->GetChunk(Hash(1));
  ASSERT_TRUE(early.ok()) << "stored before any manifest: " << early.status().ToString();
  EXPECT_EQ(std::vector<uint8_t>(early->data(), early->data() + early->size()), Chunk(1, kDirectChunkBytes));

  // Held by the servers already: asked, not sent again (another handle too).
  SheddingClient* again_client = nullptr;
  std::unique_ptr<ChunkStore> again = Store("direct", &again_client);
  ASSERT_TRUE(again->PutChunk(Hash(0), Chunk(0, kDirectChunkBytes)).ok());
  EXPECT_EQ(again_client->puts.load(), 0u);

  shedding->shed = true;
  EXPECT_TRUE(store->PutChunk(Hash(2), Chunk(2, kDirectChunkBytes)).ok()) << "a shed store is skipped, not failed";
  EXPECT_EQ(reader->GetChunk(Hash(2)).status().code(), StatusCode::kNotFound);
  const std::vector<uint8_t> manifest = {'m'};
  EXPECT_EQ(store->PutManifest("slot", manifest).code(), StatusCode::kBusy);
  EXPECT_EQ(reader->GetManifest("slot").status().code(), StatusCode::kNotFound);
  shedding->shed = false;
  ASSERT_TRUE(store->PutManifest("slot", manifest).ok());
  Result<MallocBuffer> late = reader->GetChunk(Hash(2));
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  EXPECT_EQ(std::vector<uint8_t>(late->data(), late->data() + late->size()), Chunk(2, kDirectChunkBytes));
}

}  // namespace
}  // namespace memkv::kvstore
