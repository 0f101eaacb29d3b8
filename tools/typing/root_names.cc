// Root names (docs/TYPING.md). Names nothing yet.
#include "typing.h"

namespace libdump::typing {

uint64_t NameRoots(Context&) { return 0; }

}  // namespace libdump::typing
