// A type_info's name as people read it ("N5shape6CircleE": shape::Circle):
// abi::__cxa_demangle of the type's encoding, or the name itself when it is
// not one. Function symbols go through capture::Demangle, which demangles
// only `_Z` names: a C function `d` is not the type `double`.
#pragma once

#include <string>

namespace libdump::coretodump {

std::string DemangleTypeName(const std::string& mangled);

}  // namespace libdump::coretodump
