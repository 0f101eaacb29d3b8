// heapview's pages as one class over the graph (and the baseline and series,
// when given), its members defined by kind: routing and the summary
// (site.cc), classes (class_pages.cc), objects and roots (object_pages.cc),
// what retains memory (retention_pages.cc).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "growth.h"
#include "heap_graph.h"
#include "html.h"
#include "page.h"
#include "report.h"
#include "site.h"

namespace libdump::heapview {

using heapgraph::ClassInfo;
using heapgraph::HeapGraph;
using heapgraph::Index;
using heapgraph::kNone;
using heapgraph::kSuperRoot;

class Pages {
 public:
  Pages(const HeapGraph& g, const HeapGraph* base, const heapgraph::Growth* series, const Site& site)
      : g_(g), base_(base), series_(series), site_(site), nav_(base != nullptr, series != nullptr) {}

  Response Route(const Target& t);

 private:
  Response Ok(const std::string& body);
  Response NotFound(const std::string& why);
  template <typename F>
  Response Json(F&& f) {
    return JsonResponse(std::forward<F>(f));
  }
  Index Lookup(const std::string& s);
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
  std::string ObjLink(Index i);
  std::string Pager(const std::string& base, size_t page, size_t total);
  std::string Index_();
  std::string Histogram(const Target& t);
  std::string Classes(const Target& t);
  Index FindClass(const std::string& name);  // kNone: no such class
  std::string StaticValue(const heapgraph::StaticInfo& s);
  Response ClassPage(const Target& t);
  Response Instances(const Target& t);
  std::string RootLine(uint32_t r);
  std::string ObjectPage(Index i, const Target& t);
  std::string PathPage(Index i);
  std::string Reachable(Index i);
  std::string Roots();
  // The rows in the order ?sort=&order= asks, filtered by ?filter=, one page of them; `base` is the page's URL.
  std::string DominatorRows(heapgraph::IndexSpan objs, size_t page, const Target& t, const std::string& base);
  Response Dominators(const Target& t);
  std::string Suspects();
  std::string Leaks();
  std::string Finalizers();
  std::string Threads();
  std::string Query(const Target& t);
  std::string Diff();

  const HeapGraph& g_;
  const HeapGraph* base_;
  const heapgraph::Growth* series_;
  const Site& site_;
  Nav nav_;
};

}  // namespace libdump::heapview
