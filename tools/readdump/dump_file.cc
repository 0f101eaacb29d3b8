#include "dump_file.h"

#include <sys/stat.h>

#include <system_error>

namespace libdump::readdump {

std::shared_ptr<format::Reader> OpenDump(const std::string& path) {
  try {
    return format::Reader::Open(path);
  } catch (const std::system_error& e) {
    throw OpenError("cannot open: " + e.code().message());
  }
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace libdump::readdump
