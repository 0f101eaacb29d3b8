// heapview's open-and-index work alone (tools/heapgraph: read, build the
// graph, dominators, retained sizes, paths), with the time of each phase and
// the bytes the graph keeps. For bench/heapview/run.sh.
//
//   heapview_index FILE
#include <chrono>
#include <cstdio>
#include <string>

#include "analyze.h"
#include "heap_graph.h"
#include "load.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: heapview_index FILE\n");
    return 2;
  }
  using clock = std::chrono::steady_clock;
  libdump::heapgraph::HeapGraph g;
  auto t = clock::now();
  const auto t0 = t;
  auto lap = [&](const std::string& what) {
    const auto now = clock::now();
    std::printf("  %-22s %7.2f s\n", what.c_str(), std::chrono::duration<double>(now - t).count());
    t = now;
  };
  std::string phase = "objects";
  libdump::heapgraph::Load(argv[1], g, [&](const char* p, uint64_t) {
    if (phase != p) {
      lap("read " + phase);
      phase = p;
    }
  });
  lap("read " + phase);
  phase = "";
  libdump::heapgraph::Analyze(g, [&](const std::string& p) {
    if (!phase.empty()) lap(phase);
    phase = p;
  });
  lap(phase);
  std::printf("  %-22s %7.2f s\n", "total", std::chrono::duration<double>(clock::now() - t0).count());
  std::printf("objects %zu, references %zu, reachable bytes %llu, graph %.1f bytes per object\n", g.size(), g.out.size(),
              static_cast<unsigned long long>(g.reachable_bytes),
              static_cast<double>(g.MemoryBytes()) / static_cast<double>(g.size() ? g.size() : 1));
  if (!g.top_retainers.empty()) {
    const auto i = g.top_retainers[0];
    std::printf("top retainer 0x%llx retains %llu bytes\n", static_cast<unsigned long long>(g.ids[i]),
                static_cast<unsigned long long>(g.retained[i]));
  }
  return 0;
}
