#include "site.h"

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
#include "object_label.h"
#include "pages.h"
#include "paths.h"
#include "report.h"
#include "series_page.h"
#include "svg_bars.h"
#include "svg_flame.h"
#include "svg_lines.h"
#include "typing.h"
#include "typing_report.h"

namespace libdump::heapview {

Response Pages::Route(const Target& t) {
  const std::string& p = t.path;
  if (p == "/") return Ok(Index_());
  if (p == "/histogram") return Ok(Histogram(t));
  if (p == "/classes") return Ok(Classes(t));
  if (p == "/class") return ClassPage(t);
  if (p == "/instances") return Instances(t);
  if (p.starts_with("/object/")) return WithObject(p.substr(8), [&](Index i) { return ObjectPage(i, t); });
  if (p.starts_with("/path/")) return WithObject(p.substr(6), [&](Index i) { return PathPage(i); });
  if (p.starts_with("/reachable/")) return WithObject(p.substr(11), [&](Index i) { return Reachable(i); });
  if (p == "/roots") return Ok(Roots());
  if (p == "/dominators") return Dominators(t);
  if (p == "/flame") {
    Html h("Retained size by dominator path");
    h << FlameBody(g_, site_.Flame());
    return Ok(h.Finish(nav_));
  }
  if (p == "/flame.folded") return FoldedResponse(site_.Flame());
  if (p == "/suspects") return Ok(Suspects());
  if (p == "/leaks") return Ok(Leaks());
  if (p == "/finalizers") return Ok(Finalizers());
  if (p == "/threads") return Ok(Threads());
  if (p == "/query") return Ok(Query(t));
  if (p == "/diff" && base_) return Ok(Diff());
  if (p == "/series" && series_) {
    Html h("What grows across " + std::to_string(series_->files.size()) + " dumps");
    h << GrowthPlot(*series_, g_) << SeriesBody(*series_, g_);
    return Ok(h.Finish(nav_));
  }
  if (p == "/api/series" && series_) {
    return Json([&](heapgraph::JsonWriter& j) { heapgraph::WriteGrowthJson(j, *series_, g_, 0); });
  }
  if (p == "/api/histogram") return Json([&](heapgraph::JsonWriter& j) {
      heapgraph::WriteHistogramJson(j, g_, heapgraph::Histogram(g_, heapgraph::ParseSortBy(t.Get("sort"))));
    });
  if (p.starts_with("/api/object/")) {
    return WithObjectJson(p.substr(12), [&](Index i, heapgraph::JsonWriter& j) {
      heapgraph::WriteObjectJson(j, g_, i, heapgraph::ReadObject(g_, i));
    });
  }
  if (p.starts_with("/api/path/")) {
    return WithObjectJson(p.substr(10), [&](Index i, heapgraph::JsonWriter& j) { heapgraph::WritePathJson(j, g_, i); });
  }
  if (p == "/api/dominators") {
    const size_t top = t.GetUint("top", 100);
    if (!t.Get("obj").empty()) {
      return WithObjectJson(t.Get("obj"), [&](Index i, heapgraph::JsonWriter& j) {
        std::vector<Index> kids = heapgraph::Dominated(g_, i);
        if (kids.size() > top) kids.resize(top);
        heapgraph::WriteDominatorsJson(j, g_, kids);
      });
    }
    return Json([&](heapgraph::JsonWriter& j) {
      const size_t n = std::min(top, g_.top_retainers.size());
      heapgraph::WriteDominatorsJson(j, g_, g_.top_retainers.span(0, n));
    });
  }
  if (p == "/api/diff" && base_) {
    return Json([&](heapgraph::JsonWriter& j) { heapgraph::WriteDiffJson(j, heapgraph::Diff(*base_, g_), 0); });
  }
  return NotFound("No page " + p + " here.");
}

Response Pages::Ok(const std::string& body) {
  Response r;
  r.body = body;
  return r;
}

Response Pages::NotFound(const std::string& why) {
  Html h("Not found");
  h << "<p>" << Escape(why) << "</p>";
  Response r;
  r.status = 404;
  r.body = h.Finish(nav_);
  return r;
}

Index Pages::Lookup(const std::string& s) {
  uint64_t id;
  return heapgraph::ParseId(s, &id) ? g_.Find(id) : kNone;
}

// "<a>Node@0x1000</a>" with a String's value and the new-object mark.
std::string Pages::ObjLink(Index i) {
  std::string s = "<a href=\"/object/" + heapgraph::HexId(g_.ids[i]) + "\">" + Escape(heapgraph::Label(g_, i)) + "</a>";
  const std::string v = heapgraph::StringValue(g_, i);
  if (!v.empty()) s += " <span class=\"muted\">\"" + Escape(v) + "\"</span>";
  if (const std::string l = v.empty() ? ShortLabel(g_, i) : ""; !l.empty()) s += " <span class=\"muted\">" + Escape(l) + "</span>";
  if (IsNew(i)) s += " <span class=\"new\">new</span>";
  return s;
}

std::string Pages::Pager(const std::string& base, size_t page, size_t total) {
  const size_t pages = (total + kPage - 1) / kPage;
  if (pages <= 1) return "";
  std::string s = "<p>page " + std::to_string(page + 1) + " of " + std::to_string(pages);
  const char* sep = base.find('?') == std::string::npos ? "?" : "&amp;";
  if (page > 0) s += " <a href=\"" + base + sep + "page=" + std::to_string(page - 1) + "\">previous</a>";
  if (page + 1 < pages) s += " <a href=\"" + base + sep + "page=" + std::to_string(page + 1) + "\">next</a>";
  return s + "</p>";
}

std::string Pages::Index_() {
  Html h("Heap " + g_.path);
  h << SummaryPictures(g_) << "<h2>The dump</h2><table><tr><th>file</th><td>" << Escape(g_.path) << "</td></tr><tr><th>format</th><td>"
    << Escape(g_.format) << "</td></tr><tr><th>objects</th>" << Num(g_.size()) << "</tr><tr><th>bytes</th>"
    << Num(g_.total_bytes) << "</tr><tr><th>reachable objects</th>" << Num(g_.reachable_objects)
    << "</tr><tr><th>reachable bytes</th>" << Num(g_.reachable_bytes) << "</tr><tr><th>classes</th>"
    << Num(g_.classes.size()) << "</tr><tr><th>roots</th>" << Num(g_.roots.size()) << "</tr><tr><th>threads</th>"
    << Num(g_.threads.size()) << "</tr>";
  if (base_) h << "<tr><th>baseline</th><td>" << Escape(base_->path) << "</td></tr>";
  if (const std::string own = heapgraph::OwnLine(g_); !own.empty()) {
    h << "<tr><th>libdump's own</th><td>" << Escape(own) << "</td></tr>";
  }
  {
    // The typed fraction (docs/TYPING.md): rules 1-4 name; a size does not.
    const typing::Stats st = typing::Measure(g_);
    const uint64_t no = st.total_objects - st.objects[0] - st.objects[5];
    const uint64_t nb = st.total_bytes - st.bytes[0] - st.bytes[5];
    h << "<tr><th>typed objects</th><td class=\"n\">" << Thousands(no) << " (" << Pct(no, st.total_objects)
      << ")</td></tr><tr><th>typed bytes</th><td class=\"n\">" << Thousands(nb) << " (" << Pct(nb, st.total_bytes)
      << ")</td></tr>";
    // What a type names (dump, DWARF, shape) apart from what only a holder or a size places.
    const uint64_t by_type = st.bytes[1] + st.bytes[2] + st.bytes[3], by_place = st.bytes[4] + st.bytes[5];
    h << "<tr><th>bytes named by a type</th><td class=\"n\">" << Thousands(by_type) << " (" << Pct(by_type, st.total_bytes)
      << ")</td></tr><tr><th>bytes named by a holder or a size</th><td class=\"n\">" << Thousands(by_place) << " ("
      << Pct(by_place, st.total_bytes) << ")</td></tr>";
    for (unsigned r = 1; r <= 5; ++r) {
      if (st.objects[r] == 0) continue;
      h << "<tr><th>named by " << typing::RuleName(static_cast<typing::Rule>(r)) << "</th><td class=\"n\">"
        << Thousands(st.objects[r]) << " objects, " << Thousands(st.bytes[r]) << " bytes</td></tr>";
    }
  }
  h << "</table><ul><li><a href=\"/histogram\">Heap histogram</a></li>"
       "<li><a href=\"/classes\">All classes (including platform)</a>, "
       "<a href=\"/classes?platform=0\">without platform classes</a></li>"
       "<li><a href=\"/roots\">Root set by kind</a></li><li><a href=\"/dominators\">Dominator tree: top retainers</a></li>"
       "<li><a href=\"/suspects\">Leak suspects</a></li><li><a href=\"/threads\">Threads</a></li>"
       "<li><a href=\"/finalizers\">Finalizer summary</a></li><li><a href=\"/query\">Query</a></li>";
  if (base_) h << "<li><a href=\"/diff\">Histogram delta against the baseline</a></li>";
  if (series_) h << "<li><a href=\"/series\">What grows across the series</a></li>";
  h << "</ul><p class=\"muted\">JSON: <a href=\"/api/histogram\">/api/histogram</a>, "
       "<a href=\"/api/dominators\">/api/dominators</a>, /api/object/ID, /api/path/ID</p>";
  return h.Finish(nav_);
}

const heapgraph::FlameTree& Site::Flame() const {
  std::call_once(flame_once_, [&] { flame_ = std::make_shared<const heapgraph::FlameTree>(heapgraph::BuildFlame(g_)); });
  return *flame_;
}

Response Site::Handle(const std::string& target) const {
  Pages pages(g_, base_, series_, *this);
  try {
    return pages.Route(ParseTarget(target));
  } catch (const std::exception& e) {
    // The file changed or vanished under the server: an error page, never a crash.
    Response r;
    r.status = 500;
    r.content_type = "text/plain; charset=utf-8";
    r.body = std::string("heapview: ") + e.what() + "\n";
    return r;
  }
}

}  // namespace libdump::heapview
