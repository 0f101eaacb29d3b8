// The one line every tool prints about libdump's own memory (objects of
// types flagged kTypeOwn, docs/FORMAT.md), so that its figures and the
// program's add up to the dump's.
#pragma once

#include <cstdint>
#include <string>

namespace libdump::tools {

// "libdump's own: N objects, B bytes, excluded; --include-own to show", or
// "..., included (--include-own)"; "" when there is none.
std::string OwnLine(uint64_t objects, uint64_t bytes, bool included);

}  // namespace libdump::tools
