// Master key file, HKDF, key check value and AES-256-GCM segments
// (drive_crypto.h; docs/storage.md, "Encryption at rest").
#include "drive/drive_crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "base/bytes.h"
#include "base/secret_file.h"

namespace memkv::drive {
namespace {

constexpr std::string_view kInfo = "memkv drive value v1";
constexpr std::string_view kKeyCheckLabel = "memkv key check";

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

[[noreturn]] void CryptoAbort(const char* what) {
  // libcrypto refuses only on allocation failure or a broken build.
  std::fprintf(stderr, "memkv: libcrypto failed: %s\n", what);
  std::abort();
}

}  // namespace

Result<MasterKey> ParseMasterKey(std::string_view text, const std::string& what) {
  MasterKey key{};
  if (text.size() == key.size()) {
    std::copy(text.begin(), text.end(), key.begin());
    return key;
  }
  std::string_view t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  if (t.size() == 2 * key.size()) {
    bool hex = true;
    for (size_t i = 0; i < key.size() && hex; ++i) {
      const int hi = HexDigit(t[2 * i]);
      const int lo = HexDigit(t[2 * i + 1]);
      hex = hi >= 0 && lo >= 0;
      key[i] = uint8_t(hi << 4 | lo);
    }
    if (hex) return key;
  }
  return InvalidArgument(what + " holds " + std::to_string(text.size()) +
                         " bytes that are not a master key; allowed: exactly 32 raw bytes, or 64 hex characters "
                         "(e.g. from 'openssl rand -hex 32')");
}

Result<MasterKey> ReadMasterKeyFile(const std::string& path) {
  const std::string what = "storage.encryption_key_file " + path;
  // 64 hex characters with whitespace around them fit well within this.
  MEMKV_ASSIGN_OR_RETURN(std::string text, ReadSecretFile(path, what, 4096, "32 raw bytes or 64 hex characters"));
  return ParseMasterKey(text, what);
}

DataKey DeriveDataKey(const MasterKey& master, const Uuid& encryption_id, std::string_view tenant) {
  std::string info(kInfo);
  info.push_back('\0');
  info.append(tenant);
  DataKey out{};
  EVP_PKEY_CTX* pctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  size_t len = out.size();
  if (pctx == nullptr || EVP_PKEY_derive_init(pctx) <= 0 || EVP_PKEY_CTX_set_hkdf_md(pctx, EVP_sha256()) <= 0 ||
      EVP_PKEY_CTX_set1_hkdf_salt(pctx, encryption_id.bytes.data(), int(encryption_id.bytes.size())) <= 0 ||
      EVP_PKEY_CTX_set1_hkdf_key(pctx, master.data(), int(master.size())) <= 0 ||
      EVP_PKEY_CTX_add1_hkdf_info(pctx, reinterpret_cast<const unsigned char*>(info.data()), int(info.size())) <= 0 ||
      EVP_PKEY_derive(pctx, out.data(), &len) <= 0 || len != out.size()) {
    CryptoAbort("HKDF-SHA256");
  }
  EVP_PKEY_CTX_free(pctx);
  return out;
}

std::array<uint8_t, 16> KeyCheckValue(const MasterKey& master, const Uuid& encryption_id) {
  const DataKey admin = DeriveDataKey(master, encryption_id, "");
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (HMAC(EVP_sha256(), admin.data(), int(admin.size()), reinterpret_cast<const unsigned char*>(kKeyCheckLabel.data()),
           kKeyCheckLabel.size(), mac, &mac_len) == nullptr) {
    CryptoAbort("HMAC-SHA256");
  }
  std::array<uint8_t, 16> out{};
  std::copy(mac, mac + out.size(), out.begin());
  return out;
}

std::vector<SealSegment> SealSegments(std::span<const ExtentRef> extents, uint64_t value_bytes) {
  std::vector<SealSegment> out;
  uint64_t start = 0;
  for (const ExtentRef& e : extents) {
    const uint64_t end = std::min(start + uint64_t(e.units) * kDriveUnitBytes, value_bytes);
    for (uint64_t at = start; at < end;) {
      const uint64_t cut = std::min(end, (at / kSealSegmentBytes + 1) * kSealSegmentBytes);
      out.push_back({at, cut - at, e.drive});
      at = cut;
    }
    start = end;
    if (start >= value_bytes) break;
  }
  return out;
}

struct SegmentCipher::Ctx {
  EVP_CIPHER_CTX* ctx = nullptr;
  bool encrypt = true;
  // The key and direction the context was last set up for: a segment under
  // the same ones (the common case: one tenant, one drive) only sets its
  // nonce, skipping the cipher fetch and the key schedule.
  bool keyed = false;
  DataKey key{};
};

SegmentCipher::SegmentCipher() : ctx_(std::make_unique<Ctx>()) {
  ctx_->ctx = EVP_CIPHER_CTX_new();
  if (ctx_->ctx == nullptr) CryptoAbort("EVP_CIPHER_CTX_new");
}

SegmentCipher::~SegmentCipher() {
  EVP_CIPHER_CTX_free(ctx_->ctx);
  OPENSSL_cleanse(ctx_->key.data(), ctx_->key.size());
}

void SegmentCipher::Begin(bool encrypt, const DataKey& data_key, const std::array<uint8_t, 12>& nonce,
                          std::string_view key, uint64_t value_bytes, uint64_t offset) {
  EVP_CIPHER_CTX* c = ctx_->ctx;
  // The default IV length of GCM is 12 bytes.
  if (ctx_->keyed && ctx_->encrypt == encrypt && ctx_->key == data_key) {
    if (EVP_CipherInit_ex(c, nullptr, nullptr, nullptr, nonce.data(), encrypt ? 1 : 0) != 1) {
      CryptoAbort("AES-256-GCM nonce");
    }
  } else {
    if (EVP_CipherInit_ex(c, EVP_aes_256_gcm(), nullptr, data_key.data(), nonce.data(), encrypt ? 1 : 0) != 1) {
      CryptoAbort("AES-256-GCM init");
    }
    ctx_->keyed = true;
    ctx_->encrypt = encrypt;
    ctx_->key = data_key;
  }
  uint8_t tail[16];
  StoreLe64(tail, value_bytes);
  StoreLe64(tail + 8, offset);
  int len = 0;
  if (EVP_CipherUpdate(c, nullptr, &len, reinterpret_cast<const unsigned char*>(key.data()), int(key.size())) != 1 ||
      EVP_CipherUpdate(c, nullptr, &len, tail, sizeof(tail)) != 1) {
    CryptoAbort("AES-256-GCM aad");
  }
}

void SegmentCipher::Update(const uint8_t* in, uint8_t* out, size_t n) {
  constexpr size_t kStep = size_t{1} << 30;  // EVP takes int lengths
  while (n > 0) {
    const size_t step = std::min(n, kStep);
    int len = 0;
    if (EVP_CipherUpdate(ctx_->ctx, out, &len, in, int(step)) != 1 || size_t(len) != step) {
      CryptoAbort("AES-256-GCM update");
    }
    in += step;
    out += step;
    n -= step;
  }
}

std::array<uint8_t, 16> SegmentCipher::FinishSeal() {
  int len = 0;
  uint8_t scratch[16];
  std::array<uint8_t, 16> tag{};
  if (EVP_CipherFinal_ex(ctx_->ctx, scratch, &len) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx_->ctx, EVP_CTRL_GCM_GET_TAG, int(tag.size()), tag.data()) != 1) {
    CryptoAbort("AES-256-GCM final");
  }
  return tag;
}

bool SegmentCipher::FinishOpen(const std::array<uint8_t, 16>& tag) {
  std::array<uint8_t, 16> want = tag;
  if (EVP_CIPHER_CTX_ctrl(ctx_->ctx, EVP_CTRL_GCM_SET_TAG, int(want.size()), want.data()) != 1) {
    CryptoAbort("AES-256-GCM set tag");
  }
  int len = 0;
  uint8_t scratch[16];
  return EVP_CipherFinal_ex(ctx_->ctx, scratch, &len) == 1;
}

SegmentCipher& ThreadCipher() {
  thread_local SegmentCipher cipher;
  return cipher;
}

}  // namespace memkv::drive
