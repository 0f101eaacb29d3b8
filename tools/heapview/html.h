// HTML and URL text helpers for heapview's pages: every string that comes
// from a dump goes through Escape before it reaches a page.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace libdump::heapview {

// &, <, >, " and ' as entities; bytes that are not valid UTF-8 as U+FFFD.
std::string Escape(std::string_view s);
// Percent-encodes everything but unreserved characters (for query values).
std::string UrlEncode(std::string_view s);
std::string UrlDecode(std::string_view s);

// A request target split into its path and decoded query parameters.
struct Target {
  std::string path;
  std::map<std::string, std::string> query;
  std::string Get(const std::string& key, const std::string& fallback = "") const;
  uint64_t GetUint(const std::string& key, uint64_t fallback) const;
};
Target ParseTarget(std::string_view target);

// 1234567 -> "1,234,567".
std::string Thousands(uint64_t v);

}  // namespace libdump::heapview
