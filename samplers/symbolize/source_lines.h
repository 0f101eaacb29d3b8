// Source file and line of code addresses, with the frames inlined there,
// from the DWARF debug information of the process's modules (elfutils libdw:
// its own ELF files or their separate debug files).
//
// Reads files and allocates: use it when a profile is written, never while
// sampling.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <elfutils/libdwfl.h>

namespace libdump::samplers {

struct SourceFrame {
  std::string function;  // DWARF name of an inlined function; "" for the outermost frame
  std::string file;      // "" when the address has no line information
  int64_t line = 0;
};

class SourceLines {
 public:
  SourceLines();
  ~SourceLines();
  SourceLines(const SourceLines&) = delete;
  SourceLines& operator=(const SourceLines&) = delete;

  // Frames at code address addr (inside an instruction: a return address
  // minus one), innermost inlined frame first and the function that holds
  // the code last. Empty if there is no debug information for addr.
  std::vector<SourceFrame> Lookup(uintptr_t addr);

 private:
  Dwfl* dwfl_ = nullptr;
};

}  // namespace libdump::samplers
