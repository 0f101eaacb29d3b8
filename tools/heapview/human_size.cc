#include "human_size.h"

#include <cstdio>

#include "html.h"

namespace libdump::heapview {

std::string HumanBytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  char b[32];
  snprintf(b, sizeof b, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, kUnits[u]);
  return b;
}

std::string BytesCell(uint64_t bytes) {
  std::string s = "<td class=\"n\">" + Thousands(bytes);
  if (bytes >= 1024) s += " <span class=\"muted\">" + HumanBytes(bytes) + "</span>";
  return s + "</td>";
}

}  // namespace libdump::heapview
