#include "table_sort.h"

#include <algorithm>
#include <cctype>

#include "page.h"

namespace libdump::heapview {

SortOrder ParseSortOrder(const Target& t, const std::vector<std::string>& columns,
                         const std::vector<std::string>& ascending_by_default) {
  SortOrder o;
  const std::string c = t.Get("sort");
  o.column = std::find(columns.begin(), columns.end(), c) != columns.end() ? c : columns.front();
  const std::string order = t.Get("order");
  if (order == "asc" || order == "desc") {
    o.desc = order == "desc";
  } else {
    o.desc = std::find(ascending_by_default.begin(), ascending_by_default.end(), o.column) == ascending_by_default.end();
  }
  return o;
}

std::string SortHeader(std::string_view path, std::string_view extra, const SortOrder& now, std::string_view column,
                       std::string_view label) {
  const bool current = now.column == column;
  // The current column's link turns the order around; another starts with
  // its default (no order parameter).
  std::string href = std::string(path) + "?sort=" + UrlEncode(column);
  if (current) href += now.desc ? "&order=asc" : "&order=desc";
  if (!extra.empty()) href += "&" + std::string(extra);
  std::string s = "<th><a href=\"" + Escape(href) + "\">" + Escape(label) + "</a>";
  if (current) s += now.desc ? " &#9660;" : " &#9650;";
  return s + "</th>";
}

std::string QueryTail(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string s;
  for (const auto& [k, v] : params) {
    if (v.empty()) continue;
    s += (s.empty() ? "" : "&") + k + "=" + UrlEncode(v);
  }
  return s;
}

std::string FilterForm(std::string_view path, std::string_view filter,
                       const std::vector<std::pair<std::string, std::string>>& keep) {
  std::string s = "<form method=\"get\" action=\"" + Escape(path) + "\" class=\"filter\">class <input name=\"filter\" value=\"" +
                  Escape(filter) + "\" placeholder=\"part of a name, or a*pattern\">";
  for (const auto& [k, v] : keep) {
    if (!v.empty()) s += "<input type=\"hidden\" name=\"" + Escape(k) + "\" value=\"" + Escape(v) + "\">";
  }
  return s + " <input type=\"submit\" value=\"Filter\"></form>";
}

bool ClassMatches(std::string_view filter, std::string_view name) {
  if (filter.empty()) return true;
  if (filter.find_first_of("*?") != std::string_view::npos) return Glob(filter, name);
  const auto lower = [](unsigned char c) { return std::tolower(c); };
  return std::search(name.begin(), name.end(), filter.begin(), filter.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != name.end();
}

}  // namespace libdump::heapview
