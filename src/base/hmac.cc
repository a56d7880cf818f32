#include "base/hmac.h"

// SHA-256's own state (SHA256_CTX), which OpenSSL 3 deprecates in favour
// of EVP; see HmacSha256::Impl for why it is used here.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace memkv {

// HMAC (RFC 2104) over SHA-256: the states after the key's inner and outer
// pads are computed once, and each tag starts from copies of them. The
// states are plain SHA256_CTX structs, copied by assignment: an EVP digest
// context allocates a provider context on every copy (EVP_MD_CTX_copy_ex),
// and with its dispatch and cleansing that cost about as many instructions
// per tag as the SHA-256 blocks of a small frame's header. The blocks run
// in the same code either way (SHA extensions, AVX2 or plain x86-64, as the
// CPU has them).
struct HmacSha256::Impl {
  SHA256_CTX inner{};  // after (key ^ ipad)
  SHA256_CTX outer{};  // after (key ^ opad)
  SHA256_CTX work{};   // the tag in progress: a copy of `inner`
  bool started = false;  // Begin ran and Finish has not
  ~Impl() {
    OPENSSL_cleanse(&inner, sizeof inner);
    OPENSSL_cleanse(&outer, sizeof outer);
    OPENSSL_cleanse(&work, sizeof work);
  }
};

HmacSha256::HmacSha256(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HmacSha256::~HmacSha256() = default;

Result<std::unique_ptr<HmacSha256>> HmacSha256::Create(std::span<const uint8_t> key) {
  constexpr size_t kBlock = 64;  // SHA-256's block size
  auto impl = std::make_unique<Impl>();
  // A key longer than a block is replaced by its digest (RFC 2104).
  std::array<uint8_t, kBlock> k{};
  if (key.size() > kBlock) {
    SHA256(key.data(), key.size(), k.data());
  } else if (!key.empty()) {
    std::memcpy(k.data(), key.data(), key.size());
  }
  std::array<uint8_t, kBlock> pad{};
  for (auto [ctx, x] : {std::pair{&impl->inner, uint8_t{0x36}}, std::pair{&impl->outer, uint8_t{0x5c}}}) {
    for (size_t i = 0; i < kBlock; ++i) pad[i] = k[i] ^ x;
    if (SHA256_Init(ctx) != 1 || SHA256_Update(ctx, pad.data(), pad.size()) != 1) {
      return Internal("HMAC-SHA256 key setup failed");
    }
  }
  OPENSSL_cleanse(k.data(), k.size());
  OPENSSL_cleanse(pad.data(), pad.size());
  return std::unique_ptr<HmacSha256>(new HmacSha256(std::move(impl)));
}

void HmacSha256::Begin() {
  impl_->work = impl_->inner;
  impl_->started = true;
}

void HmacSha256::Update(const void* data, size_t size) {
  if (size > 0 && impl_->started) SHA256_Update(&impl_->work, data, size);
}

Tag HmacSha256::Finish() {
  Tag tag{};
  // Without Begin: an all-zero tag, which never verifies against a real one.
  if (!impl_->started) return tag;
  impl_->started = false;
  std::array<uint8_t, SHA256_DIGEST_LENGTH> inner{};
  SHA256_Final(inner.data(), &impl_->work);
  SHA256_CTX finish = impl_->outer;
  SHA256_Update(&finish, inner.data(), inner.size());
  SHA256_Final(tag.data(), &finish);
  return tag;
}

Tag HmacSha256::Compute(const void* data, size_t size) {
  Begin();
  Update(data, size);
  return Finish();
}

bool TagsEqual(const Tag& a, const Tag& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

Status RandomBytes(void* data, size_t size) {
  auto* p = static_cast<uint8_t*>(data);
  while (size > 0) {
    ssize_t n = getrandom(p, size, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Internal(std::string("getrandom: ") + std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace memkv
