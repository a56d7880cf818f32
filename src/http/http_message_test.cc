#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "http/http_message.h"
#include "http/http_router.h"

namespace memkv::http {
namespace {

Result<HttpRequest> Parse(const std::string& head) {
  size_t end = FindHeadEnd(head);
  EXPECT_EQ(end, head.size()) << "test input must be exactly one complete head";
  return ParseRequestHead(std::string_view(head).substr(0, end));
}

TEST(FindHeadEndTest, FindsCrlfAndBareLfTerminators) {
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\nHost: a\r\n\r\nrest"), 27u);
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\n\n"), 16u);
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\nHost: a\r\n"), 0u);
  EXPECT_EQ(FindHeadEnd(""), 0u);
}

TEST(FindHeadEndTest, FindsTerminatorSplitAcrossReads) {
  std::string data = "GET / HTTP/1.1\r\nHost: a\r\n";
  size_t from = data.size();
  data += "\r\n";
  EXPECT_EQ(FindHeadEnd(data, from), data.size());
  // Fed a byte at a time, the end is found exactly when the last byte comes.
  std::string head = "GET /x HTTP/1.1\r\nA: b\r\n\r\n";
  std::string fed;
  for (size_t i = 0; i < head.size(); ++i) {
    fed += head[i];
    EXPECT_EQ(FindHeadEnd(fed, i), i + 1 == head.size() ? head.size() : 0u) << i;
  }
}

TEST(ParseRequestHeadTest, ParsesMethodPathQueryVersionAndHeaders) {
  Result<HttpRequest> r =
      Parse("GET /v1/status?verbose=1&x=2 HTTP/1.0\r\nHost: a\r\nX-Thing:  spaced value \t\r\n\r\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->method, "GET");
  EXPECT_EQ(r->path, "/v1/status");
  EXPECT_EQ(r->query, "verbose=1&x=2");
  EXPECT_EQ(r->version_minor, 0);
  ASSERT_EQ(r->headers.size(), 2u);
  EXPECT_EQ(r->headers[1].name, "x-thing");
  EXPECT_EQ(r->headers[1].value, "spaced value");
  EXPECT_EQ(r->Header("X-THING").value_or(""), "spaced value");
  EXPECT_FALSE(r->Header("missing").has_value());
}

TEST(ParseRequestHeadTest, AcceptsBareLfAndAbsoluteFormAndNoHost) {
  Result<HttpRequest> lf = Parse("GET /v1/health HTTP/1.1\n\n");
  ASSERT_TRUE(lf.ok()) << lf.status().ToString();
  EXPECT_EQ(lf->path, "/v1/health");
  Result<HttpRequest> absolute = Parse("GET http://example.com:8080/v1/ready?a HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(absolute.ok()) << absolute.status().ToString();
  EXPECT_EQ(absolute->path, "/v1/ready");
  EXPECT_EQ(absolute->query, "a");
  Result<HttpRequest> bare_host = Parse("GET HTTPS://example.com HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(bare_host.ok());
  EXPECT_EQ(bare_host->path, "/");
}

TEST(ParseRequestHeadTest, RejectsMalformedRequestLines) {
  for (const char* head : {
           "GET /v1/health\r\n\r\n",                  // no version
           "GET  /v1/health HTTP/1.1\r\n\r\n",         // double space
           "GET /v1/health HTTP/1.1 \r\n\r\n",         // trailing space
           "GET /a b HTTP/1.1\r\n\r\n",                // space in target
           "GET /v1/health HTTP/2.0\r\n\r\n",          // not HTTP/1.x
           "GET /v1/health HTTP/1.10\r\n\r\n",
           "GET /v1/health http/1.1\r\n\r\n",
           "GET /v1/health FOO/1.1\r\n\r\n",
           "GET v1/health HTTP/1.1\r\n\r\n",           // not origin form
           "G(T /v1/health HTTP/1.1\r\n\r\n",          // not a token
           "\r\nGET /v1/health HTTP/1.1\r\n\r\n",      // empty request line
           "GET /v1/\x01health HTTP/1.1\r\n\r\n",      // control in target
       }) {
    Result<HttpRequest> r = Parse(head);
    ASSERT_FALSE(r.ok()) << head;
    EXPECT_EQ(r.status().code(), StatusCode::kProtocolError) << head;
    EXPECT_EQ(HttpStatusForParseError(r.status()), 400) << head;
  }
}

TEST(ParseRequestHeadTest, RejectsMalformedHeaders) {
  for (const char* head : {
           "GET / HTTP/1.1\r\nNoColon\r\n\r\n",
           "GET / HTTP/1.1\r\nName : v\r\n\r\n",          // space before colon
           "GET / HTTP/1.1\r\n: v\r\n\r\n",               // empty name
           "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",   // obs-fold
           "GET / HTTP/1.1\r\nA: b\x01c\r\n\r\n",         // control in value
           "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
           "GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
           "GET / HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 00\r\n\r\n",
       }) {
    Result<HttpRequest> r = Parse(head);
    ASSERT_FALSE(r.ok()) << head;
    EXPECT_EQ(HttpStatusForParseError(r.status()), 400) << head;
  }
}

TEST(ParseRequestHeadTest, RefusesBodiesWith413) {
  for (const char* head : {
           "GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
           "GET / HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n",
           "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
           "POST / HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
       }) {
    Result<HttpRequest> r = Parse(head);
    ASSERT_FALSE(r.ok()) << head;
    EXPECT_EQ(r.status().code(), StatusCode::kTooLarge) << head;
    EXPECT_EQ(HttpStatusForParseError(r.status()), 413) << head;
  }
  EXPECT_TRUE(Parse("GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n").ok());
  EXPECT_TRUE(Parse("GET / HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n").ok());
}

TEST(ParseRequestHeadTest, AcceptsABodyUpToTheLimitAnnouncedByContentLength) {
  Result<HttpRequest> r = ParseRequestHead("POST /x HTTP/1.1\r\nContent-Length: 100\r\n\r\n", 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->content_length, 100u);
  r = ParseRequestHead("POST /x HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(HttpStatusForParseError(r.status()), 413);
  EXPECT_NE(r.status().message().find("101 bytes is over the limit of 100 bytes"), std::string::npos)
      << r.status().message();
  r = ParseRequestHead("POST /x HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(HttpStatusForParseError(r.status()), 400);  // too many digits to be a length at all
  r = ParseRequestHead("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(HttpStatusForParseError(r.status()), 413);
  EXPECT_NE(r.status().message().find("send the body with Content-Length"), std::string::npos);
  r = ParseRequestHead("POST /x HTTP/1.1\r\n\r\n", 100);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->content_length, 0u);
}

// Stands in for a fuzzer until fuzz/ grows an HTTP target: random bytes and
// mutations of a valid head must parse or fail, never crash (ASan/UBSan runs).
TEST(ParseRequestHeadTest, SurvivesRandomAndMutatedInput) {
  std::mt19937 rng(20240601);
  const std::string valid = "GET /v1/status?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n";
  for (int i = 0; i < 20000; ++i) {
    std::string input = valid;
    if (i % 2 == 0) {
      input.resize(rng() % 96);
      for (char& c : input) c = static_cast<char>(rng());
    } else {
      for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips) {
        input[rng() % input.size()] = static_cast<char>(rng());
      }
    }
    size_t end = FindHeadEnd(input, rng() % (input.size() + 1));
    ASSERT_LE(end, input.size());
    Result<HttpRequest> r = ParseRequestHead(std::string_view(input).substr(0, end == 0 ? input.size() : end));
    if (!r.ok()) {
      int status = HttpStatusForParseError(r.status());
      EXPECT_TRUE(status == 400 || status == 413);
    }
  }
}

TEST(SerializeResponseTest, WritesStatusLineLengthTypeAndClose) {
  HttpResponse r = HttpResponse::Text(200, "hello");
  r.headers.push_back({"Cache-Control", "no-store"});
  std::string wire = SerializeResponse(r, false, "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(wire,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 5\r\n"
            "Connection: close\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\nServer: memkv\r\n"
            "Cache-Control: no-store\r\n\r\nhello");
}

TEST(SerializeResponseTest, HeadKeepsLengthAndDropsBody) {
  std::string wire = SerializeResponse(HttpResponse::Text(200, "hello"), true, "D");
  EXPECT_NE(wire.find("Content-Length: 5\r\n"), std::string::npos);
  EXPECT_EQ(wire.substr(wire.size() - 4), "\r\n\r\n");
}

TEST(SerializeResponseTest, NoContentCarriesNoLengthOrBody) {
  std::string wire = SerializeResponse(HttpResponse::Text(204, "ignored"), false, "D");
  EXPECT_EQ(wire.find("Content-Length"), std::string::npos);
  EXPECT_EQ(wire.find("ignored"), std::string::npos);
}

TEST(HttpDateTest, FormatsImfFixdate) {
  EXPECT_EQ(HttpDate(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(HttpDate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
}

TEST(ValidateResponseTest, RejectsInjectionAndReservedHeaders) {
  HttpResponse ok = HttpResponse::Text(200, "x");
  EXPECT_TRUE(ValidateResponse(ok).ok());
  HttpResponse bad_status = HttpResponse::Text(101, "");
  EXPECT_FALSE(ValidateResponse(bad_status).ok());
  HttpResponse injected = ok;
  injected.headers.push_back({"X-A", "v\r\nSet-Cookie: evil"});
  EXPECT_FALSE(ValidateResponse(injected).ok());
  HttpResponse reserved = ok;
  reserved.headers.push_back({"content-length", "1"});
  EXPECT_FALSE(ValidateResponse(reserved).ok());
  HttpResponse bad_type = ok;
  bad_type.content_type = "text/plain\r\nX: y";
  EXPECT_FALSE(ValidateResponse(bad_type).ok());
}

HttpRequest Req(std::string method, std::string path) {
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  return r;
}

TEST(HttpRouterTest, RoutesByPathThenMethod) {
  HttpRouter router;
  ASSERT_TRUE(router.Add("GET", "/v1/health", [](const HttpRequest&) { return HttpResponse::Text(200, "ok"); }).ok());
  ASSERT_TRUE(router.Add("PUT", "/v1/health", [](const HttpRequest&) { return HttpResponse::Text(201, ""); }).ok());
  EXPECT_EQ(router.Dispatch(Req("GET", "/v1/health")).response.body, "ok");
  EXPECT_EQ(router.Dispatch(Req("GET", "/v1/other")).response.status, 404);
  HttpRouter::Outcome head = router.Dispatch(Req("HEAD", "/v1/health"));
  EXPECT_EQ(head.response.status, 200);
  EXPECT_TRUE(head.head_only);
  HttpRouter::Outcome wrong = router.Dispatch(Req("DELETE", "/v1/health"));
  EXPECT_EQ(wrong.response.status, 405);
  ASSERT_EQ(wrong.response.headers.size(), 1u);
  EXPECT_EQ(wrong.response.headers[0].name, "Allow");
  EXPECT_EQ(wrong.response.headers[0].value, "GET, HEAD, PUT");
}

TEST(HttpRouterTest, RejectsBadRoutes) {
  HttpRouter router;
  auto h = [](const HttpRequest&) { return HttpResponse::Text(200, ""); };
  EXPECT_EQ(router.Add("GET", "v1/x", h).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(router.Add("GET", "/v1/x?y", h).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(router.Add("G ET", "/v1/x", h).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(router.Add("GET", "/v1/x", nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(router.Add("GET", "/v1/x", h).ok());
  EXPECT_EQ(router.Add("GET", "/v1/x", h).code(), StatusCode::kInvalidArgument);
}

TEST(HttpRouterTest, ThrowingOrInvalidHandlerBecomes500) {
  HttpRouter router;
  ASSERT_TRUE(router.Add("GET", "/throw", [](const HttpRequest&) -> HttpResponse {
                      throw std::runtime_error("boom");
                    }).ok());
  ASSERT_TRUE(router.Add("GET", "/throw-int", [](const HttpRequest&) -> HttpResponse { throw 42; }).ok());
  ASSERT_TRUE(router.Add("GET", "/inject", [](const HttpRequest&) {
                      HttpResponse r = HttpResponse::Text(200, "");
                      r.headers.push_back({"X", "a\r\nb"});
                      return r;
                    }).ok());
  for (const char* path : {"/throw", "/throw-int", "/inject"}) {
    HttpRouter::Outcome out = router.Dispatch(Req("GET", path));
    EXPECT_EQ(out.response.status, 500) << path;
    EXPECT_TRUE(out.handler_failed) << path;
  }
}

}  // namespace
}  // namespace memkv::http
