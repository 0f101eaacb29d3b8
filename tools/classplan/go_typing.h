// dumptohprof --binary: which objects of a Go runtime's dump hold which Go
// type, found from the program's DWARF (godwarf::GoProgram) by following
// typed pointers from the roots whose type is known (docs/GODUMP.md):
//
// - a data or bss root lies inside a global variable, whose DWARF type says
//   what the pointer word at that offset points to; then a stack root inside
//   a local variable of its frame's function, live at the frame's pc;
// - a typed object's pointer words type what they point to, breadth first:
//   *T a T, a slice's or string's data word an array of its elements, an
//   interface's data word the type its itab (the dump's itab record) or its
//   type word (the runtime's descriptor) names;
// - an object is typed only when a pointer reaches its first byte, the type
//   fits in it, and the type's pointer words are the ones the dump's layout
//   (the garbage collector's bitmap) gives; the first type to reach an object
//   keeps it, a different one is counted as a conflict.
//
// It reads the dump once more, keeping each object's pointer words (8 bytes
// each, and 8 per object) until the types are known; what stays is 4 bytes
// per object.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "dump_catalog.h"
#include "go_types.h"

namespace libdump::dumptohprof {

// The binary does not go with the dump (another program, a libdump dump).
class BinaryMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One Go class: a type alone or as the elements of an array filling the object.
struct GoTyping {
  uint32_t type = godwarf::kNoType;  // resolved (no typedef)
  bool elements = false;
  bool operator==(const GoTyping&) const = default;
};

struct GoTypingStats {
  uint64_t objects = 0, bytes = 0;              // in the dump
  uint64_t typed_objects = 0, typed_bytes = 0;  // given a Go type
  uint64_t roots_in_globals = 0;  // data roots inside a global variable the DWARF describes
  uint64_t roots_in_locals = 0;   // stack roots inside a local variable at its frame's pc
  uint64_t interior = 0;          // typed pointers into an object's middle: not followed
  uint64_t mismatched = 0;        // the type's pointer words or size disagree with the object
  uint64_t conflicts = 0;         // objects reached as two different types: the first kept
};

struct GoTypes {
  std::vector<GoTyping> typings{GoTyping{}};  // [0]: untyped
  std::vector<uint32_t> of_object;             // AddressIndex position -> index in typings
  GoTypingStats stats;
};

// Throws BinaryMismatch when a frame of the dump names a function the binary
// has at another address (or not at all), or the dump is not a Go runtime's;
// format::FormatError for a bad dump.
GoTypes TypeGoObjects(const std::string& dump_path, const DumpCatalog& catalog, const godwarf::GoProgram& program);

}  // namespace libdump::dumptohprof
