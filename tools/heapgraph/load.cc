#include "load.h"

#include "analyze.h"
#include "libdump/format/hprof_reader.h"

namespace libdump::heapgraph {

void Load(const std::string& path, HeapGraph& g, const Progress& progress) {
  uint8_t head[32];
  const size_t n = OpenInput(path).ReadHead(head, sizeof head);
  if (format::hprof::LooksLikeHprof({head, n})) {
    LoadHprof(path, g, progress);
  } else {
    LoadDump(path, g, progress);
  }
}

void Open(const std::string& path, HeapGraph& g, const Progress& progress) {
  Load(path, g, progress);
  Analyze(g, progress);
}

}  // namespace libdump::heapgraph
