// The markup checks of heapview's picture tests: an SVG fragment is
// well-formed (every element closed in order, attributes quoted, no raw '<'
// or '&' in text) and holds no script, whatever names the dump gave.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace libdump::heapview::testing {

// "" when `svg` is well-formed XML without <script> or on* attributes, else
// what is wrong and where.
inline std::string MarkupProblem(std::string_view svg) {
  std::vector<std::string> open;
  size_t k = 0;
  while (k < svg.size()) {
    const char c = svg[k];
    if (c == '&') {
      const size_t semi = svg.find(';', k);
      if (semi == std::string_view::npos || semi - k > 8) return "bare & at " + std::to_string(k);
      k = semi + 1;
      continue;
    }
    if (c == '>') return "bare > at " + std::to_string(k);
    if (c != '<') {
      ++k;
      continue;
    }
    const size_t end = svg.find('>', k);
    if (end == std::string_view::npos) return "unclosed tag at " + std::to_string(k);
    std::string_view tag = svg.substr(k + 1, end - k - 1);
    k = end + 1;
    if (tag.starts_with('/')) {
      if (open.empty() || open.back() != tag.substr(1)) return "</" + std::string(tag.substr(1)) + "> out of order";
      open.pop_back();
      continue;
    }
    const bool self = tag.ends_with('/');
    if (self) tag.remove_suffix(1);
    const std::string name(tag.substr(0, tag.find(' ')));
    if (name == "script" || name.empty()) return "element <" + name + ">";
    // Attributes: name="value" pairs, values without '<', '>' or a bare '"'.
    size_t a = name.size();
    while (a < tag.size()) {
      if (tag[a] == ' ') {
        ++a;
        continue;
      }
      const size_t eq = tag.find("=\"", a);
      if (eq == std::string_view::npos) return "attribute without a quoted value in <" + name + ">";
      if (tag.substr(a, 2) == "on") return "event attribute in <" + name + ">";
      const size_t close = tag.find('"', eq + 2);
      if (close == std::string_view::npos) return "unterminated attribute in <" + name + ">";
      const std::string_view value = tag.substr(eq + 2, close - eq - 2);
      if (value.find_first_of("<>") != std::string_view::npos) return "raw < or > in an attribute of <" + name + ">";
      a = close + 1;
    }
    if (!self) open.push_back(name);
  }
  return open.empty() ? "" : "<" + open.back() + "> not closed";
}

}  // namespace libdump::heapview::testing
