#include "memkv/status.h"

namespace memkv {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "Ok";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kDeadlineExceeded: return "DeadlineExceeded";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kAuthFailed: return "AuthFailed";
    case StatusCode::kUnsupportedVersion: return "UnsupportedVersion";
    case StatusCode::kTooLarge: return "TooLarge";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kProtocolError: return "ProtocolError";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kPermissionDenied: return "PermissionDenied";
    case StatusCode::kBusy: return "Busy";
    case StatusCode::kDraining: return "Draining";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  std::string out(StatusCodeName(code_));
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

}  // namespace memkv
