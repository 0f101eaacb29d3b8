// The allocator's one way out: heap misuse (a double free, a free of an
// interior pointer) and running out of address space end the process here,
// from any of its parts. Async-signal-safe; allocates nothing.
#pragma once

namespace libdump::internal {

// Ends the process with a message naming the address (none when null):
// never returns.
[[noreturn]] void Fatal(const char* what, const void* addr);

}  // namespace libdump::internal
