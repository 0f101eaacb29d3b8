// The pages over classes: histogram, class list, one class and its
// instances, the query by class pattern, the diff with a baseline.
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
#include "table_sort.h"
#include "typing.h"
#include "typing_report.h"

namespace libdump::heapview {

std::string Pages::Histogram(const Target& t) {
  const SortOrder so = ParseSortOrder(t, {"bytes", "count", "retained", "name"});
  const std::string filter = t.Get("filter");
  const bool platform = t.Get("platform", "1") != "0";
  auto rows = heapgraph::Histogram(g_, heapgraph::ParseSortBy(so.column), platform);
  // Histogram() puts the largest first and names in order: the other way is its reverse.
  if (so.desc == (so.column == "name")) std::reverse(rows.begin(), rows.end());
  std::erase_if(rows, [&](uint32_t c) { return !ClassMatches(filter, g_.classes[c].name); });
  Html h("Heap histogram");
  const std::string keep = QueryTail({{"filter", filter}, {"platform", platform ? "" : "0"}});
  h << "<p>" << g_.size() << " objects, " << g_.total_bytes << " bytes. Sorted by " << Escape(so.column) << ". "
    << (platform ? "<a href=\"/histogram?platform=0\">Hide platform classes</a>"
                 : "<a href=\"/histogram\">Show platform classes</a>")
    << "</p>" << FilterForm("/histogram", filter, {{"sort", t.Get("sort")}, {"order", t.Get("order")}, {"platform", platform ? "" : "0"}})
    << "<table id=\"histogram\"><tr>" << SortHeader("/histogram", keep, so, "name", "Class")
    << SortHeader("/histogram", keep, so, "count", "Instances") << SortHeader("/histogram", keep, so, "bytes", "Bytes")
    << SortHeader("/histogram", keep, so, "retained", "Retained") << "</tr>\n";
  for (uint32_t c : rows) {
    const ClassInfo& k = g_.classes[c];
    h << "<tr><td>" << ClassLink(k.name) << "</td><td class=\"n\"><a href=\"/instances?name=" << UrlEncode(k.name)
      << "\">" << Thousands(k.count) << "</a></td>" << BytesCell(k.bytes) << BytesCell(k.retained) << "</tr>\n";
  }
  h << "</table>";
  if (rows.empty()) h << "<p>No class matches.</p>";
  return h.Finish(nav_);
}

std::string Pages::Classes(const Target& t) {
  const bool platform = t.Get("platform", "1") != "0";
  const auto rows = heapgraph::Histogram(g_, heapgraph::SortBy::kName, platform, true);
  Html h(platform ? "All classes" : "All classes (without platform classes)");
  h << "<p>" << (platform ? "<a href=\"/classes?platform=0\">Without platform classes</a>"
                          : "<a href=\"/classes\">With platform classes</a>")
    << "</p><ul>";
  for (uint32_t c : rows) {
    h << "<li>" << ClassLink(g_.classes[c].name) << " <span class=\"muted\">(" << g_.classes[c].count
      << " instances)</span></li>\n";
  }
  h << "</ul>";
  return h.Finish(nav_);
}

Index Pages::FindClass(const std::string& name) {
  for (uint32_t c = 0; c < g_.classes.size(); ++c) {
    if (g_.classes[c].name == name) return c;
  }
  return kNone;
}

std::string Pages::StaticValue(const heapgraph::StaticInfo& s) {
  if (s.type != 2) return Escape(std::to_string(s.value));
  if (s.value == 0) return "null";
  const Index i = g_.Find(s.value);
  return i == kNone ? Escape(heapgraph::HexId(s.value)) : ObjLink(i);
}

Response Pages::ClassPage(const Target& t) {
  const std::string name = t.Get("name");
  const Index c = FindClass(name);
  if (c == kNone) return NotFound("No class " + name + " in this heap.");
  const ClassInfo& k = g_.classes[c];
  Html h("Class " + k.name);
  h << "<table><tr><th>instances</th><td class=\"n\"><a href=\"/instances?name=" << UrlEncode(k.name) << "\">"
    << Thousands(k.count) << "</a></td></tr><tr><th>bytes</th>" << Num(k.bytes) << "</tr><tr><th>retained</th>"
    << Num(k.retained) << "</tr><tr><th>instance size</th>" << Num(k.instance_size)
    << "</tr><tr><th>named by</th><td>" << typing::RuleName(k.named_by) << ": " << Escape(typing::RuleLegend(k.named_by))
    << " (<a href=\"/leaks#legend\">legend</a>)</td></tr><tr><th>id</th><td>" << heapgraph::HexId(k.id)
    << "</td></tr><tr><th>superclass</th><td>"
    << (k.super == kNone ? std::string("none") : ClassLink(g_.classes[k.super].name)) << "</td></tr>";
  if (k.object != kNone) h << "<tr><th>class object</th><td>" << ObjLink(k.object) << "</td></tr>";
  h << "</table><h2>Subclasses</h2><ul>";
  for (uint32_t s = 0; s < g_.classes.size(); ++s) {
    if (g_.classes[s].super == c) h << "<li>" << ClassLink(g_.classes[s].name) << "</li>";
  }
  h << "</ul><h2>Fields</h2><table><tr><th>name</th><th>offset</th><th>size</th><th>reference</th></tr>";
  for (const auto& f : k.fields) {
    h << "<tr><td>" << Escape(f.name) << "</td>" << Num(f.offset) << Num(f.size) << "<td>" << (f.is_ref ? "yes" : "")
      << "</td></tr>";
  }
  h << "</table>";
  if (!k.statics.empty()) {
    h << "<h2>Static fields</h2><table><tr><th>name</th><th>value</th></tr>";
    for (const auto& s : k.statics) h << "<tr><td>" << Escape(s.name) << "</td><td>" << StaticValue(s) << "</td></tr>";
    h << "</table>";
  }
  h << "<h2>Instances</h2><ul>";
  size_t shown = 0;
  for (Index i = 0; i < g_.size() && shown < 20; ++i) {
    if (g_.cls[i] == c) {
      h << "<li>" << ObjLink(i) << "</li>";
      ++shown;
    }
  }
  h << "</ul>";
  if (k.count > shown) h << "<p><a href=\"/instances?name=" << UrlEncode(k.name) << "\">all " << k.count << "</a></p>";
  return Ok(h.Finish(nav_));
}

Response Pages::Instances(const Target& t) {
  const std::string name = t.Get("name");
  const Index c = FindClass(name);
  if (c == kNone) return NotFound("No class " + name + " in this heap.");
  const bool only_new = t.Get("new") == "1" && base_;
  const size_t page = std::min(t.GetUint("page", 0), kMaxPage);
  Html h("Instances of " + name);
  // File order unless a header asks for another (then the instances are collected and sorted).
  const bool sorted = !t.Get("sort").empty();
  const SortOrder so = ParseSortOrder(t, {"retained", "size", "class"});
  const std::string keep = QueryTail({{"name", name}, {"new", only_new ? "1" : ""}});
  h << "<table id=\"instances\"><tr>" << SortHeader("/instances", keep, so, "class", "object")
    << SortHeader("/instances", keep, so, "size", "size") << SortHeader("/instances", keep, so, "retained", "retained")
    << "</tr>\n";
  const auto row = [&](Index i) { h << "<tr><td>" << ObjLink(i) << "</td>" << BytesCell(g_.Size(i)) << BytesCell(g_.retained[i]) << "</tr>\n"; };
  size_t total = 0;
  std::vector<Index> all;
  for (Index i = 0; i < g_.size(); ++i) {
    if (g_.cls[i] != c || (only_new && !IsNew(i))) continue;
    if (sorted) {
      all.push_back(i);
    } else if (total >= page * kPage && total < (page + 1) * kPage) {
      row(i);
    }
    ++total;
  }
  if (sorted) {
    all = SortObjects(g_, all, so, "");
    for (size_t k = page * kPage; k < all.size() && k < (page + 1) * kPage; ++k) row(all[k]);
  }
  h << "</table><p>" << total << " instances.";
  if (base_ && !only_new) h << " <a href=\"/instances?name=" << UrlEncode(name) << "&amp;new=1\">Only new ones</a>";
  const std::string order = QueryTail({{"sort", t.Get("sort")}, {"order", t.Get("order")}});
  h << "</p>"
    << Pager("/instances?name=" + UrlEncode(name) + (only_new ? "&amp;new=1" : "") + (order.empty() ? "" : "&amp;" + Escape(order)),
             page, total);
  return Ok(h.Finish(nav_));
}

std::string Pages::Query(const Target& t) {
  Html h("Query");
  const std::string pat = t.Get("class");
  const uint64_t min_size = t.GetUint("minsize", 0), min_retained = t.GetUint("minretained", 0);
  const size_t limit = std::min<uint64_t>(t.GetUint("limit", 1000), 100000);
  h << "<form method=\"get\" action=\"/query\">class <input name=\"class\" value=\"" << Escape(pat)
    << "\"> size &ge; <input name=\"minsize\" size=\"8\" value=\"" << (min_size ? std::to_string(min_size) : "")
    << "\"> retained &ge; <input name=\"minretained\" size=\"8\" value=\""
    << (min_retained ? std::to_string(min_retained) : "")
    << "\"> <input type=\"submit\" value=\"Find\"></form>"
       "<p class=\"muted\">Syntax: <b>class</b> is a pattern on the class name, <code>*</code> any run of "
       "characters, <code>?</code> one (<code>java.util.*</code>, <code>*Node</code>; empty: every class); "
       "<b>minsize</b> and <b>minretained</b> are byte thresholds. As a URL: "
       "<code>/query?class=*Node&amp;minretained=1000&amp;limit=50</code>.</p>";
  if (t.query.empty()) return h.Finish(nav_);
  std::vector<char> match(g_.classes.size(), 0);
  for (uint32_t c = 0; c < g_.classes.size(); ++c) match[c] = pat.empty() || Glob(pat, g_.classes[c].name);
  size_t total = 0;
  h << "<table id=\"results\"><tr><th>object</th><th>size</th><th>retained</th></tr>\n";
  for (Index i = 0; i < g_.size(); ++i) {
    if (!match[g_.cls[i]] || g_.Size(i) < min_size || g_.retained[i] < min_retained) continue;
    if (total++ < limit) h << "<tr><td>" << ObjLink(i) << "</td>" << Num(g_.Size(i)) << Num(g_.retained[i]) << "</tr>\n";
  }
  h << "</table><p>" << total << " objects match" << (total > limit ? " (the first " + Thousands(limit) + " listed)" : "")
    << ".</p>";
  return h.Finish(nav_);
}

std::string Pages::Diff() {
  Html h("Histogram delta against the baseline");
  const auto rows = heapgraph::Diff(*base_, g_);
  h << "<p>Baseline " << Escape(base_->path) << ": " << base_->size() << " objects, " << base_->total_bytes
    << " bytes; now " << g_.size() << " objects, " << g_.total_bytes
    << " bytes.</p><table id=\"diff\"><tr><th>class</th><th>count</th><th>bytes</th><th>retained</th><th>count "
       "then</th><th>count now</th></tr>\n";
  for (const auto& r : rows) {
    h << "<tr><td>" << ClassLink(r.name) << "</td>" << SignedNum(r.count_delta()) << SignedNum(r.bytes_delta())
      << SignedNum(r.retained_delta()) << Num(r.old_count) << Num(r.new_count) << "</tr>\n";
  }
  h << "</table>";
  return h.Finish(nav_);
}

}  // namespace libdump::heapview
