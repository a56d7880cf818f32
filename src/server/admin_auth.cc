#include "server/admin_auth.h"

#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/bytes.h"

namespace memkv::server {
namespace {

constexpr std::string_view kKeyLabel = "memkv admin endpoint";
constexpr std::string_view kSignPrefix = "memkv admin v1\n";
constexpr size_t kNonceHex = 32;
constexpr size_t kSigHex = 64;
constexpr size_t kMaxTsDigits = 16;

bool IsLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  return HexEncode(digest, len);
}

Tag Hmac(std::span<const uint8_t> key, std::string_view data) {
  Result<std::unique_ptr<HmacSha256>> mac = HmacSha256::Create(key);
  if (!mac.ok()) return Tag{};  // OpenSSL out of memory: a tag nothing matches
  return (*mac)->Compute(data.data(), data.size());
}

// The three fields of a well-formed header, or why it is not one.
struct Fields {
  std::string_view ts, nonce, sig;
};

Result<Fields> ParseHeader(std::string_view v) {
  const std::string scheme = std::string(kAdminAuthScheme) + " ";
  if (v.substr(0, scheme.size()) != scheme) {
    return InvalidArgument("the Authorization header does not start with '" + scheme + "'");
  }
  v.remove_prefix(scheme.size());
  Fields f;
  struct Part {
    std::string_view name;  // with '='
    std::string_view* out;
  } parts[] = {{"ts=", &f.ts}, {"nonce=", &f.nonce}, {"sig=", &f.sig}};
  for (size_t i = 0; i < 3; ++i) {
    if (v.substr(0, parts[i].name.size()) != parts[i].name) {
      return InvalidArgument("expected '" + std::string(parts[i].name) + "' " +
                             (i == 0 ? "after the scheme" : "after ', '"));
    }
    v.remove_prefix(parts[i].name.size());
    const size_t end = i < 2 ? v.find(", ") : v.size();
    if (end == std::string_view::npos) return InvalidArgument("fields must be separated by ', '");
    *parts[i].out = v.substr(0, end);
    v.remove_prefix(i < 2 ? end + 2 : end);
  }
  if (f.ts.empty() || f.ts.size() > kMaxTsDigits ||
      !std::all_of(f.ts.begin(), f.ts.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return InvalidArgument("ts must be the unix time in milliseconds, 1.." + std::to_string(kMaxTsDigits) +
                           " decimal digits");
  }
  if (f.nonce.size() != kNonceHex || !IsLowerHex(f.nonce)) {
    return InvalidArgument("nonce must be " + std::to_string(kNonceHex) + " lowercase hex characters");
  }
  if (f.sig.size() != kSigHex || !IsLowerHex(f.sig)) {
    return InvalidArgument("sig must be " + std::to_string(kSigHex) + " lowercase hex characters");
  }
  return f;
}

std::string Seconds(int64_t ms) {
  const int64_t whole = ms / 1000;
  const int64_t tenths = (ms % 1000) / 100;
  return std::to_string(whole) + "." + std::to_string(tenths) + " s";
}

}  // namespace

std::string_view AdminAuthFailureName(AdminAuthFailure failure) {
  switch (failure) {
    case AdminAuthFailure::kMissing: return "missing";
    case AdminAuthFailure::kMalformed: return "malformed";
    case AdminAuthFailure::kNoKey: return "no_key";
    case AdminAuthFailure::kSkew: return "skew";
    case AdminAuthFailure::kSignature: return "signature";
    case AdminAuthFailure::kReplayed: return "replayed";
    case AdminAuthFailure::kNoncesFull: return "nonces_full";
  }
  return "unknown";
}

Key32 DeriveAdminKey(std::span<const uint8_t> admin_key) { return Hmac(admin_key, kKeyLabel); }

std::string AdminStringToSign(std::string_view method, std::string_view path, std::string_view ts,
                              std::string_view nonce, std::string_view body) {
  std::string s(kSignPrefix);
  s.append(method).append("\n").append(path).append("\n").append(ts).append("\n").append(nonce).append("\n");
  s += Sha256Hex(body);
  return s;
}

std::string SignAdminRequest(std::span<const uint8_t> admin_key, std::string_view method, std::string_view path,
                             std::string_view body, int64_t ts_ms, std::string_view nonce) {
  const Key32 k = DeriveAdminKey(admin_key);
  const std::string ts = std::to_string(ts_ms);
  const Tag sig = Hmac(k, AdminStringToSign(method, path, ts, nonce, body));
  return std::string(kAdminAuthScheme) + " ts=" + ts + ", nonce=" + std::string(nonce) +
         ", sig=" + HexEncode(sig.data(), sig.size());
}

Result<std::string> NewAdminNonce() {
  uint8_t bytes[kNonceHex / 2];
  MEMKV_RETURN_IF_ERROR(RandomBytes(bytes, sizeof(bytes)));
  return HexEncode(bytes, sizeof(bytes));
}

int64_t UnixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void AdminAuthenticator::SetKey(std::span<const uint8_t> admin_key) {
  std::optional<Key32> k;
  if (!admin_key.empty()) k = DeriveAdminKey(admin_key);
  MutexLock lock(mu_);
  key_ = k;
}

bool AdminAuthenticator::has_key() const {
  MutexLock lock(mu_);
  return key_.has_value();
}

size_t AdminAuthenticator::nonces_held() const {
  MutexLock lock(mu_);
  return nonces_.size();
}

AdminAuthenticator::Verdict AdminAuthenticator::Check(std::string_view method, std::string_view path,
                                                      std::optional<std::string_view> authorization,
                                                      std::string_view body, int64_t now_ms) {
  auto refuse = [](AdminAuthFailure why, int status, std::string message) {
    Verdict v;
    v.failure = why;
    v.http_status = status;
    v.message = std::move(message);
    return v;
  };
  const std::string form = "; expected 'Authorization: " + std::string(kAdminAuthForm) + "' (docs/admin.md)";
  if (!authorization) {
    return refuse(AdminAuthFailure::kMissing, 401, "this request changes the server and must be signed" + form);
  }
  Result<Fields> fields = ParseHeader(*authorization);
  if (!fields.ok()) {
    return refuse(AdminAuthFailure::kMalformed, 401, "malformed Authorization header: " + fields.status().message() + form);
  }
  int64_t ts = 0;
  for (char c : fields->ts) ts = ts * 10 + (c - '0');
  const int64_t skew = ts - now_ms;
  if (skew > window_ms_ || skew < -window_ms_) {
    return refuse(AdminAuthFailure::kSkew, 401,
                  "the request's timestamp is " + Seconds(skew < 0 ? -skew : skew) +
                      (skew < 0 ? " behind" : " ahead of") + " the server's clock; at most " + Seconds(window_ms_) +
                      " either way is accepted (sign with the current time; check the clocks)");
  }
  std::optional<std::vector<uint8_t>> sig_bytes = HexDecode(fields->sig);
  Tag sig{};
  if (sig_bytes && sig_bytes->size() == sig.size()) std::memcpy(sig.data(), sig_bytes->data(), sig.size());
  const std::string to_sign = AdminStringToSign(method, path, fields->ts, fields->nonce, body);
  MutexLock lock(mu_);
  if (!key_) {
    return refuse(AdminAuthFailure::kNoKey, 401, "the server has no administrator key to check signatures with");
  }
  if (!TagsEqual(Hmac(*key_, to_sign), sig)) {
    return refuse(AdminAuthFailure::kSignature, 401,
                  "wrong signature: not signed with this server's administrator key (network.auth_key or the "
                  "data directory's auth.key), or the method, path or body differ from what was signed");
  }
  // Forget nonces whose timestamps left the window: they can no longer pass
  // the skew check, so their replays are refused anyway.
  while (!expiry_.empty() && expiry_.begin()->first < now_ms) {
    nonces_.erase(expiry_.begin()->second);
    expiry_.erase(expiry_.begin());
  }
  std::string nonce(fields->nonce);
  if (nonces_.count(nonce) != 0) {
    return refuse(AdminAuthFailure::kReplayed, 401,
                  "replayed: this nonce was already used within the last " + Seconds(window_ms_) +
                      "; sign every request with a fresh nonce");
  }
  if (nonces_.size() >= max_nonces_) {
    return refuse(AdminAuthFailure::kNoncesFull, 429,
                  "too many signed requests: " + std::to_string(max_nonces_) + " within " + Seconds(window_ms_) +
                      "; retry later");
  }
  expiry_.emplace(ts + window_ms_, nonce);
  nonces_.insert(std::move(nonce));
  return Verdict{};
}

}  // namespace memkv::server
