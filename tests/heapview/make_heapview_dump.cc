// Writes the heap dump of heapview's tests (heapview_test_dump.h), or with
// --chain N a chain of N objects, or with --forest N N objects in lists of
// 1 to 97, each held by its own root.
//
//   make_heapview_dump OUT.dump [--chain N | --forest N]
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

#include "heapview_test_dump.h"

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 4 && (std::strcmp(argv[2], "--chain") == 0 || std::strcmp(argv[2], "--forest") == 0))) {
    std::cerr << "usage: make_heapview_dump OUT.dump [--chain N | --forest N]\n";
    return 2;
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  if (argc == 4 && std::strcmp(argv[2], "--forest") == 0) {
    libdump::heapview::testing::WriteForestDump(out, std::strtoull(argv[3], nullptr, 10));
  } else if (argc == 4) {
    libdump::heapview::testing::WriteChainDump(out, std::strtoull(argv[3], nullptr, 10));
  } else {
    libdump::heapview::testing::WriteTestDump(out);
  }
  out.close();
  if (!out) {
    std::cerr << argv[1] << ": write failed\n";
    return 1;
  }
  return 0;
}
