// Polymorphic classes of another process's objects, named from the RTTI the
// compiler left beside each vtable, as libdump's runtime names them
// (libdump/heapdump/vtable_types.cc) but reading through a ProcessImage: the
// type_info's own vtable cannot be compared with this process's, so it is
// recognised by the RTTI of the ABI's type_info classes themselves
// (__cxxabiv1::__class_type_info and its single and multiple inheritance
// kinds), which sits beside it like any other class's.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "process_image.h"

namespace libdump::coretodump {

struct PolymorphicClass {
  uint64_t vtable = 0;  // the object's first word: the type id in the dump
  std::string name;     // demangled
  uint64_t size = 0;    // smallest object seen with it
};

class VtableClasses {
 public:
  explicit VtableClasses(const procimage::ProcessImage& image) : image_(image) {}

  // Notes an object whose first word is `first_word`; true (and the class
  // counted) when that word is a vtable pointer with readable RTTI.
  bool Note(uint64_t first_word, uint64_t object_size);
  // In the order first seen.
  const std::vector<PolymorphicClass>& classes() const { return classes_; }

 private:
  // The demangled class name of the vtable at vptr, empty when it is none.
  std::string ClassOf(uint64_t vptr);
  bool IsTypeInfoVtable(uint64_t ti_vptr);
  // A NUL-terminated string of at most 1 KiB, empty if unreadable.
  std::string ReadString(uint64_t addr) const;
  bool InModuleReadOnly(uint64_t addr, uint64_t n) const;

  const procimage::ProcessImage& image_;
  std::vector<PolymorphicClass> classes_;
  // vptr -> index in classes_ + 1, or 0 for a word that is no vtable pointer.
  std::unordered_map<uint64_t, uint32_t> seen_;
  std::unordered_map<uint64_t, bool> ti_vtables_;
};

}  // namespace libdump::coretodump
