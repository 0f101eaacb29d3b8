// Comparison key of a C++ type name: the spellings DWARF and the demangler
// use for the same type differ ("long unsigned int" / "unsigned long",
// "const int" / "int const", "5" / "5ul", spaces).
#pragma once

#include <string>
#include <string_view>

namespace libdump::typing {

std::string NormalizeTypeName(std::string_view name);

}  // namespace libdump::typing
