// Function names for the flight recorder's crash snapshot, looked up inside
// the crash handler.
//
// A fault handler may interrupt malloc, the loader or the recorder itself,
// so it can neither read ELF files, nor demangle (which allocates), nor take
// dl_iterate_phdr's lock. Everything is done ahead instead: Prepare() reads
// the symbol tables of every loaded module (elfutils libdwfl: .symtab, else
// the separate debug file found by build id or debuglink, else .dynsym and
// .gnu_debugdata), demangles each function's name, and lays the result out
// in mapped memory as sorted arrays. Lookup() is then two binary searches
// over memory nothing writes to again: no allocation, no lock, no system
// call.
//
// The tables are published as one immutable snapshot through an atomic
// pointer. A Prepare() after a dlopen or dlclose publishes a new snapshot
// that reuses the arrays of the modules it already had; replaced snapshots
// and the arrays of unloaded modules are never unmapped, since a handler
// may be reading them (a program that loads and unloads many libraries keeps
// their tables until it exits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace libdump::samplers::crash_symbols {

// Reads and publishes the tables of every loaded module, reusing those of
// modules seen by an earlier call. Not async-signal-safe; one caller at a
// time (an internal mutex). False if libdwfl could not list the modules
// (the previous snapshot, if any, stays).
bool Prepare();
// Whether a snapshot was published.
bool Prepared();
// Whether modules were loaded or unloaded since the last Prepare (the
// loader's load and unload counters). Takes the loader's lock: not in a
// handler.
bool Stale();

// The demangled name (mangled when demangling failed; capped at kMaxName
// bytes) of the function containing code address addr (inside the
// instruction: a return address minus one). Empty if no module of the
// snapshot has a symbol there. Async-signal-safe, lock- and allocation-free.
std::string_view Lookup(uintptr_t addr);
inline constexpr size_t kMaxName = 1024;

// The current snapshot's size, for the cost figures and the tests.
struct Stats {
  size_t modules = 0;
  size_t symbols = 0;
  size_t bytes = 0;  // mapped for the arrays and names of those modules
};
Stats CurrentStats();

}  // namespace libdump::samplers::crash_symbols
