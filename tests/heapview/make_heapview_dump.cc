// Writes the heap dump of heapview's tests (heapview_test_dump.h).
//
//   make_heapview_dump OUT.dump
#include <fstream>
#include <iostream>

#include "heapview_test_dump.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_heapview_dump OUT.dump\n";
    return 2;
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  libdump::heapview::testing::WriteTestDump(out);
  out.close();
  if (!out) {
    std::cerr << argv[1] << ": write failed\n";
    return 1;
  }
  return 0;
}
