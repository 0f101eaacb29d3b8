#include "svg.h"

#include <cmath>
#include <cstdio>

#include "html.h"

namespace libdump::heapview {
namespace {

std::string Title(std::string_view title) {
  return title.empty() ? std::string() : "<title>" + Escape(title) + "</title>";
}

// Wraps `shape` (an element with its own tooltip) in a link when there is one.
std::string Linked(std::string_view href, const std::string& shape) {
  return href.empty() ? shape : "<a href=\"" + Escape(href) + "\">" + shape + "</a>";
}

}  // namespace

Svg::Svg(double width, double height, std::string_view label, std::string_view id) {
  head_ = "<svg xmlns=\"http://www.w3.org/2000/svg\"" +
          (id.empty() ? std::string() : " id=\"" + Escape(id) + "\"") + " width=\"" + Coord(width) +
          "\" height=\"" + Coord(height) + "\" viewBox=\"0 0 " + Coord(width) + " " + Coord(height) +
          "\" role=\"img\" aria-label=\"" + Escape(label) + "\" font-family=\"sans-serif\">";
}

void Svg::Rect(double x, double y, double w, double h, std::string_view fill, std::string_view title,
               std::string_view href) {
  body_ += Linked(href, "<rect x=\"" + Coord(x) + "\" y=\"" + Coord(y) + "\" width=\"" + Coord(w) + "\" height=\"" +
                            Coord(h) + "\" fill=\"" + Escape(fill) + "\">" + Title(title) + "</rect>");
}

void Svg::Text(double x, double y, std::string_view text, std::string_view anchor, unsigned size,
               std::string_view fill) {
  body_ += "<text x=\"" + Coord(x) + "\" y=\"" + Coord(y) + "\" font-size=\"" + std::to_string(size) + "\"" +
           (anchor == "start" ? std::string() : " text-anchor=\"" + Escape(anchor) + "\"") + " fill=\"" +
           Escape(fill) + "\">" + Escape(text) + "</text>";
}

void Svg::Polyline(const std::string& points, std::string_view stroke, std::string_view title, bool dashed) {
  body_ += "<polyline points=\"" + points + "\" fill=\"none\" stroke=\"" + Escape(stroke) + "\" stroke-width=\"2\"" +
           (dashed ? " stroke-dasharray=\"6 3\"" : "") + ">" + Title(title) + "</polyline>";
}

void Svg::Circle(double x, double y, double r, std::string_view fill, std::string_view title) {
  body_ += "<circle cx=\"" + Coord(x) + "\" cy=\"" + Coord(y) + "\" r=\"" + Coord(r) + "\" fill=\"" + Escape(fill) +
           "\">" + Title(title) + "</circle>";
}

void Svg::Line(double x1, double y1, double x2, double y2, std::string_view stroke) {
  body_ += "<line x1=\"" + Coord(x1) + "\" y1=\"" + Coord(y1) + "\" x2=\"" + Coord(x2) + "\" y2=\"" + Coord(y2) +
           "\" stroke=\"" + Escape(stroke) + "\"/>";
}

std::string Svg::Finish() const { return head_ + body_ + "</svg>"; }

std::string Coord(double v) {
  if (!std::isfinite(v)) v = 0;
  char b[32];
  const double r = std::round(v * 10) / 10;
  if (r == std::floor(r)) {
    snprintf(b, sizeof b, "%.0f", r);
  } else {
    snprintf(b, sizeof b, "%.1f", r);
  }
  return b;
}

std::string Point(double x, double y) { return Coord(x) + "," + Coord(y); }

std::string Fit(std::string_view text, size_t max_chars) {
  size_t chars = 0, k = 0, cut = std::string_view::npos;
  for (; k < text.size(); ++k) {
    if ((static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) continue;  // a continuation byte
    if (chars + 1 == max_chars) cut = k;
    if (++chars > max_chars) break;
  }
  if (chars <= max_chars) return std::string(text);
  if (max_chars == 0) return "";
  return std::string(text.substr(0, cut)) + "\u2026";
}

std::string ColorOf(std::string_view name) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  char b[32];
  snprintf(b, sizeof b, "hsl(%u,%u%%,%u%%)", 5 + h % 50, 60 + (h >> 8) % 25, 55 + (h >> 16) % 15);
  return b;
}

}  // namespace libdump::heapview
