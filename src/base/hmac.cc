#include "base/hmac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace memkv {

// HMAC (RFC 2104) over SHA-256 digest contexts: the states after the
// key's inner and outer pads are computed once, and each tag copies them
// into contexts allocated once. EVP_MAC would allocate a context per tag,
// about three times the cost of the tag itself on a ~100-byte header.
struct HmacSha256::Impl {
  EVP_MD* md = nullptr;
  EVP_MD_CTX* inner = nullptr;  // SHA-256 after (key ^ ipad), never used directly
  EVP_MD_CTX* outer = nullptr;  // SHA-256 after (key ^ opad), never used directly
  EVP_MD_CTX* work = nullptr;   // the tag in progress: a copy of `inner`
  EVP_MD_CTX* finish = nullptr;  // the outer hash of a tag: a copy of `outer`
  bool started = false;
  ~Impl() {
    EVP_MD_CTX_free(finish);
    EVP_MD_CTX_free(work);
    EVP_MD_CTX_free(outer);
    EVP_MD_CTX_free(inner);
    EVP_MD_free(md);
  }
};

HmacSha256::HmacSha256(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HmacSha256::~HmacSha256() = default;

Result<std::unique_ptr<HmacSha256>> HmacSha256::Create(std::span<const uint8_t> key) {
  constexpr size_t kBlock = 64;  // SHA-256's block size
  auto impl = std::make_unique<Impl>();
  impl->md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  if (impl->md == nullptr) return Internal("EVP_MD_fetch(SHA256) failed");
  for (EVP_MD_CTX** ctx : {&impl->inner, &impl->outer, &impl->work, &impl->finish}) {
    *ctx = EVP_MD_CTX_new();
    if (*ctx == nullptr) return Internal("EVP_MD_CTX_new failed");
  }
  // A key longer than a block is replaced by its digest (RFC 2104).
  std::array<uint8_t, kBlock> k{};
  if (key.size() > kBlock) {
    unsigned int len = 0;
    if (EVP_Digest(key.data(), key.size(), k.data(), &len, impl->md, nullptr) != 1) {
      return Internal("SHA-256 of the HMAC key failed");
    }
  } else if (!key.empty()) {
    std::memcpy(k.data(), key.data(), key.size());
  }
  std::array<uint8_t, kBlock> pad{};
  for (auto [ctx, x] : {std::pair{impl->inner, uint8_t{0x36}}, std::pair{impl->outer, uint8_t{0x5c}}}) {
    for (size_t i = 0; i < kBlock; ++i) pad[i] = k[i] ^ x;
    if (EVP_DigestInit_ex(ctx, impl->md, nullptr) != 1 || EVP_DigestUpdate(ctx, pad.data(), pad.size()) != 1) {
      return Internal("HMAC-SHA256 key setup failed");
    }
  }
  OPENSSL_cleanse(k.data(), k.size());
  OPENSSL_cleanse(pad.data(), pad.size());
  return std::unique_ptr<HmacSha256>(new HmacSha256(std::move(impl)));
}

void HmacSha256::Begin() { impl_->started = EVP_MD_CTX_copy_ex(impl_->work, impl_->inner) == 1; }

void HmacSha256::Update(const void* data, size_t size) {
  if (size > 0 && impl_->started) impl_->started = EVP_DigestUpdate(impl_->work, data, size) == 1;
}

Tag HmacSha256::Finish() {
  Tag tag{};
  std::array<uint8_t, 32> inner{};
  unsigned int len = 0;
  const bool ok = impl_->started && EVP_DigestFinal_ex(impl_->work, inner.data(), &len) == 1 &&
                  EVP_MD_CTX_copy_ex(impl_->finish, impl_->outer) == 1 &&
                  EVP_DigestUpdate(impl_->finish, inner.data(), inner.size()) == 1 &&
                  EVP_DigestFinal_ex(impl_->finish, tag.data(), &len) == 1;
  impl_->started = false;
  if (!ok) {
    // Cannot happen with valid contexts; an all-zero tag never verifies
    // against a real one, so the frame is rejected rather than accepted.
    tag.fill(0);
  }
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
