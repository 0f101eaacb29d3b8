#include "typing_report.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "histogram.h"
#include "report.h"

namespace libdump::typing {
namespace {

std::string Pct(uint64_t part, uint64_t whole) {
  char b[32];
  snprintf(b, sizeof b, "%.1f %%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return b;
}

constexpr Rule kRules[] = {Rule::kDump, Rule::kDwarf, Rule::kShape, Rule::kHolder, Rule::kSize, Rule::kNothing};

uint64_t TypeNamedBytes(const Stats& s) {
  return s.bytes[static_cast<unsigned>(Rule::kDump)] + s.bytes[static_cast<unsigned>(Rule::kDwarf)] +
         s.bytes[static_cast<unsigned>(Rule::kShape)];
}

}  // namespace

void PrintTypedFraction(std::ostream& out, const Stats& s) {
  // "Named" excludes rule 5: a size says nothing of what the object is.
  const uint64_t no = s.total_objects - s.objects[0] - s.objects[5];
  const uint64_t nb = s.total_bytes - s.bytes[0] - s.bytes[5];
  out << "typed: " << no << " of " << s.total_objects << " objects (" << Pct(no, s.total_objects) << "), " << nb
      << " of " << s.total_bytes << " bytes (" << Pct(nb, s.total_bytes) << ")\n";
  for (Rule r : kRules) {
    const unsigned k = static_cast<unsigned>(r);
    if (s.objects[k] == 0) continue;
    out << "  " << RuleName(r) << ": " << s.objects[k] << " objects, " << s.bytes[k] << " bytes ("
        << Pct(s.bytes[k], s.total_bytes) << ")\n";
  }
  // The measure of the typing: what a type names (dump, DWARF, shape) says
  // what the bytes are; a holder or a size only where they are.
  const uint64_t by_type = TypeNamedBytes(s), by_place = s.bytes[static_cast<unsigned>(Rule::kHolder)] + s.bytes[static_cast<unsigned>(Rule::kSize)];
  out << "  named by a type (dump, dwarf, shape): " << by_type << " bytes (" << Pct(by_type, s.total_bytes)
      << "); by a holder or a size: " << by_place << " bytes (" << Pct(by_place, s.total_bytes) << ")\n";
  if (s.named_roots) out << "  roots named by a variable: " << s.named_roots << '\n';
}

void WriteTypedFractionJson(JsonWriter& j, const Stats& s) {
  j.BeginObject();
  j.Field("objects", s.total_objects);
  j.Field("bytes", s.total_bytes);
  j.Field("named_objects", s.total_objects - s.objects[0] - s.objects[5]);
  j.Field("named_bytes", s.total_bytes - s.bytes[0] - s.bytes[5]);
  j.Field("named_roots", s.named_roots);
  j.Field("type_named_bytes", TypeNamedBytes(s));
  j.Field("holder_or_size_bytes", s.bytes[static_cast<unsigned>(Rule::kHolder)] + s.bytes[static_cast<unsigned>(Rule::kSize)]);
  j.Key("by_rule");
  j.BeginObject();
  for (Rule r : kRules) {
    const unsigned k = static_cast<unsigned>(r);
    j.Key(RuleName(r));
    j.BeginObject();
    j.Field("objects", s.objects[k]);
    j.Field("bytes", s.bytes[k]);
    j.EndObject();
  }
  j.EndObject();
  j.EndObject();
}

void PrintClasses(std::ostream& out, const HeapGraph& g, size_t top) {
  const auto rows = heapgraph::Histogram(g, heapgraph::SortBy::kBytes);
  out << "count\tbytes\tretained\trule\tclass\n";
  for (size_t k = 0; k < rows.size() && (top == 0 || k < top); ++k) {
    const heapgraph::ClassInfo& c = g.classes[rows[k]];
    out << c.count << '\t' << c.bytes << '\t' << c.retained << '\t' << RuleName(c.named_by) << '\t' << c.name << '\n';
  }
}

void WriteClassesJson(JsonWriter& j, const HeapGraph& g, size_t top) {
  const auto rows = heapgraph::Histogram(g, heapgraph::SortBy::kBytes);
  j.BeginArray();
  for (size_t k = 0; k < rows.size() && (top == 0 || k < top); ++k) {
    const heapgraph::ClassInfo& c = g.classes[rows[k]];
    j.BeginObject();
    j.Field("class", c.name);
    j.Field("rule", RuleName(c.named_by));
    j.Field("count", c.count);
    j.Field("bytes", c.bytes);
    j.Field("retained", c.retained);
    j.EndObject();
  }
  j.EndArray();
}

Leaks FindLeaks(const HeapGraph& g, size_t top) {
  Leaks l;
  const Index n = static_cast<Index>(g.size());
  if (g.idom.size() != n) return l;
  auto leaked = [&](Index i) { return g.idom[i] == kNone; };
  std::vector<LeakClass> by_class(g.classes.size());
  // Union-find over references between leaked objects: a cluster is one
  // connected group (a leaked list and its elements, a map and its nodes).
  std::vector<Index> up(n, kNone);
  auto find = [&](Index x) {
    Index r = x;
    while (up[r] != r) r = up[r];
    while (up[x] != r) {
      const Index next = up[x];
      up[x] = r;
      x = next;
    }
    return r;
  };
  for (Index i = 0; i < n; ++i) {
    if (!leaked(i)) continue;
    up[i] = i;
    ++l.objects;
    l.bytes += g.Size(i);
    LeakClass& c = by_class[g.cls[i]];
    c.cls = g.cls[i];
    ++c.count;
    c.bytes += g.Size(i);
  }
  std::vector<uint8_t> referenced(n, 0);
  for (Index i = 0; i < n; ++i) {
    if (!leaked(i)) continue;
    for (Index t : g.Out(i)) {
      if (t >= n || !leaked(t) || t == i) continue;
      referenced[t] = 1;
      const Index a = find(i), b = find(t);
      if (a != b) up[std::max(a, b)] = std::min(a, b);  // the lowest index leads: deterministic
    }
  }
  for (const LeakClass& c : by_class) {
    if (c.count) l.classes.push_back(c);
  }
  std::sort(l.classes.begin(), l.classes.end(), [&](const LeakClass& a, const LeakClass& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : g.classes[a.cls].name < g.classes[b.cls].name;
  });
  // Per cluster leader: count, bytes, entry.
  std::unordered_map<Index, LeakCluster> clusters;
  for (Index i = 0; i < n; ++i) {
    if (!leaked(i)) continue;
    LeakCluster& c = clusters[find(i)];
    if (c.entry == kNone || (referenced[c.entry] && !referenced[i])) c.entry = i;
    ++c.count;
    c.bytes += g.Size(i);
  }
  l.cluster_count = clusters.size();
  std::vector<std::pair<Index, LeakCluster>> sorted(clusters.begin(), clusters.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.bytes != b.second.bytes ? a.second.bytes > b.second.bytes : a.first < b.first;
  });
  if (top && sorted.size() > top) sorted.resize(top);
  std::unordered_map<Index, size_t> slot;
  for (size_t k = 0; k < sorted.size(); ++k) slot[sorted[k].first] = k;
  std::vector<std::unordered_map<uint32_t, LeakClass>> holds(sorted.size());
  for (Index i = 0; i < n; ++i) {
    if (!leaked(i)) continue;
    auto it = slot.find(find(i));
    if (it == slot.end()) continue;
    LeakClass& c = holds[it->second][g.cls[i]];
    c.cls = g.cls[i];
    ++c.count;
    c.bytes += g.Size(i);
  }
  for (size_t k = 0; k < sorted.size(); ++k) {
    LeakCluster c = sorted[k].second;
    for (const auto& [cls, h] : holds[k]) c.holds.push_back(h);
    std::sort(c.holds.begin(), c.holds.end(), [&](const LeakClass& a, const LeakClass& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : g.classes[a.cls].name < g.classes[b.cls].name;
    });
    if (c.holds.size() > 5) c.holds.resize(5);
    l.clusters.push_back(std::move(c));
  }
  return l;
}

void PrintLeaks(std::ostream& out, const HeapGraph& g, const Leaks& l, size_t top) {
  out << "unreachable: " << l.objects << " objects, " << l.bytes << " bytes (" << Pct(l.bytes, g.total_bytes)
      << " of the heap) in " << l.cluster_count << " clusters\n";
  if (l.objects == 0) return;
  out << "count\tbytes\tclass\n";
  for (size_t k = 0; k < l.classes.size() && (top == 0 || k < top); ++k) {
    out << l.classes[k].count << '\t' << l.classes[k].bytes << '\t' << g.classes[l.classes[k].cls].name << '\n';
  }
  out << "\nlargest clusters:\ncount\tbytes\tentry\tholds\n";
  for (const LeakCluster& c : l.clusters) {
    out << c.count << '\t' << c.bytes << '\t' << heapgraph::Label(g, c.entry) << '\t';
    for (size_t k = 0; k < c.holds.size(); ++k) {
      out << (k ? ", " : "") << c.holds[k].count << " " << g.classes[c.holds[k].cls].name;
    }
    out << '\n';
  }
}

void WriteLeaksJson(JsonWriter& j, const HeapGraph& g, const Leaks& l, size_t top) {
  j.BeginObject();
  j.Field("objects", l.objects);
  j.Field("bytes", l.bytes);
  j.Field("clusters_total", l.cluster_count);
  j.Key("classes");
  j.BeginArray();
  for (size_t k = 0; k < l.classes.size() && (top == 0 || k < top); ++k) {
    j.BeginObject();
    j.Field("class", g.classes[l.classes[k].cls].name);
    j.Field("count", l.classes[k].count);
    j.Field("bytes", l.classes[k].bytes);
    j.EndObject();
  }
  j.EndArray();
  j.Key("clusters");
  j.BeginArray();
  for (const LeakCluster& c : l.clusters) {
    j.BeginObject();
    j.Key("entry");
    j.Hex(g.ids[c.entry]);
    j.Field("class", g.ClassName(c.entry));
    j.Field("count", c.count);
    j.Field("bytes", c.bytes);
    j.Key("holds");
    j.BeginArray();
    for (const LeakClass& h : c.holds) {
      j.BeginObject();
      j.Field("class", g.classes[h.cls].name);
      j.Field("count", h.count);
      j.Field("bytes", h.bytes);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

}  // namespace libdump::typing
