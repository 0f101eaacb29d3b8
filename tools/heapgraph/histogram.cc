#include "histogram.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace libdump::heapgraph {

SortBy ParseSortBy(const std::string& s) {
  if (s == "count") return SortBy::kCount;
  if (s == "retained") return SortBy::kRetained;
  if (s == "name") return SortBy::kName;
  return SortBy::kBytes;
}

std::vector<uint32_t> Histogram(const HeapGraph& g, SortBy by, bool platform, bool all) {
  std::vector<uint32_t> out;
  for (uint32_t c = 0; c < g.classes.size(); ++c) {
    const ClassInfo& k = g.classes[c];
    if ((k.count > 0 || all) && (platform || !k.platform)) out.push_back(c);
  }
  auto key = [&](uint32_t c) {
    const ClassInfo& k = g.classes[c];
    return by == SortBy::kCount ? k.count : by == SortBy::kRetained ? k.retained : k.bytes;
  };
  std::sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) {
    if (by != SortBy::kName && key(a) != key(b)) return key(a) > key(b);
    return g.classes[a].name < g.classes[b].name;
  });
  return out;
}

std::vector<DiffRow> Diff(const HeapGraph& old_heap, const HeapGraph& new_heap) {
  std::map<std::string, DiffRow> rows;
  for (const ClassInfo& c : old_heap.classes) {
    DiffRow& r = rows[c.name];
    r.name = c.name;
    r.old_count += c.count;
    r.old_bytes += c.bytes;
    r.old_retained += c.retained;
  }
  for (const ClassInfo& c : new_heap.classes) {
    DiffRow& r = rows[c.name];
    r.name = c.name;
    r.new_count += c.count;
    r.new_bytes += c.bytes;
    r.new_retained += c.retained;
  }
  std::vector<DiffRow> out;
  for (auto& [name, r] : rows) {
    if (r.count_delta() != 0 || r.bytes_delta() != 0 || r.retained_delta() != 0) out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(), [](const DiffRow& a, const DiffRow& b) {
    return std::llabs(a.bytes_delta()) > std::llabs(b.bytes_delta());
  });
  return out;
}

bool IsNew(const HeapGraph& base, const HeapGraph& now, Index i) {
  const Index j = base.Find(now.ids[i]);
  return j == kNone || base.ClassName(j) != now.ClassName(i);
}

}  // namespace libdump::heapgraph
