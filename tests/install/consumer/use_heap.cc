// libdump::heap: the allocator as a library, beside the process's malloc.
#include "libdump/heap.h"

int main() {
  void* p = libdump::Allocate(100);
  const bool ok = p != nullptr && libdump::UsableSize(p) >= 100;
  libdump::Free(p);
  return ok ? 0 : 1;
}
