#include "svg_flame.h"

#include <algorithm>
#include <sstream>

#include "html.h"
#include "human_size.h"
#include "page.h"
#include "report.h"
#include "svg.h"

namespace libdump::heapview {
namespace {

constexpr double kFrame = 18;

class Icicle {
 public:
  Icicle(const heapgraph::FlameTree& t, const heapgraph::HeapGraph& g, double width)
      : t_(t), g_(g), width_(width), total_(t.frames[0].bytes) {}

  // Draws frame f at x and its children below; returns the deepest row drawn.
  void Draw(Svg& svg, uint32_t f, double x) {
    const heapgraph::FlameFrame& fr = t_.frames[f];
    Frame(svg, fr.depth, x, Width(fr.bytes), fr.name, Tooltip(fr), Href(f), ColorOf(fr.name));
    double cx = x;
    uint64_t small = 0, small_n = 0;
    for (uint32_t c : fr.children) {
      const double w = Width(t_.frames[c].bytes);
      if (w >= 1) {
        Draw(svg, c, cx);
        cx += w;
      } else {
        small += t_.frames[c].bytes;
        ++small_n;
      }
    }
    if (small_n > 0 && Width(small) >= 1) {
      const std::string name = "(" + Thousands(small_n) + " smaller)";
      Frame(svg, fr.depth + 1, cx, Width(small), name,
            name + ": " + Thousands(small) + " bytes (" + Pct(small, total_) + ")", "", "#ccc");
    }
  }

  uint32_t Depth(uint32_t f) const {
    uint32_t d = t_.frames[f].depth;
    for (uint32_t c : t_.frames[f].children) {
      if (Width(t_.frames[c].bytes) >= 1) d = std::max(d, Depth(c));
    }
    return d + 1;  // a "(smaller)" row may sit below the deepest frame
  }

 private:
  double Width(uint64_t bytes) const {
    return total_ ? width_ * static_cast<double>(bytes) / static_cast<double>(total_) : 0;
  }

  void Frame(Svg& svg, uint32_t depth, double x, double w, const std::string& name, const std::string& title,
             const std::string& href, const std::string& fill) {
    const double y = kFrame * depth;
    svg.Rect(x, y, std::max(w - 0.5, 0.5), kFrame - 1, fill, title, href);
    // About 7 pixels a character at 11 px.
    if (w >= 24) svg.Text(x + 3, y + 13, Fit(name, static_cast<size_t>((w - 6) / 6.5)), "start", 11);
  }

  std::string Tooltip(const heapgraph::FlameFrame& fr) const {
    std::string s = fr.name + ": " + Thousands(fr.bytes) + " bytes (" + Pct(fr.bytes, total_) + ", " +
                    HumanBytes(fr.bytes) + ") in " + Thousands(fr.objects) + (fr.objects == 1 ? " object" : " objects");
    if (fr.largest != heapgraph::kNone && fr.objects > 1) s += "; the largest " + heapgraph::Label(g_, fr.largest);
    return s;
  }

  std::string Href(uint32_t f) const {
    const heapgraph::FlameFrame& fr = t_.frames[f];
    if (f == 0) return "/dominators";
    if (fr.depth == 1) return "/roots";
    if (fr.objects == 1) return "/object/" + heapgraph::HexId(g_.ids[fr.largest]);
    return "/class?name=" + UrlEncode(fr.name);
  }

  const heapgraph::FlameTree& t_;
  const heapgraph::HeapGraph& g_;
  const double width_;
  const uint64_t total_;
};

}  // namespace

std::string FlameSvg(const heapgraph::FlameTree& t, const heapgraph::HeapGraph& g, double width) {
  Icicle icicle(t, g, width);
  Svg svg(width, kFrame * icicle.Depth(0), "Retained bytes by dominator path", "flame");
  icicle.Draw(svg, 0, 0);
  return svg.Finish();
}

std::string FlameBody(const heapgraph::HeapGraph& g, const heapgraph::FlameTree& t) {
  return "<p>Each frame is as wide as the bytes it retains: everything reachable (" + Thousands(t.frames[0].bytes) +
         " bytes) on top, then the kind of root that holds the memory, then the classes along the dominator tree "
         "(an object of its dominator's class stays in its frame). Frames under a pixel's share (" +
         Thousands(t.frames[0].bytes / static_cast<uint64_t>(kFlameWidth)) +
         " bytes) are drawn together. A frame links to its object, or to its class when several objects enter "
         "it.</p>" +
         FlameSvg(t, g) + "<p class=\"muted\">" + Thousands(t.frames.size()) +
         " frames. The same as folded stacks (flamegraph.pl, speedscope): <code>readdump --dominators --flame -o "
         "heap.folded FILE</code>, or <a href=\"/flame.folded\">/flame.folded</a>.</p>";
}

Response FoldedResponse(const heapgraph::FlameTree& t) {
  std::ostringstream out;
  heapgraph::WriteFolded(out, t);
  Response r;
  r.content_type = "text/plain; charset=utf-8";
  r.body = out.str();
  return r;
}

}  // namespace libdump::heapview
