#include "http/http_router.h"

#include <exception>

#include "base/log.h"

namespace memkv::http {
namespace {

bool IsMethodToken(const std::string& method) {
  if (method.empty() || method.size() > 32) return false;
  for (char c : method) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

bool IsRoutePath(const std::string& path) {
  if (path.empty() || path.front() != '/') return false;
  for (char ch : path) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || c == '?') return false;
  }
  return true;
}

std::string AllowList(const std::map<std::string, HttpHandler>& methods) {
  std::string allow;
  for (const auto& [method, handler] : methods) {
    if (!allow.empty()) allow += ", ";
    allow += method;
    if (method == "GET" && methods.count("HEAD") == 0) allow += ", HEAD";
  }
  return allow;
}

HttpRouter::Outcome Failed(const HttpRequest& request, bool head_only, const std::string& why) {
  LOG_ERROR << "http handler for " << request.method << " " << request.path << " failed: " << why;
  HttpRouter::Outcome out;
  out.response = HttpResponse::Text(500, "500 Internal Server Error\n");
  out.head_only = head_only;
  out.handler_failed = true;
  return out;
}

}  // namespace

Status HttpRouter::Add(const std::string& method, const std::string& path, HttpHandler handler) {
  if (!IsMethodToken(method)) return InvalidArgument("http route method '" + method + "' is not an HTTP method token");
  if (!IsRoutePath(path)) {
    return InvalidArgument("http route path '" + path + "' must start with '/' and hold no spaces, controls or '?'");
  }
  if (!handler) return InvalidArgument("http route " + method + " " + path + " has an empty handler");
  auto& methods = routes_[path];
  if (!methods.emplace(method, std::move(handler)).second) {
    return InvalidArgument("http route " + method + " " + path + " registered twice");
  }
  return Status::Ok();
}

HttpRouter::Outcome HttpRouter::Dispatch(const HttpRequest& request) const {
  Outcome out;
  auto route = routes_.find(request.path);
  if (route == routes_.end()) {
    out.response = HttpResponse::Text(404, "404 Not Found: no handler for " + request.path + "\n");
    return out;
  }
  const auto& methods = route->second;
  auto handler = methods.find(request.method);
  if (handler == methods.end() && request.method == "HEAD") {
    handler = methods.find("GET");
    out.head_only = handler != methods.end();
  }
  if (handler == methods.end()) {
    std::string allow = AllowList(methods);
    out.response = HttpResponse::Text(405, "405 Method Not Allowed: " + request.path + " allows " + allow + "\n");
    out.response.headers.push_back({"Allow", allow});
    return out;
  }
  try {
    out.response = handler->second(request);
  } catch (const std::exception& e) {
    return Failed(request, out.head_only, std::string("threw: ") + e.what());
  } catch (...) {
    return Failed(request, out.head_only, "threw a non-std::exception");
  }
  Status valid = ValidateResponse(out.response);
  if (!valid.ok()) return Failed(request, out.head_only, "invalid response: " + valid.message());
  return out;
}

}  // namespace memkv::http
