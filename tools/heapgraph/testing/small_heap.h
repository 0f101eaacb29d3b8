// A heap built by hand for the tests of what is drawn from the dominator
// tree: named classes, typed roots, and the analysis run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyze.h"
#include "heap_graph.h"

namespace libdump::heapgraph::testing {

struct SmallObject {
  uint32_t cls;
  uint64_t size;
  std::vector<Index> refs;
};
struct SmallRoot {
  Index object;
  uint32_t kind;
};

// Object i at 0x1000 + 0x100 i; classes and root kinds by name.
inline HeapGraph SmallHeap(const std::vector<std::string>& classes, const std::vector<std::string>& kinds,
                           const std::vector<SmallObject>& objects, const std::vector<SmallRoot>& roots) {
  HeapGraph g;
  for (const std::string& n : classes) {
    ClassInfo c;
    c.name = n;
    g.classes.push_back(c);
  }
  GraphBuilder b(g);
  for (size_t i = 0; i < objects.size(); ++i) b.AddObject(0x1000 + 0x100 * i, objects[i].cls, objects[i].size, i);
  b.FinishObjects();
  for (Index i = 0; i < objects.size(); ++i) {
    b.BeginEdges(i);
    for (Index to : objects[i].refs) b.Edge(to);
  }
  b.FinishEdges();
  g.root_kinds = kinds;
  for (const SmallRoot& r : roots) {
    Root root;
    root.object = r.object;
    root.kind = r.kind;
    g.roots.push_back(root);
  }
  Analyze(g);
  return g;
}

}  // namespace libdump::heapgraph::testing
