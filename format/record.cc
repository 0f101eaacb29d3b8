#include "libdump/format/record.h"

namespace libdump::format {

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kObject: return "object";
    case Kind::kEof: return "eof";
    case Kind::kStackRoot: return "stackroot";
    case Kind::kDataRoot: return "dataroot";
    case Kind::kOtherRoot: return "otherroot";
    case Kind::kType: return "type";
    case Kind::kGoroutine: return "goroutine";
    case Kind::kFrame: return "frame";
    case Kind::kParams: return "params";
    case Kind::kFinalizer: return "finalizer";
    case Kind::kItab: return "itab";
    case Kind::kTypeFields: return "typefields";
    case Kind::kTypeInfo: return "typeinfo";
    case Kind::kThreadInfo: return "threadinfo";
    case Kind::kMemStats: return "memstats";
    case Kind::kModule: return "module";
    case Kind::kAllocStack: return "allocstack";
  }
  return "unknown";
}

}  // namespace libdump::format
