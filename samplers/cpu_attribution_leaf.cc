// Leaves for cpu_attribution_test, built with -O2 -fomit-frame-pointer
// (samplers/CMakeLists.txt): functions without a frame pointer, as Debian's
// libraries and most release builds are. Each keeps a counter in rbp, as
// such code may, so the frame-pointer chain is broken while it runs: only
// the unwind rules can find the callers.
#include <cstdint>
#include <cstring>

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
