// C++ names as people read them: abi::__cxa_demangle, or the name itself
// when it is not a mangled one (C functions, a name cut short).
#pragma once

#include <string>

namespace libdump::coretodump {

std::string Demangle(const std::string& mangled);

}  // namespace libdump::coretodump
