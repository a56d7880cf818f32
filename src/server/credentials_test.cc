// Credentials: the key hint finds the signing key first, every key is still
// tried for a nonce without one, and a key is found by its bytes.
#include "server/credentials.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace memkv::server {
namespace {

std::vector<uint8_t> KeyOf(uint8_t byte) { return std::vector<uint8_t>(32, byte); }

TenantCredential Tenant(const std::string& name, std::vector<std::vector<uint8_t>> keys, bool read_only = false) {
  TenantCredential t;
  t.identity.name = name;
  t.identity.prefix = name + "/";
  t.identity.read_only = read_only;
  t.keys = std::move(keys);
  return t;
}

TEST(CredentialsTest, TheHintedKeyComesFirstAndEveryKeyFollows) {
  TenantStats stats;
  std::vector<TenantCredential> tenants;
  tenants.push_back(Tenant("a", {KeyOf(1), KeyOf(2)}));
  tenants.push_back(Tenant("b", {KeyOf(3)}, true));
  Result<std::shared_ptr<const Credentials>> c = Credentials::Create(KeyOf(9), std::move(tenants), &stats);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->tenant_count(), 2u);
  EXPECT_EQ((*c)->key_count(), 4u);

  std::array<uint8_t, proto::kNonceSize> nonce{};
  const proto::KeyHint hint = *proto::KeyHintOf(KeyOf(2));
  std::copy(hint.begin(), hint.end(), nonce.begin());
  std::vector<const CredentialKey*> candidates;
  (*c)->Candidates(nonce, &candidates);
  ASSERT_EQ(candidates.size(), 4u);
  EXPECT_EQ(candidates[0]->key, (*c)->Find(KeyOf(2))->key);
  ASSERT_NE(candidates[0]->tenant, nullptr);
  EXPECT_EQ(candidates[0]->tenant->name, "a");
  EXPECT_EQ(candidates[0]->tenant->counters, stats.Slot("a"));

  std::array<uint8_t, proto::kNonceSize> unhinted{};
  unhinted.fill(0x5c);
  (*c)->Candidates(unhinted, &candidates);
  EXPECT_EQ(candidates.size(), 4u) << "an older client's nonce: every key is tried";

  EXPECT_EQ((*c)->Find(KeyOf(9))->tenant, nullptr) << "the administrator key";
  EXPECT_TRUE((*c)->Find(KeyOf(3))->tenant->read_only);
  EXPECT_EQ((*c)->Find(KeyOf(7)), nullptr);
}

TEST(CredentialsTest, AKeyUsedTwiceIsRefusedNamingItsOwnersNotItsBytes) {
  std::vector<TenantCredential> tenants;
  tenants.push_back(Tenant("a", {KeyOf(1)}));
  tenants.push_back(Tenant("b", {KeyOf(9)}));
  Result<std::shared_ptr<const Credentials>> c = Credentials::Create(KeyOf(9), std::move(tenants), nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("tenant b"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("administrator"), std::string::npos) << c.status().message();
}

TEST(CredentialStoreTest, ReplaceChangesTheGeneration) {
  auto first = Credentials::Create(KeyOf(1), {}, nullptr);
  auto second = Credentials::Create(KeyOf(2), {}, nullptr);
  ASSERT_TRUE(first.ok() && second.ok());
  CredentialStore store(*first);
  const uint64_t g = store.generation();
  EXPECT_EQ(store.Replace(*second), g + 1);
  EXPECT_EQ(store.generation(), g + 1);
  EXPECT_NE(store.Current()->Find(KeyOf(2)), nullptr);
  EXPECT_EQ(store.Current()->Find(KeyOf(1)), nullptr);
}

}  // namespace
}  // namespace memkv::server
