// The MEMKV NIXL backend's engine (src/nixl/transfer_engine.h) against real
// memkv servers: what NIXL's agent drives through the plugin, without NIXL.
#include "nixl/transfer_engine.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/harness.h"

namespace memkv::nixl {
namespace {

using testing::ClientFor;
using testing::OptionsFor;
using testing::Pattern;
using testing::PollUntil;
using testing::ServerProcess;
using testing::ServerSpec;

// Blocks of `size` bytes, block i filled with Pattern(size, seed + i).
struct Blocks {
  Blocks(size_t count, size_t size, uint64_t seed) : bytes(count) {
    for (size_t i = 0; i < count; ++i) bytes[i] = Pattern(size, seed + i);
  }
  Blocks(size_t count, size_t size) : bytes(count, std::vector<uint8_t>(size, 0)) {}
  std::vector<LocalSpan> Spans() {
    std::vector<LocalSpan> out;
    for (auto& b : bytes) out.push_back({reinterpret_cast<uintptr_t>(b.data()), b.size()});
    return out;
  }
  std::vector<std::vector<uint8_t>> bytes;
};

class TransferEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerSpec spec;
    spec.memory_max_size = "192 MiB";
    spec.memory_block_size = "64 KiB";
    for (auto& s : servers_) {
      s = std::make_unique<ServerProcess>();
      ASSERT_TRUE(s->Start(spec).ok()) << s->Stderr();
    }
  }

  std::unique_ptr<TransferEngine> Engine(uint32_t batch_size = 16, uint32_t workers = 2, uint32_t timeout_ms = 5000,
                                         std::string key_prefix = "") {
    EngineSettings settings;
    settings.client = OptionsFor({servers_[0].get(), servers_[1].get()}, timeout_ms);
    settings.batch_size = batch_size;
    settings.workers = workers;
    settings.key_prefix = std::move(key_prefix);
    auto engine = TransferEngine::Create(settings);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    return engine.ok() ? std::move(engine).value() : nullptr;
  }

  // Posts and polls until it ends (never sleeping more than the poll step).
  static TransferStatus Run(TransferEngine& engine, Transfer& t, int timeout_ms = 60000) {
    Status posted = engine.Post(t);
    EXPECT_TRUE(posted.ok()) << posted.ToString();
    TransferStatus st;
    EXPECT_TRUE(PollUntil([&] {
      st = engine.Poll(t);
      return st.state != TransferState::kInProgress;
    }, timeout_ms));
    return st;
  }

  std::unique_ptr<ServerProcess> servers_[2];
};

// Object i at offset 0, one descriptor each.
std::vector<ObjectSpan> Objects(size_t count, size_t size, uint64_t first_dev_id = 0) {
  std::vector<ObjectSpan> out;
  for (size_t i = 0; i < count; ++i) out.push_back({first_dev_id + i, 0, size});
  return out;
}

TEST_F(TransferEngineTest, WritesAndReadsBackBlocksByteForByteInBatchesOverBothServers) {
  auto engine = Engine(/*batch_size=*/16, /*workers=*/2);
  ASSERT_NE(engine, nullptr);
  for (const size_t size : {size_t{64} << 10, size_t{2} << 20}) {
    const size_t count = size == (64u << 10) ? 300 : 24;
    const uint64_t first = size;  // distinct objects per size
    for (size_t i = 0; i < count; ++i) ASSERT_TRUE(engine->RegisterObject(first + i, "").ok());
    Blocks source(count, size, /*seed=*/size);
    Blocks sink(count, size);
    for (auto& b : source.bytes) ASSERT_TRUE(engine->RegisterBuffer(b).ok());
    const std::vector<ObjectSpan> objects = Objects(count, size, first);

    auto write = engine->Prepare(Direction::kWrite, source.Spans(), objects);
    ASSERT_TRUE(write.ok()) << write.status().ToString();
    TransferStatus w = Run(*engine, **write);
    ASSERT_EQ(w.state, TransferState::kDone) << w.error.ToString();

    auto read = engine->Prepare(Direction::kRead, sink.Spans(), objects);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    TransferStatus r = Run(*engine, **read);
    ASSERT_EQ(r.state, TransferState::kDone) << r.error.ToString();
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(sink.bytes[i], source.bytes[i]) << "block " << i;

    // The keys are the devIds in decimal: any MemKV client reads the blocks.
    auto client = ClientFor({servers_[0].get(), servers_[1].get()});
    auto got = client->Get(std::to_string(first + 7));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, source.bytes[7]);
  }
  const EngineStats stats = engine->Stats();
  EXPECT_EQ(stats.transfers_posted, 4u);
  EXPECT_EQ(stats.transfers_failed, 0u);
  EXPECT_EQ(stats.batches, 2u * ((300 + 15) / 16 + (24 + 15) / 16));
  EXPECT_EQ(stats.bytes_written, 300u * (64 << 10) + 24u * (2 << 20));
  EXPECT_EQ(stats.bytes_read, stats.bytes_written);
}

TEST_F(TransferEngineTest, OffsetsWithinAnObjectAreValuesOfTheirOwnAndReadsMustAskForTheWholeValue) {
  auto engine = Engine(/*batch_size=*/2, /*workers=*/3, 5000, "kvbm/");
  ASSERT_NE(engine, nullptr);
  auto key = engine->RegisterObject(42, "block-abc");
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, "kvbm/block-abc");
  ASSERT_TRUE(engine->RegisterObject(43, "").ok());
  Blocks source(3, 4096, 9);
  const std::vector<ObjectSpan> objects = {{42, 0, 4096}, {42, 4096, 4096}, {43, 8192, 4096}};
  auto write = engine->Prepare(Direction::kWrite, source.Spans(), objects);
  ASSERT_TRUE(write.ok());
  EXPECT_EQ((*write)->key(0), "kvbm/block-abc");
  EXPECT_EQ((*write)->key(1), "kvbm/block-abc@4096");
  EXPECT_EQ((*write)->key(2), "kvbm/43@8192");
  ASSERT_EQ(Run(*engine, **write).state, TransferState::kDone);

  auto present = engine->Exists(std::vector<std::string>{"kvbm/block-abc@4096", "kvbm/block-abc@8192", "kvbm/43@8192"});
  ASSERT_TRUE(present.ok());
  EXPECT_EQ(*present, (std::vector<bool>{true, false, true}));

  // Read in another order, into other buffers.
  Blocks sink(3, 4096);
  const std::vector<ObjectSpan> reordered = {objects[2], objects[0], objects[1]};
  auto read = engine->Prepare(Direction::kRead, sink.Spans(), reordered);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(Run(*engine, **read).state, TransferState::kDone);
  EXPECT_EQ(sink.bytes[0], source.bytes[2]);
  EXPECT_EQ(sink.bytes[1], source.bytes[0]);
  EXPECT_EQ(sink.bytes[2], source.bytes[1]);

  // A shorter read of a stored value fails, naming both sizes; so does a longer one.
  for (const size_t len : {size_t{1024}, size_t{8192}}) {
    Blocks small(1, len);
    auto partial = engine->Prepare(Direction::kRead, small.Spans(), std::vector<ObjectSpan>{{42, 4096, len}});
    ASSERT_TRUE(partial.ok());
    TransferStatus st = Run(*engine, **partial);
    ASSERT_EQ(st.state, TransferState::kFailed);
    EXPECT_NE(st.error.message().find("descriptor 0 (key 'kvbm/block-abc@4096')"), std::string::npos)
        << st.error.ToString();
    if (len == 8192) {
      EXPECT_NE(st.error.message().find("the stored value is 4096 bytes and the descriptor reads 8192"),
                std::string::npos) << st.error.ToString();
    }
  }
}

TEST_F(TransferEngineTest, PrepareRefusesRequestsThatCannotBeCarriedOutNamingTheDescriptor) {
  auto engine = Engine();
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->RegisterObject(1, "").ok());
  ASSERT_TRUE(engine->RegisterObject(2, "").ok());
  Blocks two(2, 128, 1);

  auto counts = engine->Prepare(Direction::kWrite, two.Spans(), std::vector<ObjectSpan>{{1, 0, 128}});
  ASSERT_FALSE(counts.ok());
  EXPECT_NE(counts.status().message().find("2 local descriptors and 1 object descriptors"), std::string::npos);

  auto lengths = engine->Prepare(Direction::kWrite, two.Spans(), std::vector<ObjectSpan>{{1, 0, 128}, {2, 0, 64}});
  ASSERT_FALSE(lengths.ok());
  EXPECT_NE(lengths.status().message().find("descriptor 1: the local buffer is 128 bytes and the object range 64"),
            std::string::npos) << lengths.status().ToString();

  auto unknown = engine->Prepare(Direction::kRead, two.Spans(), std::vector<ObjectSpan>{{1, 0, 128}, {9, 0, 128}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("descriptor 1: object 9 is not registered"), std::string::npos);

  auto twice = engine->Prepare(Direction::kWrite, two.Spans(), std::vector<ObjectSpan>{{2, 64, 128}, {2, 64, 128}});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("descriptors 0 and 1 both write key '2@64'"), std::string::npos)
      << twice.status().ToString();
  // Reading one value into two buffers is fine.
  EXPECT_TRUE(engine->Prepare(Direction::kRead, two.Spans(), std::vector<ObjectSpan>{{2, 64, 128}, {2, 64, 128}}).ok());

  ASSERT_TRUE(engine->UnregisterObject(2).ok());
  EXPECT_EQ(engine->UnregisterObject(2).code(), StatusCode::kNotFound);
  EXPECT_FALSE(engine->Prepare(Direction::kRead, two.Spans(), Objects(2, 128, 1)).ok());

  const std::string long_meta(1010, 'm');
  auto too_long = engine->RegisterObject(3, long_meta);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("MemKV keys are at most 1024 bytes"), std::string::npos);
}

TEST_F(TransferEngineTest, AReadOfAMissingValueFailsNamingItAndAnEmptyRequestEndsAtOnce) {
  auto engine = Engine(/*batch_size=*/4);
  ASSERT_NE(engine, nullptr);
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(engine->RegisterObject(100 + i, "").ok());
  Blocks source(10, 1000, 3);
  auto write = engine->Prepare(Direction::kWrite, source.Spans(), Objects(10, 1000, 100));
  ASSERT_TRUE(write.ok());
  ASSERT_EQ(Run(*engine, **write).state, TransferState::kDone);
  auto client = ClientFor({servers_[0].get(), servers_[1].get()});
  ASSERT_TRUE(client->Delete("106").ok());

  Blocks sink(10, 1000);
  auto read = engine->Prepare(Direction::kRead, sink.Spans(), Objects(10, 1000, 100));
  ASSERT_TRUE(read.ok());
  TransferStatus st = Run(*engine, **read);
  ASSERT_EQ(st.state, TransferState::kFailed);
  EXPECT_EQ(st.error.code(), StatusCode::kNotFound);
  EXPECT_NE(st.error.message().find("descriptor 6 (key '106')"), std::string::npos) << st.error.ToString();
  EXPECT_EQ(engine->Stats().transfers_failed, 1u);

  // The same prepared read, posted again after the value is back, succeeds.
  ASSERT_TRUE(client->Put("106", source.bytes[6]).ok());
  st = Run(*engine, **read);
  ASSERT_EQ(st.state, TransferState::kDone) << st.error.ToString();
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(sink.bytes[i], source.bytes[i]);

  auto empty = engine->Prepare(Direction::kRead, {}, {});
  ASSERT_TRUE(empty.ok());
  ASSERT_TRUE(engine->Post(**empty).ok());
  EXPECT_EQ(engine->Poll(**empty).state, TransferState::kDone);
}

TEST_F(TransferEngineTest, AServerKilledMidTransferEndsItInAnErrorNotAHang) {
  auto engine = Engine(/*batch_size=*/8, /*workers=*/2, /*timeout_ms=*/1500);
  ASSERT_NE(engine, nullptr);
  const size_t count = 64;
  for (size_t i = 0; i < count; ++i) ASSERT_TRUE(engine->RegisterObject(i, "").ok());
  Blocks source(count, 256 << 10, 5);
  auto write = engine->Prepare(Direction::kWrite, source.Spans(), Objects(count, 256 << 10));
  ASSERT_TRUE(write.ok());
  // Stopped, then killed: the batches are on their way to a server that
  // accepted them and never answers.
  servers_[0]->Pause();
  ASSERT_TRUE(engine->Post(**write).ok());
  EXPECT_EQ(engine->Post(**write).code(), StatusCode::kFailedPrecondition);  // still in progress
  servers_[0]->Kill();
  TransferStatus st;
  ASSERT_TRUE(PollUntil([&] {
    st = engine->Poll(**write);
    return st.state != TransferState::kInProgress;
  }, 30000));
  // It ends: either the client placed the dead server's batches on the
  // next server (a server that times out is skipped for puts), and every
  // object reads back, or the transfer failed naming the server.
  if (st.state == TransferState::kDone) {
    Blocks back(count, 256 << 10);
    auto read = engine->Prepare(Direction::kRead, back.Spans(), Objects(count, 256 << 10));
    ASSERT_TRUE(read.ok());
    TransferStatus r = Run(*engine, **read);
    ASSERT_EQ(r.state, TransferState::kDone) << r.error.ToString();
    EXPECT_EQ(back.bytes, source.bytes);
    return;
  }
  ASSERT_EQ(st.state, TransferState::kFailed);
  EXPECT_TRUE(st.error.code() == StatusCode::kUnavailable || st.error.code() == StatusCode::kDeadlineExceeded)
      << st.error.ToString();

  // The other server's share was stored; the engine goes on serving it.
  auto client = ClientFor({servers_[0].get(), servers_[1].get()});
  for (size_t i = 0; i < count; ++i) {
    if (client->ServerFor(std::to_string(i)) != 1) continue;
    Blocks one(1, 256 << 10);
    auto read = engine->Prepare(Direction::kRead, one.Spans(), std::vector<ObjectSpan>{{i, 0, 256 << 10}});
    ASSERT_TRUE(read.ok());
    TransferStatus r = Run(*engine, **read);
    ASSERT_EQ(r.state, TransferState::kDone) << r.error.ToString();
    EXPECT_EQ(one.bytes[0], source.bytes[i]);
    break;
  }
}

TEST_F(TransferEngineTest, ReleasingATransferInFlightReturnsAtOnceAndCancelsWhatHasNotStarted) {
  // A deadline longer than the test's own: a release that waited for the
  // paused servers would hang here, and ctest's timeout would fail it.
  auto engine = Engine(/*batch_size=*/1, /*workers=*/1, /*timeout_ms=*/600000);
  ASSERT_NE(engine, nullptr);
  const size_t count = 40;
  for (size_t i = 0; i < count; ++i) ASSERT_TRUE(engine->RegisterObject(i, "").ok());
  Blocks source(count, 4096, 8);
  auto write = engine->Prepare(Direction::kWrite, source.Spans(), Objects(count, 4096));
  ASSERT_TRUE(write.ok());
  servers_[0]->Pause();
  servers_[1]->Pause();
  ASSERT_TRUE(engine->Post(**write).ok());
  write->reset();  // the handle is gone; nothing waits for the paused servers
  servers_[0]->Resume();
  servers_[1]->Resume();
  // At most the batch in flight when it was released was sent.
  ASSERT_TRUE(PollUntil([&] { return engine->Stats().transfers_failed == 1; }, 20000));
  EXPECT_LE(engine->Stats().batches, 2u);
  auto client = ClientFor({servers_[0].get(), servers_[1].get()});
  size_t stored = 0;
  for (size_t i = 0; i < count; ++i) {
    auto exists = client->Exists(std::to_string(i));
    stored += exists.ok() && *exists ? 1 : 0;
  }
  EXPECT_LE(stored, 2u);
}

}  // namespace
}  // namespace memkv::nixl
