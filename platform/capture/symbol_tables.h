// Function names for pcs, from the ELF symbol tables of the loaded modules.
//
// Tables are loaded (mmap of each module file, or of its separate debug file
// found by build id) before the world stops; Lookup() is then allocation- and
// lock-free, unlike dladdr, which takes the loader's lock. Demangling
// allocates, so callers demangle after the world resumes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "platform/capture/modules.h"

namespace libdump::capture {

struct Symbol {
  std::string_view name;  // mangled, as in the symbol table; empty if unknown
  uint64_t entry = 0;     // absolute address of the function
  const Module* module = nullptr;
};

class Symbolizer {
 public:
  // Loads the tables of every module. `modules` must outlive the symbolizer.
  explicit Symbolizer(const std::vector<Module>& modules);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  Symbol Lookup(uint64_t pc) const;

  size_t symbol_count() const;

 private:
  struct Table;
  const std::vector<Module>& modules_;
  std::vector<std::unique_ptr<Table>> tables_;  // one per module, same order
};

// "foo(int)" for "_Z3fooi"; names that are not mangled come back as they are.
std::string Demangle(std::string_view name);

}  // namespace libdump::capture
