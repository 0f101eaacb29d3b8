// Graph H of testdata/README.md (tests/heapview/heapview_test_dump.h),
// written to a temporary file and opened (no typing pass: F stays
// "(untyped)"), for the tests of the pictures and labels.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "heapview_test_dump.h"
#include "load.h"

namespace libdump::heapview::testing {

// The file stays while the graph lives: object pages and labels read it again.
struct GraphH {
  GraphH() : path(::testing::TempDir() + "graph_h." + std::to_string(::getpid()) + ".dump") {
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      WriteTestDump(out);
    }
    heapgraph::Open(path, g);
  }
  ~GraphH() { unlink(path.c_str()); }
  GraphH(const GraphH&) = delete;
  GraphH& operator=(const GraphH&) = delete;
  std::string path;
  heapgraph::HeapGraph g;
};

}  // namespace libdump::heapview::testing
