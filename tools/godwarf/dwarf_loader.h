// Reads a Go program's ELF file with elfutils (libdw for the DWARF, libelf
// for the symbol table) into a GoProgram: every global variable at a fixed
// address with its type, the stack slots of every function's locals, every
// type the runtime has a descriptor for (keyed
// by the descriptor's address, runtime.types + DW_AT_go_runtime_type), and
// the entry address of every function, which tells whether the binary is the
// program that wrote a dump. `go build` compresses the debug sections
// (SHF_COMPRESSED, zlib); libdw decompresses them.
#pragma once

#include <stdexcept>
#include <string>

#include "go_types.h"

namespace libdump::godwarf {

// One line saying what is wrong with the file ("not an ELF file", "has no
// DWARF debug information ...").
class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

GoProgram LoadGoProgram(const std::string& path);

}  // namespace libdump::godwarf
