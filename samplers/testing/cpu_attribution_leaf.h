// Frameless leaves that keep a counter in rbp (cpu_attribution_leaf.cc):
// where a CPU sample lands in one, only the unwind rules find its callers.
// For the CPU attribution test and bench_pprof_attribution.
#pragma once

#include <cstdint>

// An assembly leaf with CFI: n multiply-adds, rbp the counter.
extern "C" uint64_t libdump_attribution_asm_spin(uint64_t n);

namespace libdump::attribution {

// Built with -O2 -fomit-frame-pointer: n multiply-adds, no call, no frame.
uint64_t LeafArith(uint64_t n, uint64_t x);
// The same, calling a frameless libc routine (strlen of s, reps times): two
// frames the rules must carry the walk through.
uint64_t LeafStrlen(const char* s, int reps);

}  // namespace libdump::attribution
