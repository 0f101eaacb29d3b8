#include "site.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <sstream>

#include "analyze.h"
#include "histogram.h"
#include "html.h"
#include "libdump/format/reader.h"
#include "object_detail.h"
#include "paths.h"
#include "report.h"
#include "typing.h"
#include "typing_report.h"

namespace libdump::heapview {
namespace {

using heapgraph::ClassInfo;
using heapgraph::HeapGraph;
using heapgraph::Index;
using heapgraph::kNone;
using heapgraph::kSuperRoot;

constexpr size_t kPage = 100;  // rows per page of long lists

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:1em 2em;color:#222}"
    "nav a{margin-right:1em}table{border-collapse:collapse;margin:.5em 0}"
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}td.n{text-align:right}"
    "th{background:#eee}.new{color:#b00;font-weight:bold}pre{background:#f6f6f6;padding:4px}"
    ".muted{color:#777}";

class Html {
 public:
  explicit Html(std::string title) : title_(std::move(title)) {}
  Html& operator<<(const std::string& s) {
    body_ += s;
    return *this;
  }
  Html& operator<<(const char* s) {
    body_ += s;
    return *this;
  }
  Html& operator<<(uint64_t v) {
    body_ += Thousands(v);
    return *this;
  }
  std::string Finish(bool has_baseline) const {
    std::string out =
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + Escape(title_) +
        " - heapview</title><style>" + kStyle +
        "</style></head><body><nav><a href=\"/\">Summary</a><a href=\"/histogram\">Histogram</a>"
        "<a href=\"/classes\">Classes</a><a href=\"/roots\">Roots</a><a href=\"/dominators\">Dominators</a>"
        "<a href=\"/suspects\">Leak suspects</a><a href=\"/leaks\">Leaks</a><a href=\"/threads\">Threads</a>"
        "<a href=\"/finalizers\">Finalizers</a><a href=\"/query\">Query</a>";
    if (has_baseline) out += "<a href=\"/diff\">Diff with baseline</a>";
    out += "</nav>\n<h1>" + Escape(title_) + "</h1>\n" + body_ + "\n</body></html>\n";
    return out;
  }

 private:
  std::string title_;
  std::string body_;
};

std::string Pct(uint64_t part, uint64_t whole) {
  char b[16];
  snprintf(b, sizeof b, "%.1f%%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return b;
}

std::string Num(uint64_t v) { return "<td class=\"n\">" + Thousands(v) + "</td>"; }

std::string SignedNum(int64_t v) {
  return std::string("<td class=\"n\">") + (v > 0 ? "+" : v < 0 ? "-" : "") +
         Thousands(static_cast<uint64_t>(v < 0 ? -v : v)) + "</td>";
}

std::string ClassLink(const std::string& name) {
  return "<a href=\"/class?name=" + UrlEncode(name) + "\">" + Escape(name) + "</a>";
}

// Glob match: '*' any run, '?' one character.
bool Glob(std::string_view pat, std::string_view s) {
  size_t p = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (p < pat.size() && (pat[p] == '?' || pat[p] == s[i])) {
      ++p;
      ++i;
    } else if (p < pat.size() && pat[p] == '*') {
      star = p++;
      mark = i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

class Pages {
 public:
  Pages(const HeapGraph& g, const HeapGraph* base) : g_(g), base_(base) {}

  Response Route(const Target& t) {
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
    if (p == "/suspects") return Ok(Suspects());
    if (p == "/leaks") return Ok(Leaks());
    if (p == "/finalizers") return Ok(Finalizers());
    if (p == "/threads") return Ok(Threads());
    if (p == "/query") return Ok(Query(t));
    if (p == "/diff" && base_) return Ok(Diff());
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
        heapgraph::WriteDominatorsJson(j, g_, {g_.top_retainers.data(), n});
      });
    }
    if (p == "/api/diff" && base_) {
      return Json([&](heapgraph::JsonWriter& j) { heapgraph::WriteDiffJson(j, heapgraph::Diff(*base_, g_), 0); });
    }
    return NotFound("No page " + p + " here.");
  }

 private:
  Response Ok(const std::string& body) {
    Response r;
    r.body = body;
    return r;
  }
  Response NotFound(const std::string& why) {
    Html h("Not found");
    h << "<p>" << Escape(why) << "</p>";
    Response r;
    r.status = 404;
    r.body = h.Finish(base_ != nullptr);
    return r;
  }
  template <typename F>
  Response Json(F&& f) {
    std::ostringstream out;
    heapgraph::JsonWriter j(out);
    f(j);
    j.Finish();
    Response r;
    r.content_type = "application/json";
    r.body = out.str();
    return r;
  }
  Index Lookup(const std::string& s) {
    uint64_t id;
    return heapgraph::ParseId(s, &id) ? g_.Find(id) : kNone;
  }
  template <typename F>
  Response WithObject(const std::string& s, F&& f) {
    const Index i = Lookup(s);
    if (i == kNone) return NotFound("No object " + s + " in this heap.");
    return Ok(f(i));
  }
  template <typename F>
  Response WithObjectJson(const std::string& s, F&& f) {
    const Index i = Lookup(s);
    if (i == kNone) {
      Response r;
      r.status = 404;
      r.content_type = "application/json";
      r.body = "{\"error\": \"no such object\"}\n";
      return r;
    }
    return Json([&](heapgraph::JsonWriter& j) { f(i, j); });
  }

  bool IsNew(Index i) const { return base_ && heapgraph::IsNew(*base_, g_, i); }

  // "<a>Node@0x1000</a>" with a String's value and the new-object mark.
  std::string ObjLink(Index i) {
    std::string s = "<a href=\"/object/" + heapgraph::HexId(g_.ids[i]) + "\">" + Escape(heapgraph::Label(g_, i)) + "</a>";
    const std::string v = heapgraph::StringValue(g_, i);
    if (!v.empty()) s += " <span class=\"muted\">\"" + Escape(v) + "\"</span>";
    if (IsNew(i)) s += " <span class=\"new\">new</span>";
    return s;
  }

  std::string Pager(const std::string& base, size_t page, size_t total) {
    const size_t pages = (total + kPage - 1) / kPage;
    if (pages <= 1) return "";
    std::string s = "<p>page " + std::to_string(page + 1) + " of " + std::to_string(pages);
    const char* sep = base.find('?') == std::string::npos ? "?" : "&amp;";
    if (page > 0) s += " <a href=\"" + base + sep + "page=" + std::to_string(page - 1) + "\">previous</a>";
    if (page + 1 < pages) s += " <a href=\"" + base + sep + "page=" + std::to_string(page + 1) + "\">next</a>";
    return s + "</p>";
  }

  std::string Index_() {
    Html h("Heap " + g_.path);
    h << "<table><tr><th>file</th><td>" << Escape(g_.path) << "</td></tr><tr><th>format</th><td>"
      << Escape(g_.format) << "</td></tr><tr><th>objects</th>" << Num(g_.size()) << "</tr><tr><th>bytes</th>"
      << Num(g_.total_bytes) << "</tr><tr><th>reachable objects</th>" << Num(g_.reachable_objects)
      << "</tr><tr><th>reachable bytes</th>" << Num(g_.reachable_bytes) << "</tr><tr><th>classes</th>"
      << Num(g_.classes.size()) << "</tr><tr><th>roots</th>" << Num(g_.roots.size()) << "</tr><tr><th>threads</th>"
      << Num(g_.threads.size()) << "</tr>";
    if (base_) h << "<tr><th>baseline</th><td>" << Escape(base_->path) << "</td></tr>";
    {
      // The typed fraction (docs/TYPING.md): rules 1-4 name; a size does not.
      const typing::Stats st = typing::Measure(g_);
      const uint64_t no = st.total_objects - st.objects[0] - st.objects[5];
      const uint64_t nb = st.total_bytes - st.bytes[0] - st.bytes[5];
      h << "<tr><th>typed objects</th><td class=\"n\">" << Thousands(no) << " (" << Pct(no, st.total_objects)
        << ")</td></tr><tr><th>typed bytes</th><td class=\"n\">" << Thousands(nb) << " (" << Pct(nb, st.total_bytes)
        << ")</td></tr>";
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
    h << "</ul><p class=\"muted\">JSON: <a href=\"/api/histogram\">/api/histogram</a>, "
         "<a href=\"/api/dominators\">/api/dominators</a>, /api/object/ID, /api/path/ID</p>";
    return h.Finish(base_ != nullptr);
  }

  std::string Histogram(const Target& t) {
    const std::string sort = t.Get("sort", "bytes");
    const bool platform = t.Get("platform", "1") != "0";
    const auto rows = heapgraph::Histogram(g_, heapgraph::ParseSortBy(sort), platform);
    Html h("Heap histogram");
    const std::string pf = platform ? "" : "&amp;platform=0";
    h << "<p>" << g_.size() << " objects, " << g_.total_bytes << " bytes. Sorted by " << Escape(sort) << ". "
      << (platform ? "<a href=\"/histogram?platform=0\">Hide platform classes</a>"
                   : "<a href=\"/histogram\">Show platform classes</a>")
      << "</p><table id=\"histogram\"><tr><th><a href=\"/histogram?sort=name" << pf
      << "\">Class</a></th><th><a href=\"/histogram?sort=count" << pf
      << "\">Instances</a></th><th><a href=\"/histogram?sort=bytes" << pf
      << "\">Bytes</a></th><th><a href=\"/histogram?sort=retained" << pf << "\">Retained</a></th></tr>\n";
    for (uint32_t c : rows) {
      const ClassInfo& k = g_.classes[c];
      h << "<tr><td>" << ClassLink(k.name) << "</td><td class=\"n\"><a href=\"/instances?name=" << UrlEncode(k.name)
        << "\">" << Thousands(k.count) << "</a></td>" << Num(k.bytes) << Num(k.retained) << "</tr>\n";
    }
    h << "</table>";
    return h.Finish(base_ != nullptr);
  }

  std::string Classes(const Target& t) {
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
    return h.Finish(base_ != nullptr);
  }

  uint32_t FindClass(const std::string& name) {
    for (uint32_t c = 0; c < g_.classes.size(); ++c) {
      if (g_.classes[c].name == name) return c;
    }
    return kNone;
  }

  std::string StaticValue(const heapgraph::StaticInfo& s) {
    if (s.type != 2) return Escape(std::to_string(s.value));
    if (s.value == 0) return "null";
    const Index i = g_.Find(s.value);
    return i == kNone ? Escape(heapgraph::HexId(s.value)) : ObjLink(i);
  }

  Response ClassPage(const Target& t) {
    const std::string name = t.Get("name");
    const uint32_t c = FindClass(name);
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
    return Ok(h.Finish(base_ != nullptr));
  }

  Response Instances(const Target& t) {
    const std::string name = t.Get("name");
    const uint32_t c = FindClass(name);
    if (c == kNone) return NotFound("No class " + name + " in this heap.");
    const bool only_new = t.Get("new") == "1" && base_;
    const size_t page = t.GetUint("page", 0);
    Html h("Instances of " + name);
    h << "<table><tr><th>object</th><th>size</th><th>retained</th></tr>\n";
    size_t total = 0;
    for (Index i = 0; i < g_.size(); ++i) {
      if (g_.cls[i] != c || (only_new && !IsNew(i))) continue;
      if (total >= page * kPage && total < (page + 1) * kPage) {
        h << "<tr><td>" << ObjLink(i) << "</td>" << Num(g_.Size(i)) << Num(g_.retained[i]) << "</tr>\n";
      }
      ++total;
    }
    h << "</table><p>" << total << " instances.";
    if (base_ && !only_new) h << " <a href=\"/instances?name=" << UrlEncode(name) << "&amp;new=1\">Only new ones</a>";
    h << "</p>" << Pager("/instances?name=" + UrlEncode(name) + (only_new ? "&amp;new=1" : ""), page, total);
    return Ok(h.Finish(base_ != nullptr));
  }

  std::string RootLine(uint32_t r) {
    const heapgraph::Root& root = g_.roots[r];
    std::string s = Escape(g_.root_kinds[root.kind]);
    if (!root.label.empty()) s += " " + Escape(root.label);
    if (root.thread != kNone) s += " (thread " + Escape(g_.threads[root.thread].name) + ")";
    return s;
  }

  std::string ObjectPage(Index i, const Target& t) {
    Html h(heapgraph::Label(g_, i));
    const heapgraph::ObjectDetail d = heapgraph::ReadObject(g_, i, t.GetUint("epage", 0) * 1000, 1000);
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
      const size_t ep = t.GetUint("epage", 0);
      const std::string base = "/object/" + heapgraph::HexId(g_.ids[i]) + "?epage=";
      if (ep > 0) h << "<a href=\"" << base << std::to_string(ep - 1) << "\">previous elements</a> ";
      if ((ep + 1) * 1000 < d.elements) h << "<a href=\"" << base << std::to_string(ep + 1) << "\">next elements</a>";
    }
    const auto out = g_.Out(i);
    h << "<h2>References from this object</h2><p>" << out.size() << "</p><ul id=\"refs-from\">";
    for (size_t k = 0; k < out.size() && k < kPage; ++k) h << "<li>" << ObjLink(out[k]) << "</li>";
    h << "</ul>";
    const size_t rpage = t.GetUint("page", 0);
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
    return h.Finish(base_ != nullptr);
  }

  std::string PathPage(Index i) {
    Html h("Path from the roots to " + heapgraph::Label(g_, i));
    const auto path = heapgraph::PathFromRoot(g_, i);
    if (path.empty()) {
      h << "<p>Not reachable from a root through strong references (references of weak, soft, final and phantom "
           "references' referent fields do not count).</p>";
      return h.Finish(base_ != nullptr);
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
    return h.Finish(base_ != nullptr);
  }

  std::string Reachable(Index i) {
    Html h("Objects reachable from " + heapgraph::Label(g_, i));
    uint64_t bytes = 0;
    size_t total = 0;
    const auto objs = heapgraph::ReachableFrom(g_, i, 1000, &bytes, &total);
    h << "<p>" << total << " objects, " << bytes << " bytes" << (total > objs.size() ? " (the first 1,000 listed)" : "")
      << ".</p><ul>";
    for (Index o : objs) h << "<li>" << ObjLink(o) << " " << g_.Size(o) << "</li>";
    h << "</ul>";
    return h.Finish(base_ != nullptr);
  }

  std::string Roots() {
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
    return h.Finish(base_ != nullptr);
  }

  std::string DominatorRows(const std::vector<Index>& objs, size_t page) {
    std::string s = "<table id=\"dominators\"><tr><th>retained</th><th>%</th><th>size</th><th>object</th><th></th></tr>\n";
    for (size_t k = page * kPage; k < objs.size() && k < (page + 1) * kPage; ++k) {
      const Index o = objs[k];
      s += "<tr>" + Num(g_.retained[o]) + "<td class=\"n\">" + Pct(g_.retained[o], g_.reachable_bytes) + "</td>" +
           Num(g_.Size(o)) + "<td>" + ObjLink(o) + "</td><td><a href=\"/dominators?obj=" + heapgraph::HexId(g_.ids[o]) +
           "\">dominated</a></td></tr>\n";
    }
    return s + "</table>";
  }

  Response Dominators(const Target& t) {
    const size_t page = t.GetUint("page", 0);
    if (t.Get("obj").empty()) {
      Html h("Dominator tree: top retainers");
      h << "<p>Objects only the roots dominate, by retained size; " << g_.reachable_bytes
        << " bytes are reachable.</p>"
        << DominatorRows(g_.top_retainers, page) << Pager("/dominators", page, g_.top_retainers.size());
      return Ok(h.Finish(base_ != nullptr));
    }
    const Index i = Lookup(t.Get("obj"));
    if (i == kNone) return NotFound("No object " + t.Get("obj") + " in this heap.");
    const auto kids = heapgraph::Dominated(g_, i);
    Html h("Dominated by " + heapgraph::Label(g_, i));
    h << "<p>" << ObjLink(i) << " retains " << g_.retained[i] << " bytes; it immediately dominates " << kids.size()
      << " objects.</p>"
      << DominatorRows(kids, page) << Pager("/dominators?obj=" + heapgraph::HexId(g_.ids[i]), page, kids.size());
    return Ok(h.Finish(base_ != nullptr));
  }

  std::string Suspects() {
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
    return h.Finish(base_ != nullptr);
  }

  std::string Leaks() {
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
    return h.Finish(base_ != nullptr);
  }

  std::string Finalizers() {
    Html h("Finalizer summary");
    std::map<std::string, uint64_t> by_class;
    for (Index o : g_.finalizable) ++by_class[g_.ClassName(o)];
    h << "<p>" << g_.finalizable.size() << " objects wait for finalization.</p><table><tr><th>class</th><th>count</th></tr>";
    for (const auto& [name, n] : by_class) h << "<tr><td>" << ClassLink(name) << "</td>" << Num(n) << "</tr>";
    h << "</table><ul>";
    for (size_t k = 0; k < g_.finalizable.size() && k < 1000; ++k) h << "<li>" << ObjLink(g_.finalizable[k]) << "</li>";
    h << "</ul>";
    return h.Finish(base_ != nullptr);
  }

  std::string Threads() {
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
    return h.Finish(base_ != nullptr);
  }

  std::string Query(const Target& t) {
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
    if (t.query.empty()) return h.Finish(base_ != nullptr);
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
    return h.Finish(base_ != nullptr);
  }

  std::string Diff() {
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
    return h.Finish(base_ != nullptr);
  }

  const HeapGraph& g_;
  const HeapGraph* base_;
};

}  // namespace

Response Site::Handle(const std::string& target) const {
  Pages pages(g_, base_);
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
