// Signed admin requests: the check in front of every state-changing route of
// the admin endpoint (POST /v1/admin/reload, ...), and the signing side that
// `memkv admin` uses. The format, byte for byte, is in docs/admin.md
// ("Authentication"):
//
//   Authorization: MemKV-HMAC-SHA256 ts=<unix ms>, nonce=<32 hex>, sig=<64 hex>
//   sig     = hex(HMAC-SHA256(K_admin, "memkv admin v1\n" METHOD "\n" PATH "\n"
//                                      ts "\n" nonce "\n" hex(SHA-256(body))))
//   K_admin = HMAC-SHA256(admin key, "memkv admin endpoint")
//
// The admin key is the server's network.auth_key (or its data-directory key
// file); only the derived K_admin signs, so a signature never exposes a tag
// made with the data-plane key itself.
//
// AdminAuthenticator refuses: no header or a malformed one (401), no admin
// key set (401), a timestamp more than the window (300 s) away from the
// server's clock (401), a wrong signature (401, constant-time compare), a
// nonce already accepted within the window (401 "replayed"). Accepted nonces
// are remembered until their timestamp leaves the window, at most max_nonces
// of them; while that set is full new signed requests are refused (429)
// rather than recent nonces forgotten. A signature is checked before its
// nonce is remembered, so only a key holder can fill the set.
//
// Thread-safety: every AdminAuthenticator method may be called from any
// thread (one mutex; SetKey swaps the key for a key rotation).
#ifndef MEMKV_SERVER_ADMIN_AUTH_H_
#define MEMKV_SERVER_ADMIN_AUTH_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>

#include "base/hmac.h"
#include "base/mutex.h"
#include "memkv/status.h"

namespace memkv::server {

inline constexpr std::string_view kAdminAuthScheme = "MemKV-HMAC-SHA256";
inline constexpr std::string_view kAdminAuthForm = "MemKV-HMAC-SHA256 ts=<unix ms>, nonce=<32 hex>, sig=<64 hex>";
inline constexpr int64_t kAdminAuthWindowMs = 300'000;  // +-300 s
inline constexpr size_t kAdminMaxNonces = 4096;
// Signed requests carry at most this much body; a longer one is answered 413 unread.
inline constexpr size_t kAdminMaxBodyBytes = 4096;

enum class AdminAuthFailure : uint8_t {
  kMissing,        // no Authorization header
  kMalformed,      // not the form above
  kNoKey,          // the server has no admin key
  kSkew,           // ts outside the window
  kSignature,      // wrong signature (wrong key, tampered request)
  kReplayed,       // nonce seen within the window
  kNoncesFull,     // too many signed requests within the window
};
inline constexpr size_t kAdminAuthFailureKinds = 7;
// "missing", "malformed", "no_key", "skew", "signature", "replayed", "nonces_full".
std::string_view AdminAuthFailureName(AdminAuthFailure failure);

// K_admin from the administrator key.
Key32 DeriveAdminKey(std::span<const uint8_t> admin_key);

// The bytes the signature covers.
std::string AdminStringToSign(std::string_view method, std::string_view path, std::string_view ts,
                              std::string_view nonce, std::string_view body);

// The Authorization header's value for a request. `nonce` is 32 lowercase hex
// characters (NewAdminNonce).
std::string SignAdminRequest(std::span<const uint8_t> admin_key, std::string_view method, std::string_view path,
                             std::string_view body, int64_t ts_ms, std::string_view nonce);
Result<std::string> NewAdminNonce();  // 16 random bytes, hex
int64_t UnixMillis();                 // the wall clock, for ts

class AdminAuthenticator {
 public:
  struct Verdict {
    std::optional<AdminAuthFailure> failure;  // nullopt: accepted
    int http_status = 200;                    // 401 or 429 when refused
    std::string message;                      // what was wrong, and the expected form
    bool ok() const { return !failure.has_value(); }
  };

  explicit AdminAuthenticator(int64_t window_ms = kAdminAuthWindowMs, size_t max_nonces = kAdminMaxNonces)
      : window_ms_(window_ms), max_nonces_(max_nonces) {}

  // Sets (empty: clears) the administrator key; later requests are checked
  // against it. Nonces already seen stay seen.
  void SetKey(std::span<const uint8_t> admin_key);
  bool has_key() const;

  // Checks one request: its method, path (with "?query" when it has one),
  // Authorization header (nullopt when absent) and body, at `now_ms` (unix
  // ms, the server's clock).
  Verdict Check(std::string_view method, std::string_view path, std::optional<std::string_view> authorization,
                std::string_view body, int64_t now_ms);

  size_t nonces_held() const;

 private:
  const int64_t window_ms_;
  const size_t max_nonces_;
  mutable Mutex mu_;
  std::optional<Key32> key_ MEMKV_GUARDED_BY(mu_);  // K_admin
  std::unordered_set<std::string> nonces_ MEMKV_GUARDED_BY(mu_);
  std::multimap<int64_t, std::string> expiry_ MEMKV_GUARDED_BY(mu_);  // forget-at (unix ms) -> nonce
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_ADMIN_AUTH_H_
