// The C API's put options and prefix match against a real server:
// memkv_put_with, memkv_batch_put_with, memkv_match_prefix, and the rules
// of memkv_put_options_t (init, struct_size, ranges, NULL bytes).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "memkv/memkv.h"
#include "tests/harness.h"
#include "tests/shared_server.h"

namespace memkv::testing {
namespace {

struct ClientCloser {
  void operator()(memkv_client_t* c) const { memkv_client_close(c); }
};
using ClientPtr = std::unique_ptr<memkv_client_t, ClientCloser>;

class CApiPutOptionsTest : public SharedServerTest {
 protected:
  ClientPtr Open() {
    memkv_client_t* c = nullptr;
    EXPECT_EQ(memkv_client_open(server_->address().c_str(), kTestKeyHex, 3000, &c), MEMKV_OK) << memkv_last_error();
    return ClientPtr(c);
  }
};

bool LastErrorHas(const std::string& text) { return std::string(memkv_last_error()).find(text) != std::string::npos; }

TEST_F(CApiPutOptionsTest, PutWithAndMatchPrefix) {
  ClientPtr c = Open();
  memkv_put_options_t o;
  memkv_put_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof(o));
  o.ttl_ms = 60000;
  o.retention = MEMKV_RETENTION_EVICT_FIRST;
  o.parent_key = "capi/0";
  o.parent_key_len = 6;
  ASSERT_EQ(memkv_put_with(c.get(), "capi/1", 6, "v1", 2, &o), MEMKV_OK) << memkv_last_error();
  ASSERT_EQ(memkv_put_with(c.get(), "capi/0", 6, "v0", 2, nullptr), MEMKV_OK) << memkv_last_error();

  const void* keys[] = {"capi/0", "capi/1", "capi/2", "capi/3"};
  const size_t lens[] = {6, 6, 6, 6};
  const void* values[] = {"a", "b", "c", "d"};
  const size_t value_lens[] = {1, 1, 1, 1};
  size_t matched = 99;
  ASSERT_EQ(memkv_match_prefix(c.get(), keys, lens, 4, &matched), MEMKV_OK) << memkv_last_error();
  EXPECT_EQ(matched, 2u);

  memkv_put_options_t batch[2];
  memkv_put_options_init(&batch[0]);
  memkv_put_options_init(&batch[1]);
  batch[1].block_hash = "12345678";
  batch[1].block_hash_len = 8;
  batch[1].hash_kind = MEMKV_HASH_INT64;
  memkv_status_t statuses[2];
  size_t prefix = 0;
  ASSERT_EQ(memkv_batch_put_with(c.get(), keys + 2, lens + 2, values + 2, value_lens + 2, batch, 2, statuses, &prefix),
            MEMKV_OK);
  EXPECT_EQ(prefix, 2u);
  ASSERT_EQ(memkv_match_prefix(c.get(), keys, lens, 4, &matched), MEMKV_OK);
  EXPECT_EQ(matched, 4u);
  ASSERT_EQ(memkv_match_prefix(c.get(), nullptr, nullptr, 0, &matched), MEMKV_OK);
  EXPECT_EQ(matched, 0u);

  memkv_stats_t stats;
  stats.struct_size = sizeof(stats);
  ASSERT_EQ(memkv_client_stats(c.get(), &stats), MEMKV_OK);
  EXPECT_EQ(stats.put_options_dropped, 0u);
}

TEST_F(CApiPutOptionsTest, BadOptionsAreRefusedNamingTheField) {
  ClientPtr c = Open();
  memkv_put_options_t o;
  memkv_put_options_init(&o);
  o.retention = 3;
  EXPECT_EQ(memkv_put_with(c.get(), "capi/bad", 8, "v", 1, &o), MEMKV_INVALID_ARGUMENT);
  EXPECT_TRUE(LastErrorHas("memkv_put_with: options.retention 3 is not a retention class")) << memkv_last_error();
  memkv_put_options_init(&o);
  o.hash_kind = 5;
  EXPECT_EQ(memkv_put_with(c.get(), "capi/bad", 8, "v", 1, &o), MEMKV_INVALID_ARGUMENT);
  EXPECT_TRUE(LastErrorHas("options.hash_kind 5")) << memkv_last_error();
  memkv_put_options_init(&o);
  o.parent_key_len = 3;
  EXPECT_EQ(memkv_put_with(c.get(), "capi/bad", 8, "v", 1, &o), MEMKV_INVALID_ARGUMENT);
  EXPECT_TRUE(LastErrorHas("options.parent_key is NULL")) << memkv_last_error();
  memkv_put_options_init(&o);
  o.struct_size = 8;
  EXPECT_EQ(memkv_put_with(c.get(), "capi/bad", 8, "v", 1, &o), MEMKV_INVALID_ARGUMENT);
  EXPECT_TRUE(LastErrorHas("memkv_put_options_init")) << memkv_last_error();
  memkv_put_options_init(&o);
  const std::string hash(65, 'h');
  o.block_hash = hash.data();
  o.block_hash_len = hash.size();
  EXPECT_EQ(memkv_put_with(c.get(), "capi/bad", 8, "v", 1, &o), MEMKV_INVALID_ARGUMENT);
  EXPECT_TRUE(LastErrorHas("block_hash of 65 bytes")) << memkv_last_error();
  int present = 1;
  ASSERT_EQ(memkv_exists(c.get(), "capi/bad", 8, &present), MEMKV_OK);
  EXPECT_EQ(present, 0);
  size_t matched = 0;
  EXPECT_EQ(memkv_match_prefix(c.get(), nullptr, nullptr, 0, nullptr), MEMKV_INVALID_ARGUMENT);
  EXPECT_TRUE(LastErrorHas("matched is NULL")) << memkv_last_error();
  const void* keys[] = {""};
  const size_t lens[] = {0};
  EXPECT_EQ(memkv_match_prefix(c.get(), keys, lens, 1, &matched), MEMKV_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace memkv::testing
