#include "growth_report.h"

#include <sstream>

#include "report.h"

namespace libdump::heapgraph {
namespace {

std::string Signed(int64_t v) { return (v > 0 ? "+" : "") + std::to_string(v); }

std::string Series(const std::vector<uint64_t>& v) {
  std::string s;
  for (size_t k = 0; k < v.size(); ++k) s += (k ? " " : "") + std::to_string(v[k]);
  return s;
}

void UintArray(readdump::JsonWriter& j, const std::vector<uint64_t>& v) {
  j.BeginArray();
  for (uint64_t x : v) j.Uint(x);
  j.EndArray();
}

}  // namespace

void PrintGrowth(std::ostream& out, const Growth& gr, const HeapGraph& newest, size_t top) {
  out << "series: " << gr.files.size() << " dumps, oldest first\n";
  for (size_t d = 0; d < gr.files.size(); ++d) {
    out << "  " << d + 1 << '\t' << gr.objects[d] << " objects\t" << gr.bytes[d] << " bytes\t"
        << gr.reachable_bytes[d] << " reachable\t" << gr.files[d] << '\n';
  }
  out << "\nclasses (per dump, oldest first; trend \"grows\": more bytes at every step)\n";
  out << "trend\tbytes\tbytes per dump\tcount per dump\tretained per dump\tclass\n";
  for (size_t k = 0; k < gr.classes.size() && (top == 0 || k < top); ++k) {
    const SeriesClass& c = gr.classes[k];
    out << (c.grows ? "grows" : "-") << '\t' << Signed(c.bytes_growth()) << '\t' << Series(c.bytes) << '\t'
        << Series(c.count) << '\t' << Series(c.retained) << '\t' << c.name << '\n';
  }
  if (!gr.by_object) {
    out << "\nobjects: not compared (an hprof's ids are not stable across dumps)\n";
    return;
  }
  out << "\nobjects: " << gr.survived_objects << " (" << gr.survived_bytes << " bytes) in every dump\n";
  for (size_t d = 0; d < gr.steps.size(); ++d) {
    const SeriesStep& s = gr.steps[d];
    out << "  " << d + 1 << " -> " << d + 2 << ": " << s.new_objects << " new (" << s.new_bytes << " bytes), "
        << s.freed_objects << " freed (" << s.freed_bytes << " bytes)\n";
  }
  out << "\naccumulation points (survivors whose retained size grew, first to last dump)\n";
  if (gr.points.empty()) out << "  none\n";
  for (const AccumulationPoint& p : gr.points) {
    out << Signed(p.growth) << "\tretained " << Series(p.retained) << '\t' << Label(newest, p.object) << '\n';
    out << "  grown by:";
    for (size_t k = 0; k < p.grown_by.size() && k < 5; ++k) {
      out << (k ? "," : "") << ' ' << p.grown_by[k].name << ' ' << p.grown_by[k].bytes << " bytes ("
          << p.grown_by[k].count << ')';
    }
    if (p.grown_by.empty()) out << " objects it already had";
    out << '\n';
    std::ostringstream path;
    PrintPath(path, newest, p.object);
    std::istringstream lines(path.str());
    for (std::string line; std::getline(lines, line);) out << "  " << line << '\n';
  }
}

void WriteGrowthJson(readdump::JsonWriter& j, const Growth& gr, const HeapGraph& newest, size_t top) {
  j.BeginObject();
  j.Key("dumps");
  j.BeginArray();
  for (size_t d = 0; d < gr.files.size(); ++d) {
    j.BeginObject();
    j.Field("file", gr.files[d]);
    j.Field("objects", gr.objects[d]);
    j.Field("bytes", gr.bytes[d]);
    j.Field("reachable_bytes", gr.reachable_bytes[d]);
    j.EndObject();
  }
  j.EndArray();
  j.Key("classes");
  j.BeginArray();
  for (size_t k = 0; k < gr.classes.size() && (top == 0 || k < top); ++k) {
    const SeriesClass& c = gr.classes[k];
    j.BeginObject();
    j.Field("class", c.name);
    j.Key("grows");
    j.Bool(c.grows);
    j.Key("count");
    UintArray(j, c.count);
    j.Key("bytes");
    UintArray(j, c.bytes);
    j.Key("retained");
    UintArray(j, c.retained);
    j.EndObject();
  }
  j.EndArray();
  j.Key("by_object");
  j.Bool(gr.by_object);
  if (gr.by_object) {
    j.Field("survived_objects", gr.survived_objects);
    j.Field("survived_bytes", gr.survived_bytes);
    j.Key("steps");
    j.BeginArray();
    for (const SeriesStep& s : gr.steps) {
      j.BeginObject();
      j.Field("new_objects", s.new_objects);
      j.Field("new_bytes", s.new_bytes);
      j.Field("freed_objects", s.freed_objects);
      j.Field("freed_bytes", s.freed_bytes);
      j.EndObject();
    }
    j.EndArray();
    j.Key("accumulation_points");
    j.BeginArray();
    for (const AccumulationPoint& p : gr.points) {
      j.BeginObject();
      j.Key("id");
      j.Hex(newest.ids[p.object]);
      j.Field("class", newest.ClassName(p.object));
      j.Field("growth", static_cast<uint64_t>(p.growth));
      j.Key("retained");
      UintArray(j, p.retained);
      j.Key("grown_by");
      j.BeginArray();
      for (const GrowthPart& g : p.grown_by) {
        j.BeginObject();
        j.Field("class", g.name);
        j.Field("count", g.count);
        j.Field("bytes", g.bytes);
        j.EndObject();
      }
      j.EndArray();
      j.Key("path");
      WritePathJson(j, newest, p.object);
      j.EndObject();
    }
    j.EndArray();
  }
  j.EndObject();
}

}  // namespace libdump::heapgraph
