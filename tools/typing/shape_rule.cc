// Rule 3: libstdc++ layouts (docs/TYPING.md). Names nothing yet.
#include "typing.h"

namespace libdump::typing {

void ApplyShapeRule(Context&) {}

}  // namespace libdump::typing
