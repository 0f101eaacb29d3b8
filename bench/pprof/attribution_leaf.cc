// bench_pprof_attribution's leaf, built with -O2 -fomit-frame-pointer: a
// frameless function that keeps a counter in rbp, as optimized code may.
#include <cstdint>

__attribute__((noipa)) uint64_t AttributionLeaf(uint64_t n, uint64_t x) {
  register uint64_t i asm("rbp") = n;
  asm volatile("" : "+r"(i));
  while (i != 0) {
    x = x * 6364136223846793005ULL + (x >> 17);
    --i;
    asm volatile("" : "+r"(i), "+r"(x));
  }
  return x;
}
