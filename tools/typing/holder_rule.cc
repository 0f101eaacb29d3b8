// Rules 4 and 5 (docs/TYPING.md). Name nothing yet.
#include "typing.h"

namespace libdump::typing {

void ApplyHolderRule(Context&) {}
void ApplySizeRule(Context&) {}

}  // namespace libdump::typing
