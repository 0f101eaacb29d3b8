// The frame every heapview page shares: the page builder with its style and
// navigation bar, and the table cells and links the pages have in common.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "html.h"
#include "json_writer.h"
#include "site.h"

namespace libdump::heapview {

constexpr size_t kPage = 100;  // rows per page of long lists
// A page number past every list a dump can hold: page * kPage (or * 1000
// for an object's elements) never wraps around to page 0.
constexpr uint64_t kMaxPage = uint64_t{1} << 40;

// The pages the navigation bar links to beyond the fixed ones.
struct Nav {
  Nav(bool has_baseline, bool has_series = false) : baseline(has_baseline), series(has_series) {}
  bool baseline;
  bool series;
};

// A page under construction: the body appended to, then framed by Finish.
class Html {
 public:
  explicit Html(std::string title) : title_(std::move(title)) {}
  Html& operator<<(const std::string& s) {
    body_ += s;
    return *this;
  }
  Html& operator<<(const char* s) {
    body_ += s;
    return *this;
  }
  Html& operator<<(uint64_t v) {
    body_ += Thousands(v);
    return *this;
  }
  // The browser reloads the page every `seconds` (no script: the pages'
  // Content-Security-Policy allows none).
  void Refresh(unsigned seconds) { refresh_ = seconds; }
  // The whole page: head, style, navigation bar, title and body.
  std::string Finish(Nav nav) const;

 private:
  std::string title_;
  unsigned refresh_ = 0;
  std::string body_;
};

// An application/json response whose body `write` fills through a JsonWriter
// (the trailing newline added here).
template <typename F>
Response JsonResponse(F&& write) {
  std::ostringstream out;
  readdump::JsonWriter j(out);
  write(j);
  j.Finish();
  Response r;
  r.content_type = "application/json";
  r.body = out.str();
  return r;
}

std::string Pct(uint64_t part, uint64_t whole);
std::string Num(uint64_t v);
std::string SignedNum(int64_t v);
std::string ClassLink(const std::string& name);
// Glob match: '*' any run, '?' one character.
bool Glob(std::string_view pat, std::string_view s);

}  // namespace libdump::heapview
