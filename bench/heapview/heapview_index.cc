// heapview's open-and-index work alone (tools/heapgraph: read, build the
// graph, dominators, retained sizes, paths), with the time of each phase (and
// of each sub-phase the analysis reports: the dominators' four, ...) and
// the bytes the graph keeps, and the resident peak so far after each phase.
// For bench/heapview/run.sh and bounded.sh.
//
//   heapview_index FILE [--memory SIZE [--dir DIR]]   (no --memory: all in RAM)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "analyze.h"
#include "big_array.h"
#include "heap_graph.h"
#include "load.h"

// VmHWM of /proc/self/status, in MiB.
static double PeakMiB() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  double kb = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "VmHWM:", 6) == 0) kb = std::strtod(line + 6, nullptr);
  }
  std::fclose(f);
  return kb / 1024;
}

int main(int argc, char** argv) {
  uint64_t budget = 0;
  std::string dir;
  if (argc == 4 || argc == 6) {
    if (std::strcmp(argv[2], "--memory") != 0 || !libdump::heapgraph::ParseMemorySize(argv[3], &budget)) argc = 0;
    if (argc == 6 && std::strcmp(argv[4], "--dir") == 0) dir = argv[5];
    else if (argc == 6) argc = 0;
  }
  if (argc != 2 && argc != 4 && argc != 6) {
    std::fprintf(stderr, "usage: heapview_index FILE [--memory SIZE [--dir DIR]]\n");
    return 2;
  }
  libdump::heapgraph::SetMemoryBudget(budget, dir);
  using clock = std::chrono::steady_clock;
  libdump::heapgraph::HeapGraph g;
  auto t = clock::now();
  const auto t0 = t;
  auto lap = [&](const std::string& what) {
    const auto now = clock::now();
    std::printf("  %-30s %7.2f s  peak %7.1f MiB\n", what.c_str(), std::chrono::duration<double>(now - t).count(),
                PeakMiB());
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
  // Every sub-phase the analysis reports (the dominators' four, paths, ...).
  libdump::heapgraph::Analyze(g, libdump::heapgraph::Progress([&](const char* p, uint64_t, uint64_t,
                                                                  libdump::heapgraph::ProgressUnit) {
    if (phase == p) return;
    if (!phase.empty()) lap(phase);
    phase = p;
  }));
  lap(phase);
  std::printf("  %-30s %7.2f s\n", "total", std::chrono::duration<double>(clock::now() - t0).count());
  std::printf("objects %zu, references %zu, reachable bytes %llu, graph %.1f bytes per object\n", g.size(), g.out.size(),
              static_cast<unsigned long long>(g.reachable_bytes),
              static_cast<double>(g.MemoryBytes()) / static_cast<double>(g.size() ? g.size() : 1));
  const auto m = libdump::heapgraph::GetMemoryStats();
  std::printf("budget %llu MiB: %llu arrays went to files, pages dropped %llu times\n",
              static_cast<unsigned long long>(budget >> 20), static_cast<unsigned long long>(m.file_arrays),
              static_cast<unsigned long long>(m.drops));
  if (!g.top_retainers.empty()) {
    const auto i = g.top_retainers[0];
    std::printf("top retainer 0x%llx retains %llu bytes\n", static_cast<unsigned long long>(g.ids[i]),
                static_cast<unsigned long long>(g.retained[i]));
  }
  return 0;
}
