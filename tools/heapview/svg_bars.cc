#include "svg_bars.h"

#include <algorithm>
#include <iterator>

#include "html.h"
#include "human_size.h"
#include "page.h"
#include "report.h"
#include "svg.h"

namespace libdump::heapview {
namespace {

constexpr double kWidth = 960, kRow = 22, kLabel = 420, kBar = 360;

// The colours of the rules, untyped (0) grey: the order of NamedBy.
constexpr const char* kRuleColors[] = {"#bbb", "#3a7", "#38c", "#c83", "#a5c", "#dc4"};

std::string RootName(const heapgraph::HeapGraph& g, const heapgraph::Root& r) {
  std::string s = r.kind < g.root_kinds.size() ? g.root_kinds[r.kind] : "root";
  const std::string& name = !r.variable.empty() ? r.variable : r.label;
  return name.empty() ? s : s + " " + name;
}

}  // namespace

std::string HeldBy(const heapgraph::HeapGraph& g, heapgraph::Index i) {
  for (const heapgraph::Root& r : g.roots) {
    if (r.object == i) return RootName(g, r);
  }
  return "several roots";
}

std::string RetainerBars(const heapgraph::HeapGraph& g, size_t top) {
  const size_t shown = std::min(top, g.top_retainers.size());
  const bool rest = g.top_retainers.size() > shown;
  Svg svg(kWidth, kRow * (static_cast<double>(shown + rest) + 1), "The largest retainers by retained bytes",
          "retainers");
  svg.Text(0, 14, "retained by", "start", 12, "#777");
  svg.Text(kLabel, 14, "retained bytes (share of the reachable heap)", "start", 12, "#777");
  uint64_t rest_bytes = 0;
  for (size_t k = shown; k < g.top_retainers.size(); ++k) rest_bytes += g.retained[g.top_retainers[k]];
  // The bars' scale is the largest retainer's: a rest that outweighs it (a
  // heap spread over many roots) would leave the others a pixel wide, so
  // its bar is cut at the full width and its label says how much it is.
  const uint64_t max = shown ? g.retained[g.top_retainers[0]] : rest_bytes;
  const auto bar = [&](size_t row, uint64_t bytes, const std::string& label, const std::string& title,
                       const std::string& href, const std::string& fill) {
    const double y = kRow * static_cast<double>(row + 1);
    const double w = max ? std::max(1.0, kBar * static_cast<double>(bytes) / static_cast<double>(max)) : 1;
    svg.Text(0, y + 15, Fit(label, 64));
    svg.Rect(kLabel, y + 3, std::min(w, kBar), kRow - 6, fill, title, href);
    svg.Text(kLabel + std::min(w, kBar) + 6, y + 15,
             HumanBytes(bytes) + " (" + Pct(bytes, g.reachable_bytes) + ")");
  };
  for (size_t k = 0; k < shown; ++k) {
    const heapgraph::Index o = g.top_retainers[k];
    const std::string label = heapgraph::Label(g, o) + " \u2190 " + HeldBy(g, o);
    bar(k, g.retained[o], label,
        label + ": retains " + Thousands(g.retained[o]) + " bytes, " + Pct(g.retained[o], g.reachable_bytes),
        "/object/" + heapgraph::HexId(g.ids[o]), ColorOf(g.ClassName(o)));
  }
  if (rest) {
    const uint64_t bytes = rest_bytes;
    const std::string label =
        Thousands(g.top_retainers.size() - shown) + " smaller retainers, " + HumanBytes(bytes);
    bar(shown, bytes, label,
        label + " (" + Thousands(bytes) + " bytes)" + (bytes > max ? ", the bar cut at the largest's width" : ""),
        "/dominators?page=0", "#bbb");
  }
  return svg.Finish();
}

std::string TypedBar(const typing::Stats& st) {
  constexpr size_t kRules = std::size(kRuleColors);
  Svg svg(kWidth, 62, "Bytes by the rule that named their class", "typed");
  double x = 0;
  double legend = 0;
  // Named rules first, untyped (0) last: the bar reads typed from the left.
  for (size_t n = 1; n <= kRules; ++n) {
    const size_t r = n % kRules;
    if (r >= std::size(st.bytes) || st.bytes[r] == 0) continue;
    const double w = st.total_bytes ? kWidth * static_cast<double>(st.bytes[r]) / static_cast<double>(st.total_bytes) : 0;
    const std::string name = r == 0 ? "untyped" : typing::RuleName(static_cast<typing::Rule>(r));
    const std::string what = name + ": " + Thousands(st.objects[r]) + " objects, " + Thousands(st.bytes[r]) +
                             " bytes (" + Pct(st.bytes[r], st.total_bytes) + ")";
    svg.Rect(x, 0, w, 24, kRuleColors[r], what);
    x += w;
    svg.Rect(legend, 36, 12, 12, kRuleColors[r], what);
    const std::string key = name + " " + Pct(st.bytes[r], st.total_bytes);
    svg.Text(legend + 16, 47, key);
    legend += 16 + 7.5 * static_cast<double>(key.size()) + 18;
  }
  return svg.Finish();
}

}  // namespace libdump::heapview

namespace libdump::heapview {

std::string SummaryPictures(const heapgraph::HeapGraph& g) {
  return "<h2>What holds the memory</h2>" + RetainerBars(g) +
         "<p><a href=\"/flame\">Retained size by dominator path</a> (flame graph), "
         "<a href=\"/dominators\">every top retainer</a></p><h2>Typed bytes</h2>" +
         TypedBar(typing::Measure(g));
}

}  // namespace libdump::heapview
