// libdump::pprof: gzip round trip (links zlib through the package).
#include "libdump/format/pprof_profile.h"

int main() {
  const std::string data = "profile bytes";
  return libdump::pprof::Gunzip(libdump::pprof::Gzip(data)) == data ? 0 : 1;
}
