// heapview --series: the body of the /series page, what grows across the
// dumps of a series (tools/heapgraph/growth.h), growing classes first.
#pragma once

#include <string>

#include "growth.h"

namespace libdump::heapview {

std::string SeriesBody(const heapgraph::Growth& gr, const heapgraph::HeapGraph& newest);

}  // namespace libdump::heapview
