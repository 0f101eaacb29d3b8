#include "libdump/format/record.h"

namespace libdump::format {

const char* KindName(Kind k) {
  switch (k) {
#define LIBDUMP_FORMAT_KIND_NAME(name, number, member, text) \
  case Kind::k##name:                                        \
    return text;
    LIBDUMP_FORMAT_RECORD_KINDS(LIBDUMP_FORMAT_KIND_NAME)
#undef LIBDUMP_FORMAT_KIND_NAME
  }
  return "unknown";
}

}  // namespace libdump::format
