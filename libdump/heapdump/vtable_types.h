// Recognises polymorphic C++ objects by their first word: a pointer into a
// vtable whose RTTI slot names a std::type_info of one of the Itanium ABI's
// class kinds. All checks read only memory the memory map says is readable and
// allocate nothing, so they run while the world is stopped.
#pragma once

#include <cstdint>
#include <string>

#include "platform/capture/memory_map.h"

namespace libdump::heapdump {

class VtableRecognizer {
 public:
  // Learns the addresses of the ABI's type_info vtables (the ones every
  // class's type_info object points to). Call before stopping the world.
  VtableRecognizer();

  // If the word at the start of an object is a vtable pointer, returns the
  // address of the class's type_info object; else 0.
  uint64_t TypeInfoOf(uint64_t first_word, const capture::MemoryMap& memory) const;

  // The demangled class name of a type_info object TypeInfoOf() returned.
  // Allocates: call after the world resumes.
  static std::string ClassName(uint64_t type_info);

 private:
  uint64_t class_ti_vtable_ = 0;      // vtable of __cxxabiv1::__class_type_info
  uint64_t si_class_ti_vtable_ = 0;   // ... __si_class_type_info (single base)
  uint64_t vmi_class_ti_vtable_ = 0;  // ... __vmi_class_type_info (multiple/virtual bases)
};

}  // namespace libdump::heapdump
