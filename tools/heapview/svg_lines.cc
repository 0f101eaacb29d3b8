#include "svg_lines.h"

#include <algorithm>
#include <iterator>

#include "html.h"
#include "human_size.h"
#include "report.h"
#include "svg.h"

namespace libdump::heapview {
namespace {

constexpr double kLeft = 80, kTop = 16, kPlotW = 620, kPlotH = 300, kLegend = 340;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

}  // namespace

std::string GrowthPlot(const heapgraph::Growth& gr, const heapgraph::HeapGraph& newest, size_t classes,
                       size_t points) {
  std::vector<const heapgraph::SeriesClass*> lines;
  for (const heapgraph::SeriesClass& c : gr.classes) {
    if (c.grows && lines.size() < classes) lines.push_back(&c);
  }
  const size_t np = std::min(points, gr.points.size());
  const size_t dumps = gr.files.size();
  if ((lines.empty() && np == 0) || dumps < 2) return "";
  uint64_t max = 1;
  for (const auto* c : lines) max = std::max(max, *std::max_element(c->bytes.begin(), c->bytes.end()));
  for (size_t k = 0; k < np; ++k) {
    max = std::max(max, *std::max_element(gr.points[k].retained.begin(), gr.points[k].retained.end()));
  }
  const double rows = static_cast<double>(lines.size() + np);
  Svg svg(kLeft + kPlotW + kLegend, std::max(kTop + kPlotH + 40, kTop + 20 * rows + 20),
          "Bytes of each growing class across the dumps", "growth");
  const auto X = [&](size_t d) { return kLeft + kPlotW * static_cast<double>(d) / static_cast<double>(dumps - 1); };
  const auto Y = [&](uint64_t b) {
    return kTop + kPlotH - kPlotH * static_cast<double>(b) / static_cast<double>(max);
  };
  // Axes: bytes at 0, half and the top; the dumps by number, oldest first.
  for (uint64_t b : {uint64_t{0}, max / 2, max}) {
    svg.Line(kLeft, Y(b), kLeft + kPlotW, Y(b), "#ddd");
    svg.Text(kLeft - 6, Y(b) + 4, HumanBytes(b), "end", 11, "#555");
  }
  for (size_t d = 0; d < dumps; ++d) {
    svg.Text(X(d), kTop + kPlotH + 16, std::to_string(d + 1), "middle", 11, "#555");
  }
  svg.Text(kLeft + kPlotW / 2, kTop + kPlotH + 32, "dump, oldest first", "middle", 11, "#555");
  double ly = kTop + 12;
  const double lx = kLeft + kPlotW + 20;
  const auto series = [&](const std::vector<uint64_t>& v, const std::string& color, const std::string& name,
                          const std::string& title, bool dashed) {
    std::string pts;
    for (size_t d = 0; d < v.size(); ++d) pts += (d ? " " : "") + Point(X(d), Y(v[d]));
    svg.Polyline(pts, color, title, dashed);
    for (size_t d = 0; d < v.size(); ++d) {
      svg.Circle(X(d), Y(v[d]), dashed && d + 1 == v.size() ? 5 : 2.5, color,
                 name + " in dump " + std::to_string(d + 1) + ": " + Thousands(v[d]) + " bytes");
    }
    svg.Line(lx, ly - 4, lx + 18, ly - 4, color);
    svg.Text(lx + 24, ly, Fit(name, 44), "start", 11);
    ly += 20;
  };
  for (size_t k = 0; k < lines.size(); ++k) {
    const heapgraph::SeriesClass& c = *lines[k];
    std::string title = c.name + ", bytes per dump:";
    for (uint64_t b : c.bytes) title += " " + Thousands(b);
    series(c.bytes, kColors[k % std::size(kColors)], c.name, title, false);
  }
  for (size_t k = 0; k < np; ++k) {
    const heapgraph::AccumulationPoint& p = gr.points[k];
    const std::string name = "point " + heapgraph::Label(newest, p.object);
    std::string title = name + " (accumulation point), retained per dump:";
    for (uint64_t b : p.retained) title += " " + Thousands(b);
    series(p.retained, kColors[(lines.size() + k) % std::size(kColors)], name, title, true);
  }
  return svg.Finish();
}

}  // namespace libdump::heapview
