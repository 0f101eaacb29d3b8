#include "page.h"

#include <cstdio>

namespace libdump::heapview {
namespace {

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:1em 2em;color:#222}"
    "nav a{margin-right:1em}table{border-collapse:collapse;margin:.5em 0}"
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}td.n{text-align:right}"
    "th{background:#eee}.new{color:#b00;font-weight:bold}pre{background:#f6f6f6;padding:4px}"
    ".muted{color:#777}";

}  // namespace

std::string Html::Finish(Nav nav) const {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">" +
      (refresh_ ? "<meta http-equiv=\"refresh\" content=\"" + std::to_string(refresh_) + "\">" : std::string()) +
      "<title>" + Escape(title_) + " - heapview</title><style>" + kStyle +
      "</style></head><body><nav><a href=\"/\">Summary</a><a href=\"/histogram\">Histogram</a>"
      "<a href=\"/classes\">Classes</a><a href=\"/roots\">Roots</a><a href=\"/dominators\">Dominators</a><a href=\"/flame\">Flame graph</a>"
      "<a href=\"/suspects\">Leak suspects</a><a href=\"/leaks\">Leaks</a><a href=\"/threads\">Threads</a>"
      "<a href=\"/finalizers\">Finalizers</a><a href=\"/query\">Query</a>";
  if (nav.baseline) out += "<a href=\"/diff\">Diff with baseline</a>";
  if (nav.series) out += "<a href=\"/series\">Series</a>";
  out += "</nav>\n<h1>" + Escape(title_) + "</h1>\n" + body_ + "\n</body></html>\n";
  return out;
}

std::string Pct(uint64_t part, uint64_t whole) {
  char b[16];
  snprintf(b, sizeof b, "%.1f%%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return b;
}

std::string Num(uint64_t v) { return "<td class=\"n\">" + Thousands(v) + "</td>"; }

std::string SignedNum(int64_t v) {
  return std::string("<td class=\"n\">") + (v > 0 ? "+" : v < 0 ? "-" : "") +
         Thousands(static_cast<uint64_t>(v < 0 ? -v : v)) + "</td>";
}

std::string ClassLink(const std::string& name) {
  return "<a href=\"/class?name=" + UrlEncode(name) + "\">" + Escape(name) + "</a>";
}

// Glob match: '*' any run, '?' one character.
bool Glob(std::string_view pat, std::string_view s) {
  size_t p = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (p < pat.size() && (pat[p] == '?' || pat[p] == s[i])) {
      ++p;
      ++i;
    } else if (p < pat.size() && pat[p] == '*') {
      star = p++;
      mark = i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

}  // namespace libdump::heapview
