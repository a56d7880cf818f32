#include "base/hmac.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace memkv {

struct HmacSha256::Impl {
  EVP_MAC* mac = nullptr;
  EVP_MAC_CTX* keyed = nullptr;  // initialised with the key, never used directly
  EVP_MAC_CTX* work = nullptr;   // a copy of `keyed` per tag
  ~Impl() {
    EVP_MAC_CTX_free(work);
    EVP_MAC_CTX_free(keyed);
    EVP_MAC_free(mac);
  }
};

HmacSha256::HmacSha256(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HmacSha256::~HmacSha256() = default;

Result<std::unique_ptr<HmacSha256>> HmacSha256::Create(std::span<const uint8_t> key) {
  auto impl = std::make_unique<Impl>();
  impl->mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (impl->mac == nullptr) return Internal("EVP_MAC_fetch(HMAC) failed");
  impl->keyed = EVP_MAC_CTX_new(impl->mac);
  if (impl->keyed == nullptr) return Internal("EVP_MAC_CTX_new failed");
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  if (EVP_MAC_init(impl->keyed, key.data(), key.size(), params) != 1) {
    return Internal("EVP_MAC_init(HMAC-SHA256) failed");
  }
  return std::unique_ptr<HmacSha256>(new HmacSha256(std::move(impl)));
}

void HmacSha256::Begin() {
  EVP_MAC_CTX_free(impl_->work);
  impl_->work = EVP_MAC_CTX_dup(impl_->keyed);
}

void HmacSha256::Update(const void* data, size_t size) {
  if (size > 0) EVP_MAC_update(impl_->work, static_cast<const unsigned char*>(data), size);
}

Tag HmacSha256::Finish() {
  Tag tag{};
  size_t out_len = 0;
  if (impl_->work == nullptr || EVP_MAC_final(impl_->work, tag.data(), &out_len, tag.size()) != 1) {
    // Cannot happen with a valid context; an all-zero tag never verifies
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
