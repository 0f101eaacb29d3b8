#include "class_histogram.h"

namespace libdump::readdump {

std::vector<Histogram::Row> ClassRows(const heapgraph::HeapGraph& g) {
  // Counted here, not by Analyze(): the summary's histogram needs no dominators.
  std::vector<uint64_t> count(g.classes.size()), bytes(g.classes.size());
  for (heapgraph::Index i = 0; i < g.size(); ++i) {
    const uint32_t c = g.cls[i];
    ++count[c];
    bytes[c] += g.Size(i);
  }
  std::vector<Histogram::Row> rows;
  for (uint32_t c = 0; c < g.classes.size(); ++c) {
    if (count[c] == 0) continue;
    const heapgraph::ClassInfo& k = g.classes[c];
    const bool dump = k.named_by == heapgraph::NamedBy::kDump;
    rows.push_back({dump ? k.id : 0, k.name, heapgraph::NamedByName(k.named_by), count[c], bytes[c]});
  }
  return rows;
}

}  // namespace libdump::readdump
