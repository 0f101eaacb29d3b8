// binutils' reading of an ELF file's build-id: a second opinion on libelf's
// for the tests.
#pragma once

#include <cstdio>
#include <cstring>
#include <string>

namespace libdump::procimage::testing {

inline std::string ReadelfBuildId(const std::string& path) {
  const std::string cmd = "readelf -n '" + path + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string id;
  char line[512];
  while (p != nullptr && std::fgets(line, sizeof line, p) != nullptr) {
    const char* at = std::strstr(line, "Build ID: ");
    if (at != nullptr) {
      id = at + 10;
      while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    }
  }
  if (p != nullptr) pclose(p);
  return id;
}

}  // namespace libdump::procimage::testing
