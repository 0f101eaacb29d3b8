#include "object_label.h"

#include "html.h"
#include "object_detail.h"
#include "svg.h"

namespace libdump::heapview {

std::string ShortLabel(const heapgraph::HeapGraph& g, heapgraph::Index i) {
  if (const auto e = g.elements.find(i); e != g.elements.end()) {
    return Thousands(e->second) + (e->second == 1 ? " element" : " elements");
  }
  // A buffer of text (a string's characters, an untyped char block): its
  // opening, when it has no pointers to show instead. 4 KiB bounds the read.
  if (g.source != heapgraph::Source::kDump || !g.Out(i).empty() || g.Size(i) > 4096) return "";
  const std::string text = heapgraph::ReadObject(g, i, 0, 0).text;
  return text.empty() ? "" : "\"" + Fit(text, 24) + "\"";
}

}  // namespace libdump::heapview
