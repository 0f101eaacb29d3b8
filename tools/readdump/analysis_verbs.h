// readdump --dominators, --path-to-root, --diff, --growth: the analyses of
// tools/heapgraph (the same code heapview serves), on a dump or an hprof.
#pragma once

#include "options.h"

namespace libdump::readdump {

// Returns the exit status (0 ok, 1 no such object or a bad OLD, 3 grew more
// than --max-growth); throws what loading FILE throws.
int RunAnalysis(const Options& o);

}  // namespace libdump::readdump
