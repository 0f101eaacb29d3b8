#include "demangle.h"

#include <cxxabi.h>

#include <cstdlib>

namespace libdump::coretodump {

std::string DemangleTypeName(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (d == nullptr) return mangled;
  std::string out(d);
  std::free(d);
  return out;
}

}  // namespace libdump::coretodump
