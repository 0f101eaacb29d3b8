#include "series_page.h"

#include "html.h"
#include "page.h"
#include "paths.h"
#include "report.h"

namespace libdump::heapview {
namespace {

std::string PerDump(const std::vector<uint64_t>& v) {
  std::string s = "<td class=\"n\">";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? " &rarr; " : "") + Thousands(v[k]);
  return s + "</td>";
}

std::string ObjectLink(const heapgraph::HeapGraph& g, heapgraph::Index i) {
  const std::string id = heapgraph::HexId(g.ids[i]);
  return "<a href=\"/object/" + id + "\">" + Escape(g.ClassName(i)) + "@" + id + "</a>";
}

}  // namespace

std::string SeriesBody(const heapgraph::Growth& gr, const heapgraph::HeapGraph& newest) {
  std::string h = "<table id=\"dumps\"><tr><th>#</th><th>file</th><th>objects</th><th>bytes</th><th>reachable bytes</th></tr>";
  for (size_t d = 0; d < gr.files.size(); ++d) {
    h += "<tr>" + Num(d + 1) + "<td>" + Escape(gr.files[d]) + "</td>" + Num(gr.objects[d]) + Num(gr.bytes[d]) +
         Num(gr.reachable_bytes[d]) + "</tr>";
  }
  h += "</table><h2>Classes</h2><p>Per dump, oldest first. <span class=\"new\">grows</span>: more bytes at every "
       "step. Classes that did not change are left out.</p><table id=\"series\"><tr><th>trend</th><th>class</th>"
       "<th>bytes, first to last</th><th>bytes</th><th>count</th><th>retained</th></tr>\n";
  for (const heapgraph::SeriesClass& c : gr.classes) {
    h += std::string("<tr><td") + (c.grows ? " class=\"new\">grows" : ">") + "</td><td><a href=\"/class?name=" +
         UrlEncode(c.name) + "\">" + Escape(c.name) + "</a></td>" + SignedNum(c.bytes_growth()) + PerDump(c.bytes) +
         PerDump(c.count) + PerDump(c.retained) + "</tr>\n";
  }
  h += "</table>";
  if (!gr.by_object) {
    return h + "<p class=\"muted\">Objects are not compared: an hprof's ids are not stable across dumps.</p>";
  }
  h += "<h2>Objects</h2><p>" + Thousands(gr.survived_objects) + " objects (" + Thousands(gr.survived_bytes) +
       " bytes) are in every dump.</p><table id=\"steps\"><tr><th>step</th><th>new</th><th>new bytes</th>"
       "<th>freed</th><th>freed bytes</th></tr>";
  for (size_t d = 0; d < gr.steps.size(); ++d) {
    const heapgraph::SeriesStep& s = gr.steps[d];
    h += "<tr><td>" + std::to_string(d + 1) + " &rarr; " + std::to_string(d + 2) + "</td>" + Num(s.new_objects) +
         Num(s.new_bytes) + Num(s.freed_objects) + Num(s.freed_bytes) + "</tr>";
  }
  h += "</table><h2>Accumulation points</h2><p>Objects in every dump whose retained size grew, where no single "
       "object they dominate carries most of the growth.</p>";
  if (gr.points.empty()) return h + "<p>None.</p>";
  h += "<table id=\"points\"><tr><th>object</th><th>retained growth</th><th>retained</th><th>grown by (new since "
       "the first dump)</th><th>path</th></tr>\n";
  for (const heapgraph::AccumulationPoint& p : gr.points) {
    std::string parts;
    for (size_t k = 0; k < p.grown_by.size() && k < 5; ++k) {
      parts += (k ? "<br>" : "") + Escape(p.grown_by[k].name) + ": " + Thousands(p.grown_by[k].bytes) + " bytes (" +
               Thousands(p.grown_by[k].count) + ")";
    }
    const std::string id = heapgraph::HexId(newest.ids[p.object]);
    h += "<tr><td>" + ObjectLink(newest, p.object) + "</td>" + SignedNum(p.growth) + PerDump(p.retained) + "<td>" +
         parts + "</td><td><a href=\"/path/" + id + "\">from a root</a></td></tr>\n";
  }
  return h + "</table>";
}

}  // namespace libdump::heapview
