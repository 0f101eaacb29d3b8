// Rule 2 (DWARF): names nothing yet.
#include "dwarf_rule.h"

namespace libdump::typing {

void ApplyDwarfRule(Context&) {}

}  // namespace libdump::typing
