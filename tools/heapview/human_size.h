// Byte counts as people read them: 1536 -> "1.5 KiB", beside the exact
// figure in the tables and as the labels of the charts.
#pragma once

#include <cstdint>
#include <string>

namespace libdump::heapview {

// "512 B", "1.5 KiB", "41.0 MiB", "2.3 GiB", "1.0 TiB": three significant
// figures from KiB on.
std::string HumanBytes(uint64_t bytes);

// A table cell with the exact bytes and the human size beside them:
// <td class="n">1,572,864 <span class="muted">1.5 MiB</span></td>; the
// exact figure stays the cell's first text.
std::string BytesCell(uint64_t bytes);

}  // namespace libdump::heapview
