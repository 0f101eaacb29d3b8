// Tables sorted and filtered on the server: a column header is a link that
// sorts by it (again: the other way), a GET form filters rows by class name,
// so the pages stay plain HTML with no script.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "html.h"

namespace libdump::heapview {

struct SortOrder {
  std::string column;
  bool desc = true;
};

// ?sort=COLUMN&order=asc|desc. A column not among `columns` is the first
// one; without `order`, names ascend and figures descend (the largest first).
SortOrder ParseSortOrder(const Target& t, const std::vector<std::string>& columns,
                         const std::vector<std::string>& ascending_by_default = {"name", "class", "object"});

// <th><a href="PATH?sort=COLUMN&amp;order=...&amp;EXTRA">LABEL ▼</a></th>:
// the current column's link turns its order around and is marked with it.
// `extra` is the rest of the query ("" or "filter=x&platform=0"), unescaped.
std::string SortHeader(std::string_view path, std::string_view extra, const SortOrder& now, std::string_view column,
                       std::string_view label);

// "filter=VALUE" and the other kept parameters, as a query tail for links
// (not yet HTML-escaped). Empty values are left out.
std::string QueryTail(const std::vector<std::pair<std::string, std::string>>& params);

// A GET form to `path` with the class filter box and hidden copies of the
// parameters to keep (the sort, the platform switch).
std::string FilterForm(std::string_view path, std::string_view filter,
                       const std::vector<std::pair<std::string, std::string>>& keep);

// Whether a class name passes the filter: "" passes all; a pattern with '*'
// or '?' is a glob; else a case-insensitive substring.
bool ClassMatches(std::string_view filter, std::string_view name);

}  // namespace libdump::heapview
