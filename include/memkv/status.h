// memkv/status.h: the one error convention of MemKV.
//
// A Status is a code from a small closed set plus a human message. The numeric
// values are stable: the wire protocol, the C API and the Python bindings all
// carry them unchanged, so never renumber an existing code; append new ones.
//
// Thread-safety: Status and Result are values; copy them freely.
#ifndef MEMKV_STATUS_H_
#define MEMKV_STATUS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace memkv {

enum class StatusCode : uint16_t {
  kOk = 0,
  kNotFound = 1,            // key absent (a miss)
  kInvalidArgument = 2,     // caller passed something outside the documented rules
  kDeadlineExceeded = 3,    // the operation's deadline passed
  kUnavailable = 4,         // server unreachable, connection lost, shutting down
  kAuthFailed = 5,          // bad key, tampered or replayed frame
  kUnsupportedVersion = 6,  // peer speaks a newer wire version
  kTooLarge = 7,            // key, value, frame or batch over a documented limit
  kResourceExhausted = 8,   // store full and nothing evictable right now
  kCorruption = 9,          // checksum mismatch (never returned as data)
  kProtocolError = 10,      // malformed frame
  kInternal = 11,           // a bug or an unexpected OS failure
  kIoError = 12,            // a file or device operation failed
  kFailedPrecondition = 13, // system not in a state that allows the operation
  kPermissionDenied = 14,   // the credential does not allow the operation (a read-only tenant's write)
  kBusy = 15,               // the server is overloaded and shed the request: not a failure; skip the store, retry later
  kDraining = 16,           // the server is draining and takes no new keys: place the key on the next server
};

// Short stable name of a code ("NotFound"); used in logs, the CLI and metrics.
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // Ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "NotFound: key 'abc' not present" (or "Ok").
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>".
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status AuthFailed(std::string m) { return {StatusCode::kAuthFailed, std::move(m)}; }
inline Status UnsupportedVersion(std::string m) { return {StatusCode::kUnsupportedVersion, std::move(m)}; }
inline Status TooLarge(std::string m) { return {StatusCode::kTooLarge, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
inline Status ProtocolError(std::string m) { return {StatusCode::kProtocolError, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status Busy(std::string m) { return {StatusCode::kBusy, std::move(m)}; }
inline Status Draining(std::string m) { return {StatusCode::kDraining, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status PermissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }

// Result<T>: a T or a non-Ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace memkv

// Propagate a non-Ok Status from an expression returning Status.
#define MEMKV_RETURN_IF_ERROR(expr)               \
  do {                                            \
    ::memkv::Status memkv_status_tmp_ = (expr);   \
    if (!memkv_status_tmp_.ok()) return memkv_status_tmp_; \
  } while (0)

#define MEMKV_CONCAT_INNER_(a, b) a##b
#define MEMKV_CONCAT_(a, b) MEMKV_CONCAT_INNER_(a, b)
// MEMKV_ASSIGN_OR_RETURN(auto x, Foo()); declares x from a Result or returns its Status.
#define MEMKV_ASSIGN_OR_RETURN(lhs, expr)                                     \
  auto MEMKV_CONCAT_(memkv_result_, __LINE__) = (expr);                       \
  if (!MEMKV_CONCAT_(memkv_result_, __LINE__).ok())                           \
    return MEMKV_CONCAT_(memkv_result_, __LINE__).status();                   \
  lhs = std::move(MEMKV_CONCAT_(memkv_result_, __LINE__)).value()

#endif  // MEMKV_STATUS_H_
