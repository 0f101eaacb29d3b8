#include "fatal.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>

namespace libdump::internal {
namespace {

void WriteAll(const char* s, size_t n) {
  while (n > 0) {
    const ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

void Fatal(const char* what, const void* addr) {
  char buf[160];
  static const char kHex[] = "0123456789abcdef";
  size_t n = 0;
  for (const char* s = "libdump: "; *s; ++s) buf[n++] = *s;
  for (const char* s = what; *s && n < 100; ++s) buf[n++] = *s;
  if (addr != nullptr) {
    for (const char* s = " at 0x"; *s; ++s) buf[n++] = *s;
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    for (int shift = 60; shift >= 0; shift -= 4) buf[n++] = kHex[(a >> shift) & 15];
  }
  buf[n++] = '\n';
  WriteAll(buf, n);
  abort();
}

}  // namespace libdump::internal
