// Frameless leaves for the CPU attribution test (cpu_attribution_test.cc)
// and bench_pprof_attribution (bench/pprof/attribution.sh), one copy for
// both: library libdump_attribution_leaves, built with -O2
// -fomit-frame-pointer (samplers/CMakeLists.txt), as Debian's libraries and
// most release builds are. Each keeps a counter in rbp, as such code may, so
// the frame-pointer chain is broken while it runs: only the unwind rules can
// find the callers.
#include "samplers/testing/cpu_attribution_leaf.h"

#include <cstring>

// A frameless assembly leaf with its CFI (as hand-written assembly in libc
// has): it saves rbx and rbp, moves the stack pointer, and counts in rbp.
asm(R"(
  .text
  .p2align 4
  .globl libdump_attribution_asm_spin
  .type libdump_attribution_asm_spin, @function
libdump_attribution_asm_spin:
  .cfi_startproc
  push %rbp
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %rbp, 0
  push %rbx
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %rbx, 0
  sub $24, %rsp
  .cfi_adjust_cfa_offset 24
  mov %rdi, %rbp
  mov $1, %rax
  mov $0x9e3779b97f4a7c15, %rbx
1:
  imul %rbx, %rax
  add $1, %rax
  dec %rbp
  jnz 1b
  add $24, %rsp
  .cfi_adjust_cfa_offset -24
  pop %rbx
  .cfi_adjust_cfa_offset -8
  .cfi_restore %rbx
  pop %rbp
  .cfi_adjust_cfa_offset -8
  .cfi_restore %rbp
  ret
  .cfi_endproc
  .size libdump_attribution_asm_spin, .-libdump_attribution_asm_spin
)");

namespace libdump::attribution {

// Arithmetic only: no call, no frame.
__attribute__((noipa)) uint64_t LeafArith(uint64_t n, uint64_t x) {
  register uint64_t i asm("rbp") = n;
  asm volatile("" : "+r"(i));
  while (i != 0) {
    x = x * 6364136223846793005ULL + (x >> 17);
    --i;
    asm volatile("" : "+r"(i), "+r"(x));
  }
  return x;
}

// Frameless, and calling a frameless libc routine: two frames the rules
// must carry the walk through.
__attribute__((noipa)) uint64_t LeafStrlen(const char* s, int reps) {
  uint64_t total = 0;
  register int left asm("rbp") = reps;
  asm volatile("" : "+r"(left));
  while (left > 0) {
    asm volatile("" ::"r"(s) : "memory");  // strlen is pure: not hoisted
    total += std::strlen(s);
    --left;
    asm volatile("" : "+r"(left));
  }
  return total;
}

}  // namespace libdump::attribution
