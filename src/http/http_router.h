// HttpRouter: the admin endpoint's routing table, exact path + method.
//
//   unknown path                 -> 404
//   known path, other method     -> 405 with "Allow: GET, HEAD"
//   HEAD where GET is registered -> the GET handler runs; the response goes
//                                   out with its headers and Content-Length
//                                   but without the body (RFC 9110 9.3.2)
//   handler throws               -> 500, logged; the server keeps serving
//   handler returns an invalid   -> 500, logged (see ValidateResponse)
//   response
//
// Built before the server starts and read-only afterwards, so the server
// thread reads it without locks. Not thread-safe while being built.
#ifndef MEMKV_HTTP_HTTP_ROUTER_H_
#define MEMKV_HTTP_HTTP_ROUTER_H_

#include <map>
#include <string>

#include "http/http_message.h"
#include "memkv/status.h"

namespace memkv::http {

class HttpRouter {
 public:
  struct Outcome {
    HttpResponse response;  // always passes ValidateResponse
    bool head_only = false;  // a HEAD request: write headers without the body
    bool handler_failed = false;  // the handler threw or answered something invalid
  };

  // `method` is an HTTP token ("GET"), `path` starts with '/'. InvalidArgument
  // for anything else, an empty handler, or a route registered twice.
  Status Add(const std::string& method, const std::string& path, HttpHandler handler);

  // Never throws.
  Outcome Dispatch(const HttpRequest& request) const;

 private:
  // path -> method -> handler; ordered maps keep Allow stable.
  std::map<std::string, std::map<std::string, HttpHandler>> routes_;
};

}  // namespace memkv::http

#endif  // MEMKV_HTTP_HTTP_ROUTER_H_
