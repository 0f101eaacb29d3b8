// What retains memory: the dominator tree, leak suspects, leaks, finalizers
// and the threads' stacks.
#include "pages.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <sstream>

#include "analyze.h"
#include "growth_report.h"
#include "histogram.h"
#include "human_size.h"
#include "libdump/format/reader.h"
#include "object_detail.h"
#include "object_sort.h"
#include "paths.h"
#include "report.h"
#include "series_page.h"
#include "typing.h"
#include "typing_report.h"

namespace libdump::heapview {

std::string Pages::DominatorRows(heapgraph::IndexSpan objs, size_t page, const Target& t, const std::string& base) {
  const SortOrder so = ParseSortOrder(t, {"retained", "size", "class"});
  const std::string filter = t.Get("filter");
  // The top retainers come most retained first: a copy only for another order or a filter.
  std::vector<Index> sorted;
  if (so.column != "retained" || !so.desc || !filter.empty()) {
    sorted = SortObjects(g_, objs, so, filter);
    objs = sorted;
  }
  const std::string path = base.substr(0, base.find('?'));
  const std::string obj = t.Get("obj");
  const std::string keep = QueryTail({{"obj", obj}, {"filter", filter}});
  std::string s = FilterForm(path, filter, {{"obj", obj}, {"sort", t.Get("sort")}, {"order", t.Get("order")}}) +
                  "<table id=\"dominators\"><tr>" + SortHeader(path, keep, so, "retained", "retained") +
                  "<th>%</th>" + SortHeader(path, keep, so, "size", "size") + SortHeader(path, keep, so, "class", "object") +
                  "<th></th></tr>\n";
  for (size_t k = page * kPage; k < objs.size() && k < (page + 1) * kPage; ++k) {
    const Index o = objs[k];
    s += "<tr>" + BytesCell(g_.retained[o]) + "<td class=\"n\">" + Pct(g_.retained[o], g_.reachable_bytes) + "</td>" +
         BytesCell(g_.Size(o)) + "<td>" + ObjLink(o) + "</td><td><a href=\"/dominators?obj=" + heapgraph::HexId(g_.ids[o]) +
         "\">dominated</a></td></tr>\n";
  }
  const std::string tail = QueryTail({{"filter", filter}, {"sort", t.Get("sort")}, {"order", t.Get("order")}});
  const std::string pager_base = tail.empty() ? base : base + (base.find('?') == std::string::npos ? "?" : "&amp;") + Escape(tail);
  return s + "</table>" + Pager(pager_base, page, objs.size());
}

Response Pages::Dominators(const Target& t) {
  const size_t page = std::min(t.GetUint("page", 0), kMaxPage);
  if (t.Get("obj").empty()) {
    Html h("Dominator tree: top retainers");
    h << "<p>Objects only the roots dominate, by retained size; " << g_.reachable_bytes
      << " bytes are reachable. <a href=\"/flame\">As a flame graph</a>.</p>"
      << DominatorRows(g_.top_retainers.span(), page, t, "/dominators");
    return Ok(h.Finish(nav_));
  }
  const Index i = Lookup(t.Get("obj"));
  if (i == kNone) return NotFound("No object " + t.Get("obj") + " in this heap.");
  const auto kids = heapgraph::Dominated(g_, i);
  Html h("Dominated by " + heapgraph::Label(g_, i));
  h << "<p>" << ObjLink(i) << " retains " << g_.retained[i] << " bytes; it immediately dominates " << kids.size()
    << " objects.</p>"
    << DominatorRows(kids, page, t, "/dominators?obj=" + heapgraph::HexId(g_.ids[i]));
  return Ok(h.Finish(nav_));
}

std::string Pages::Suspects() {
  Html h("Leak suspects");
  const auto s = heapgraph::LeakSuspects(g_);
  h << "<p>Objects and classes that retain more than 10% of the " << g_.reachable_bytes
    << " reachable bytes.</p><h2>Classes</h2><table><tr><th>class</th><th>retained</th><th>%</th></tr>";
  for (uint32_t c : s.classes) {
    h << "<tr><td>" << ClassLink(g_.classes[c].name) << "</td>" << Num(g_.classes[c].retained) << "<td class=\"n\">"
      << Pct(g_.classes[c].retained, g_.reachable_bytes) << "</td></tr>";
  }
  h << "</table><h2>Objects</h2>";
  for (size_t k = 0; k < s.objects.size() && k < 50; ++k) {
    const Index o = s.objects[k];
    h << "<h3>" << ObjLink(o) << " retains " << g_.retained[o] << " bytes (" << Pct(g_.retained[o], g_.reachable_bytes)
      << ")</h3><ol>";
    for (Index p : heapgraph::PathFromRoot(g_, o)) h << "<li>" << ObjLink(p) << "</li>";
    h << "</ol>";
  }
  return h.Finish(nav_);
}

std::string Pages::Leaks() {
  Html h("Leaks");
  const typing::Leaks l = typing::FindLeaks(g_, 20);
  h << "<p>Objects no root reaches. In a C++ heap nothing frees them any more: they are leaks, "
       "as LeakSanitizer reports them at exit.</p><table><tr><th>unreachable objects</th>"
    << Num(l.objects) << "</tr><tr><th>unreachable bytes</th>" << Num(l.bytes) << "</tr><tr><th>clusters</th>"
    << Num(l.cluster_count) << "</tr></table><h2>By class</h2><table><tr><th>class</th><th>count</th><th>bytes</th></tr>";
  for (size_t k = 0; k < l.classes.size() && k < 200; ++k) {
    h << "<tr><td>" << ClassLink(g_.classes[l.classes[k].cls].name) << "</td>" << Num(l.classes[k].count)
      << Num(l.classes[k].bytes) << "</tr>";
  }
  h << "</table><h2>Largest clusters</h2><table><tr><th>entry</th><th>objects</th><th>bytes</th><th>holds</th></tr>";
  for (const typing::LeakCluster& c : l.clusters) {
    h << "<tr><td>" << ObjLink(c.entry) << "</td>" << Num(c.count) << Num(c.bytes) << "<td>";
    for (size_t k = 0; k < c.holds.size(); ++k) {
      h << (k ? ", " : "") << c.holds[k].count << " " << ClassLink(g_.classes[c.holds[k].cls].name);
    }
    h << "</td></tr>";
  }
  h << "</table><h2 id=\"legend\">Which rule named a class</h2><table>";
  for (unsigned r = 1; r <= 5; ++r) {
    const auto rule = static_cast<typing::Rule>(r);
    h << "<tr><th>" << typing::RuleName(rule) << "</th><td>" << Escape(typing::RuleLegend(rule)) << "</td></tr>";
  }
  h << "</table>";
  return h.Finish(nav_);
}

std::string Pages::Finalizers() {
  Html h("Finalizer summary");
  std::map<std::string, uint64_t> by_class;
  for (Index o : g_.finalizable) ++by_class[g_.ClassName(o)];
  h << "<p>" << g_.finalizable.size() << " objects wait for finalization.</p><table><tr><th>class</th><th>count</th></tr>";
  for (const auto& [name, n] : by_class) h << "<tr><td>" << ClassLink(name) << "</td>" << Num(n) << "</tr>";
  h << "</table><ul>";
  for (size_t k = 0; k < g_.finalizable.size() && k < 1000; ++k) h << "<li>" << ObjLink(g_.finalizable[k]) << "</li>";
  h << "</ul>";
  return h.Finish(nav_);
}

std::string Pages::Threads() {
  Html h("Threads");
  for (uint32_t t = 0; t < g_.threads.size(); ++t) {
    const auto& th = g_.threads[t];
    h << "<h2>" << Escape(th.name) << "</h2><p>";
    if (!th.state.empty()) h << "state " << Escape(th.state) << ". ";
    if (th.object != kNone) h << "object " << ObjLink(th.object) << ". ";
    size_t roots = 0;
    for (const auto& r : g_.roots) roots += r.thread == t;
    h << roots << " roots.</p><pre>";
    for (const std::string& f : th.frames) h << Escape(f) << "\n";
    h << "</pre>";
  }
  if (g_.threads.empty()) h << "<p>The dump has no threads.</p>";
  return h.Finish(nav_);
}

}  // namespace libdump::heapview
