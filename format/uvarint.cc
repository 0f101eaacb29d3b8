#include "libdump/format/uvarint.h"

namespace libdump::format {

const char* UvarintStatusString(UvarintStatus s) {
  switch (s) {
    case UvarintStatus::kOk: return "ok";
    case UvarintStatus::kTruncated: return "truncated uvarint";
    case UvarintStatus::kOverflow: return "uvarint overflows 64 bits";
    case UvarintStatus::kOverlong: return "overlong uvarint encoding";
  }
  return "bad uvarint";
}

}  // namespace libdump::format
