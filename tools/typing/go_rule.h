// Go dumps typed by --binary PROG's DWARF (go_rule.cc).
#pragma once

#include "typing.h"

namespace libdump::typing {

// Names a Go runtime's dump's objects by the Go types of the first --binary;
// throws std::runtime_error "PROG: reason" when PROG is no Go program or did
// not write the dump.
void ApplyGoRule(Context& ctx);

}  // namespace libdump::typing
