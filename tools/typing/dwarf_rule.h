// Rule 2: the DWARF of the modules the dump names (typing.h says what a rule
// receives and may do).
#pragma once

#include "typing.h"

namespace libdump::typing {

void ApplyDwarfRule(Context& ctx);

}  // namespace libdump::typing
