// SVG drawn on the server, inline in the page: pictures with no script, so
// the pages keep a Content-Security-Policy that allows none. Every text and
// attribute value from the dump goes through Escape here, inside the SVG as
// in the HTML around it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace libdump::heapview {

class Svg {
 public:
  // `label` names the picture for readers that cannot see it (aria-label).
  Svg(double width, double height, std::string_view label, std::string_view id = "");
  // A rectangle with a tooltip, a link when `href` is not empty.
  void Rect(double x, double y, double w, double h, std::string_view fill, std::string_view title,
            std::string_view href = "");
  // Text whose baseline starts at (x, y); `anchor` "start", "middle" or "end".
  void Text(double x, double y, std::string_view text, std::string_view anchor = "start", unsigned size = 12,
            std::string_view fill = "#222");
  // A polyline through "x,y x,y ..." points (from Point()).
  void Polyline(const std::string& points, std::string_view stroke, std::string_view title, bool dashed = false);
  void Circle(double x, double y, double r, std::string_view fill, std::string_view title);
  void Line(double x1, double y1, double x2, double y2, std::string_view stroke);
  // Raw markup the caller has escaped (a <g> of its own).
  void Raw(std::string_view markup) { body_ += markup; }
  std::string Finish() const;

 private:
  std::string head_, body_;
};

// "12.5" with at most one decimal: coordinates a pixel's tenth apart.
std::string Coord(double v);
std::string Point(double x, double y);

// `text` cut to at most `max_chars` characters (UTF-8 code points, never in
// the middle of one), "…" marking the cut.
std::string Fit(std::string_view text, size_t max_chars);

// A fill colour per name, the same name always the same colour (warm hues:
// a flame graph's palette).
std::string ColorOf(std::string_view name);

}  // namespace libdump::heapview
