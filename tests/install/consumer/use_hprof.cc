// libdump::hprof: the writer's tables.
#include <cstring>

#include "libdump/format/hprof_writer.h"

int main() {
  using libdump::format::hprof::Type;
  return libdump::format::hprof::TypeSize(Type::kLong) == 8 &&
                 std::strcmp(libdump::format::hprof::PrimitiveArrayClassName(Type::kByte), "[B") == 0
             ? 0
             : 1;
}
