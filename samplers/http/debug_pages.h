// The pages of /debug/pprof/ (debug_server.h): what each URL answers, as a
// Beast response. The transport (debug_server.cc) reads the requests and
// writes these answers; the heap dump, streamed from a file, is its own.
#pragma once

// Boost 1.74's asio uses std::exchange without including <utility>.
#include <utility>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <string>
#include <string_view>

namespace libdump::samplers::debug_http {

namespace beast = boost::beast;
namespace http = beast::http;
using Response = http::response<http::string_body>;

Response Reply(http::status status, std::string body, const char* type = "text/plain; charset=utf-8");
// The query as a map; false with *error set on a malformed one.
bool ParseQuery(std::string_view q, std::map<std::string, std::string>* out, std::string* error);
// An integer parameter in [lo, hi], or def when absent; false with *error.
bool IntParam(const std::map<std::string, std::string>& q, const char* name, long lo, long hi, long def, long* v,
              std::string* error);
// The answer to one request (not the heap dump's).
Response Handle(const http::request<http::string_body>& req);
// Defined by the transport: waits seconds, or less when the server stops
// (a credential change, helper_threads.h): false then.
bool Nap(long seconds);

}  // namespace libdump::samplers::debug_http
