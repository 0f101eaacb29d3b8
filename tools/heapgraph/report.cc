#include "report.h"

#include <charconv>
#include <cstdio>

#include "object_detail.h"
#include "paths.h"

namespace libdump::heapgraph {

std::string OwnLine(const HeapGraph& g) { return tools::OwnLine(g.own_objects, g.own_bytes, g.include_own); }

std::string HexId(uint64_t id) {
  char b[24];
  snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(id));
  return b;
}

std::string Label(const HeapGraph& g, Index i) { return g.ClassName(i) + "@" + HexId(g.ids[i]); }

bool ParseId(const std::string& s, uint64_t* id) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    b += 2;
    base = 16;
  }
  const auto [end, ec] = std::from_chars(b, e, *id, base);
  return ec == std::errc() && end == e && b != e;
}

void PrintDominators(std::ostream& out, const HeapGraph& g, size_t top) {
  out << "reachable: " << g.reachable_objects << " objects, " << g.reachable_bytes << " bytes\n";
  out << "retained\tshallow\tpercent\tobject\n";
  for (size_t k = 0; k < g.top_retainers.size() && (top == 0 || k < top); ++k) {
    const Index i = g.top_retainers[k];
    char pct[16];
    snprintf(pct, sizeof pct, "%.1f%%",
             g.reachable_bytes ? 100.0 * static_cast<double>(g.retained[i]) / static_cast<double>(g.reachable_bytes) : 0);
    out << g.retained[i] << '\t' << g.Size(i) << '\t' << pct << '\t' << Label(g, i) << '\n';
  }
}

void WriteDominatorsJson(JsonWriter& j, const HeapGraph& g, IndexSpan objects) {
  j.BeginArray();
  for (Index i : objects) {
    j.BeginObject();
    j.Key("id");
    j.Hex(g.ids[i]);
    j.Field("class", g.ClassName(i));
    j.Field("shallow", g.Size(i));
    j.Field("retained", g.retained[i]);
    j.EndObject();
  }
  j.EndArray();
}

void PrintPath(std::ostream& out, const HeapGraph& g, Index obj) {
  const std::vector<Index> path = PathFromRoot(g, obj);
  if (path.empty()) {
    out << Label(g, obj) << ": not reachable from a root through strong references\n";
    return;
  }
  const std::vector<std::string> fields = PathFields(g, path);
  for (size_t k = 0; k < path.size(); ++k) {
    out << std::string(2 * k, ' ');
    if (k > 0) out << (fields[k].empty() ? "?" : fields[k]) << " -> ";
    out << Label(g, path[k]);
    if (k == 0) {
      for (uint32_t r : RootsOf(g, path[0])) {
        out << " [root: " << g.root_kinds[g.roots[r].kind];
        if (!g.roots[r].label.empty()) out << ' ' << g.roots[r].label;
        out << ']';
      }
    }
    out << '\n';
  }
}

void WritePathJson(JsonWriter& j, const HeapGraph& g, Index obj) {
  const std::vector<Index> path = PathFromRoot(g, obj);
  j.BeginObject();
  j.Key("object");
  j.Hex(g.ids[obj]);
  j.Key("reachable");
  j.Bool(!path.empty());
  j.Key("roots");
  j.BeginArray();
  if (!path.empty()) {
    for (uint32_t r : RootsOf(g, path[0])) {
      j.BeginObject();
      j.Field("kind", g.root_kinds[g.roots[r].kind]);
      j.Field("label", g.roots[r].label);
      j.EndObject();
    }
  }
  j.EndArray();
  j.Key("path");
  j.BeginArray();
  const std::vector<std::string> fields = PathFields(g, path);
  for (size_t k = 0; k < path.size(); ++k) {
    const Index i = path[k];
    j.BeginObject();
    j.Key("id");
    j.Hex(g.ids[i]);
    j.Field("class", g.ClassName(i));
    if (k > 0) {  // the field of the object before that holds this one
      j.Field("field", fields[k]);
    }
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

void PrintDiff(std::ostream& out, const std::vector<DiffRow>& rows, size_t top) {
  out << "count\tbytes\tretained\t(old count\told bytes)\tclass\n";
  for (size_t k = 0; k < rows.size() && (top == 0 || k < top); ++k) {
    const DiffRow& r = rows[k];
    auto sgn = [](int64_t v) { return (v > 0 ? "+" : "") + std::to_string(v); };
    out << sgn(r.count_delta()) << '\t' << sgn(r.bytes_delta()) << '\t' << sgn(r.retained_delta()) << "\t("
        << r.old_count << '\t' << r.old_bytes << ")\t" << r.name << '\n';
  }
}

void WriteDiffJson(JsonWriter& j, const std::vector<DiffRow>& rows, size_t top) {
  j.BeginArray();
  for (size_t k = 0; k < rows.size() && (top == 0 || k < top); ++k) {
    const DiffRow& r = rows[k];
    j.BeginObject();
    j.Field("class", r.name);
    for (auto [key, a, b] : {std::tuple{"count", r.old_count, r.new_count}, std::tuple{"bytes", r.old_bytes, r.new_bytes},
                             std::tuple{"retained", r.old_retained, r.new_retained}}) {
      j.Field(std::string("old_") + key, a);
      j.Field(std::string("new_") + key, b);
    }
    j.EndObject();
  }
  j.EndArray();
}

void WriteHistogramJson(JsonWriter& j, const HeapGraph& g, const std::vector<uint32_t>& classes) {
  j.BeginArray();
  for (uint32_t c : classes) {
    const ClassInfo& k = g.classes[c];
    j.BeginObject();
    j.Field("class", k.name);
    j.Key("rule");  // which typing rule named it (docs/TYPING.md)
    j.String(NamedByName(k.named_by));
    j.Field("count", k.count);
    j.Field("bytes", k.bytes);
    j.Field("retained", k.retained);
    j.EndObject();
  }
  j.EndArray();
}

void WriteObjectJson(JsonWriter& j, const HeapGraph& g, Index i, const ObjectDetail& d) {
  j.BeginObject();
  j.Key("id");
  j.Hex(g.ids[i]);
  j.Field("class", g.ClassName(i));
  j.Field("shallow", g.Size(i));
  j.Field("retained", g.retained[i]);
  j.Key("reachable");
  j.Bool(g.idom[i] != kNone);
  j.Key("fields");
  j.BeginArray();
  for (const FieldValue& f : d.fields) {
    j.BeginObject();
    j.Field("name", f.name);
    j.Field("type", f.type);
    j.Field("value", f.value);
    j.EndObject();
  }
  j.EndArray();
  j.Key("references");
  j.BeginArray();
  for (Index t : g.Out(i)) j.Hex(g.ids[t]);
  j.EndArray();
  j.EndObject();
}

}  // namespace libdump::heapgraph
