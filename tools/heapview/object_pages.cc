// The pages of one object (fields, path from a root, what it reaches) and
// the roots.
#include "pages.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <sstream>

#include "analyze.h"
#include "growth_report.h"
#include "histogram.h"
#include "libdump/format/reader.h"
#include "object_detail.h"
#include "paths.h"
#include "report.h"
#include "series_page.h"
#include "typing.h"
#include "typing_report.h"

namespace libdump::heapview {

std::string Pages::RootLine(uint32_t r) {
  const heapgraph::Root& root = g_.roots[r];
  std::string s = Escape(g_.root_kinds[root.kind]);
  if (!root.label.empty()) s += " " + Escape(root.label);
  if (root.thread != kNone) s += " (thread " + Escape(g_.threads[root.thread].name) + ")";
  return s;
}

std::string Pages::ObjectPage(Index i, const Target& t) {
  Html h(heapgraph::Label(g_, i));
  const heapgraph::ObjectDetail d = heapgraph::ReadObject(g_, i, std::min(t.GetUint("epage", 0), kMaxPage) * 1000, 1000);
  h << "<table><tr><th>class</th><td>" << ClassLink(g_.ClassName(i)) << "</td></tr><tr><th>id</th><td>"
    << heapgraph::HexId(g_.ids[i]) << "</td></tr><tr><th>size</th>" << Num(g_.Size(i))
    << "</tr><tr><th>retained</th>" << Num(g_.retained[i]) << "</tr><tr><th>dominator</th><td>";
  const Index d_of = g_.idom[i];
  if (d_of == kNone) {
    h << "none: not reachable from a root";
  } else if (d_of == kSuperRoot) {
    h << "the roots";
  } else {
    h << ObjLink(d_of);
  }
  h << "</td></tr>";
  if (IsNew(i)) h << "<tr><th>baseline</th><td class=\"new\">new since the baseline</td></tr>";
  const auto roots = heapgraph::RootsOf(g_, i);
  for (uint32_t r : roots) h << "<tr><th>root</th><td>" << RootLine(r) << "</td></tr>";
  h << "</table><p><a href=\"/path/" << heapgraph::HexId(g_.ids[i]) << "\">Path from the roots</a> | <a href=\"/reachable/"
    << heapgraph::HexId(g_.ids[i]) << "\">Objects reachable from here</a> | <a href=\"/dominators?obj="
    << heapgraph::HexId(g_.ids[i]) << "\">Dominated objects</a> | <a href=\"/api/object/" << heapgraph::HexId(g_.ids[i])
    << "\">JSON</a></p>";
  if (!d.text.empty()) h << "<h2>Contents</h2><pre>" << Escape(d.text) << "</pre>";
  h << "<h2>Fields</h2>";
  if (d.elements) h << "<p>" << d.elements << " elements</p>";
  h << "<table id=\"fields\"><tr><th>name</th><th>type</th><th>value</th></tr>\n";
  for (const auto& f : d.fields) {
    h << "<tr><td>" << Escape(f.name) << "</td><td>" << Escape(f.type) << "</td><td>"
      << (f.ref != kNone ? ObjLink(f.ref) : Escape(f.value)) << "</td></tr>\n";
  }
  h << "</table>";
  if (d.elements > 1000) {
    const size_t ep = std::min(t.GetUint("epage", 0), kMaxPage);
    const std::string base = "/object/" + heapgraph::HexId(g_.ids[i]) + "?epage=";
    if (ep > 0) h << "<a href=\"" << base << std::to_string(ep - 1) << "\">previous elements</a> ";
    if ((ep + 1) * 1000 < d.elements) h << "<a href=\"" << base << std::to_string(ep + 1) << "\">next elements</a>";
  }
  const auto out = g_.Out(i);
  h << "<h2>References from this object</h2><p>" << out.size() << "</p><ul id=\"refs-from\">";
  for (size_t k = 0; k < out.size() && k < kPage; ++k) h << "<li>" << ObjLink(out[k]) << "</li>";
  h << "</ul>";
  const size_t rpage = std::min(t.GetUint("page", 0), kMaxPage);
  size_t total = 0;
  const auto refs = heapgraph::Referrers(g_, i, rpage * kPage, kPage, &total);
  h << "<h2>References to this object</h2><p>" << total << " objects</p><ul id=\"refs-to\">";
  for (Index r : refs) h << "<li>" << ObjLink(r) << "</li>";
  h << "</ul>" << Pager("/object/" + heapgraph::HexId(g_.ids[i]), rpage, total);
  auto st = g_.stack_of.find(i);
  if (st != g_.stack_of.end()) {
    h << "<h2>Allocation stack</h2><pre>";
    for (const std::string& f : g_.stacks[st->second]) h << Escape(f) << "\n";
    h << "</pre>";
  }
  return h.Finish(nav_);
}

std::string Pages::PathPage(Index i) {
  Html h("Path from the roots to " + heapgraph::Label(g_, i));
  const auto path = heapgraph::PathFromRoot(g_, i);
  if (path.empty()) {
    h << "<p>Not reachable from a root through strong references (references of weak, soft, final and phantom "
         "references' referent fields do not count).</p>";
    return h.Finish(nav_);
  }
  // A chain millions deep lists its root and the steps nearest the object.
  constexpr size_t kShown = 1000;
  h << "<p>" << path.size() - 1 << " references from the root.</p><ol id=\"path\">";
  const std::vector<std::string> fields = heapgraph::PathFields(g_, path, kShown);
  for (size_t k = 0; k < path.size(); ++k) {
    if (k == 1 && path.size() > kShown + 1) {
      h << "<li class=\"muted\">... " << path.size() - 1 - kShown << " steps not shown ...</li>";
      k = path.size() - kShown;
    }
    h << "<li>";
    if (k > 0) {  // the field of the object above that holds this one
      h << "<code class=\"field\">" << Escape(fields[k].empty() ? "?" : fields[k]) << "</code> &rarr; ";
    }
    h << ObjLink(path[k]);
    if (k == 0) {
      for (uint32_t r : heapgraph::RootsOf(g_, path[0])) h << " <span class=\"muted\">root: " << RootLine(r) << "</span>";
    }
    h << "</li>";
  }
  h << "</ol>";
  return h.Finish(nav_);
}

std::string Pages::Reachable(Index i) {
  Html h("Objects reachable from " + heapgraph::Label(g_, i));
  uint64_t bytes = 0;
  size_t total = 0;
  const auto objs = heapgraph::ReachableFrom(g_, i, 1000, &bytes, &total);
  h << "<p>" << total << " objects, " << bytes << " bytes" << (total > objs.size() ? " (the first 1,000 listed)" : "")
    << ".</p><ul>";
  for (Index o : objs) h << "<li>" << ObjLink(o) << " " << g_.Size(o) << "</li>";
  h << "</ul>";
  return h.Finish(nav_);
}

std::string Pages::Roots() {
  Html h("Roots");
  h << "<p>" << g_.roots.size() << " roots";
  if (g_.dropped_roots) h << "; " << g_.dropped_roots << " more name no object";
  h << ".</p>";
  for (uint32_t kind = 0; kind < g_.root_kinds.size(); ++kind) {
    size_t n = 0;
    for (const auto& r : g_.roots) n += r.kind == kind;
    if (n == 0) continue;
    h << "<h2>" << Escape(g_.root_kinds[kind]) << " (" << n << ")</h2><ul>";
    size_t shown = 0;
    for (uint32_t r = 0; r < g_.roots.size() && shown < 1000; ++r) {
      if (g_.roots[r].kind != kind) continue;
      h << "<li>" << ObjLink(g_.roots[r].object) << " <span class=\"muted\">" << RootLine(r) << "</span></li>";
      ++shown;
    }
    h << "</ul>";
  }
  return h.Finish(nav_);
}

}  // namespace libdump::heapview
